"""Unification over Relay types with a union-find of IncompleteTypes."""

from __future__ import annotations

from ..ir.types import (
    SYMBOLIC_DIMS,
    Any,
    AnyDim,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
    substitute_types,
)


class UnifyError(Exception):
    pass


def _dim_str(shape) -> str:
    return "(" + ", ".join("?" if isinstance(d, AnyDim) else str(d) for d in shape) + ")"


class Unifier:
    def __init__(self):
        self.parent: dict[IncompleteType, Type] = {}

    def find(self, t: Type) -> Type:
        path = []
        while isinstance(t, IncompleteType) and t in self.parent:
            path.append(t)
            t = self.parent[t]
        for p in path[:-1]:
            self.parent[p] = t
        return t

    def resolve(self, t: Type) -> Type:
        """`t` with every bound IncompleteType replaced, deeply."""
        t = self.find(t)
        if isinstance(t, (TensorType, IncompleteType, TypeVar, GlobalTypeVar)):
            return t
        if isinstance(t, TupleType):
            fs = tuple(self.resolve(f) for f in t.fields)
            return t if all(a is b for a, b in zip(fs, t.fields)) else TupleType(fs)
        if isinstance(t, FuncType):
            args = tuple(self.resolve(a) for a in t.arg_types)
            return FuncType(args, self.resolve(t.ret_type), t.type_params)
        if isinstance(t, RefType):
            return RefType(self.resolve(t.value))
        if isinstance(t, TypeCall):
            return TypeCall(t.func, tuple(self.resolve(a) for a in t.args))
        return t

    def _occurs(self, v: IncompleteType, t: Type) -> bool:
        stack = [t]
        while stack:
            x = self.find(stack.pop())
            if x is v:
                return True
            if isinstance(x, TupleType):
                stack.extend(x.fields)
            elif isinstance(x, FuncType):
                stack.extend(x.arg_types)
                stack.append(x.ret_type)
            elif isinstance(x, RefType):
                stack.append(x.value)
            elif isinstance(x, TypeCall):
                stack.extend(x.args)
        return False

    def unify(self, a: Type, b: Type) -> Type:
        a, b = self.find(a), self.find(b)
        if a is b:
            return a
        if isinstance(a, IncompleteType):
            if self._occurs(a, b):
                raise UnifyError(f"recursive type: {a} occurs in {self.resolve(b)}")
            self.parent[a] = b
            return b
        if isinstance(b, IncompleteType):
            return self.unify(b, a)
        if isinstance(a, TensorType) and isinstance(b, TensorType):
            if a.dtype != b.dtype or len(a.shape) != len(b.shape):
                raise UnifyError(
                    f"Tensor[{_dim_str(a.shape)}, {a.dtype}] and "
                    f"Tensor[{_dim_str(b.shape)}, {b.dtype}] differ"
                )
            if a == b:
                return a
            dims = []
            for x, y in zip(a.shape, b.shape):
                d = unify_dim(x, y)
                if d is None:
                    raise UnifyError(
                        f"shapes {_dim_str(a.shape)} and {_dim_str(b.shape)} differ "
                        f"(dimension {x} vs {y})"
                    )
                dims.append(d)
            return TensorType(tuple(dims), a.dtype)
        if isinstance(a, TupleType) and isinstance(b, TupleType):
            if len(a.fields) != len(b.fields):
                raise UnifyError(f"tuples of {len(a.fields)} and {len(b.fields)} fields differ")
            return TupleType(tuple(self.unify(x, y) for x, y in zip(a.fields, b.fields)))
        if isinstance(a, FuncType) and isinstance(b, FuncType):
            if len(a.arg_types) != len(b.arg_types):
                raise UnifyError(
                    f"functions of {len(a.arg_types)} and {len(b.arg_types)} arguments differ"
                )
            if a.type_params and not b.type_params:  # use of a polymorphic function
                a = _instantiate(a)
            elif b.type_params and not a.type_params:
                b = _instantiate(b)
            if len(a.type_params) != len(b.type_params):
                raise UnifyError("functions with different numbers of type parameters differ")
            if b.type_params:
                b = substitute_types(b, dict(zip(b.type_params, a.type_params)))
                b = FuncType(b.arg_types, b.ret_type, a.type_params)
            args = tuple(self.unify(x, y) for x, y in zip(a.arg_types, b.arg_types))
            return FuncType(args, self.unify(a.ret_type, b.ret_type), a.type_params)
        if isinstance(a, RefType) and isinstance(b, RefType):
            return RefType(self.unify(a.value, b.value))
        if isinstance(a, TypeCall) and isinstance(b, TypeCall):
            if a.func != b.func or len(a.args) != len(b.args):
                raise UnifyError(f"{a.func.name} and {b.func.name} differ")
            return TypeCall(a.func, tuple(self.unify(x, y) for x, y in zip(a.args, b.args)))
        if isinstance(a, GlobalTypeVar) and a == b:
            return a
        raise UnifyError(f"{_kind(a)} and {_kind(b)} differ")


def _instantiate(ft: FuncType) -> FuncType:
    sub = {tp: IncompleteType() for tp in ft.type_params}
    return substitute_types(FuncType(ft.arg_types, ft.ret_type), sub)  # type: ignore[return-value]


def _kind(t: Type) -> str:
    from ..ir.printer import type_to_text

    return type_to_text(t)


def unify_dim(x, y):
    """The common dimension of two, or None if they conflict. `Any` / symbols are general."""
    if x == y:
        return x
    if isinstance(x, AnyDim) or isinstance(y, AnyDim):
        return Any
    if isinstance(x, SYMBOLIC_DIMS) and isinstance(y, SYMBOLIC_DIMS):
        return Any
    if isinstance(x, SYMBOLIC_DIMS):
        return x
    if isinstance(y, SYMBOLIC_DIMS):
        return y
    return None
