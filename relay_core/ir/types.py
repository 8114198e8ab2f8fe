"""Relay types.

Types are immutable values and compare by value, except the two kinds that stand for an unknown:
`TypeVar` (bound by a polymorphic function) and `IncompleteType` (a hole filled by inference)
compare by identity, as variables do.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from .dtype import check_dtype


class Type:
    """Base class of all types."""

    __slots__ = ()

    def __str__(self) -> str:
        from .printer import type_to_text

        return type_to_text(self)


# ---------------------------------------------------------------------------------------------
# Shape dimensions: an int, `Any` (unknown until run time), a named shape variable or a constant
# multiple of one.


class AnyDim:
    """A dimension unknown until run time (printed `?`)."""

    __slots__ = ()
    _inst: AnyDim | None = None

    def __new__(cls):
        if cls._inst is None:
            cls._inst = super().__new__(cls)
        return cls._inst

    def __repr__(self) -> str:
        return "Any"

    def __reduce__(self):
        return (AnyDim, ())


Any = AnyDim()  # noqa: A001 - the Relay name


@dataclass(frozen=True, slots=True)
class ShapeVar:
    """A named symbolic dimension, e.g. a batch size `n`. Equal names are the same dimension."""

    name: str
    min: int = 0
    max: int | None = None

    def __repr__(self) -> str:
        return self.name

    def __eq__(self, other) -> bool:
        return isinstance(other, ShapeVar) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("ShapeVar", self.name))


@dataclass(frozen=True, slots=True)
class ScaledDim:
    """`k` times a named dimension (k >= 2), printed `2*n`: what a reshape folding two heads into
    the batch, or a concatenation of two batches, makes of a batch `n`. Build it with `scaled`."""

    var: ShapeVar
    k: int

    def __repr__(self) -> str:
        return f"{self.k}*{self.var.name}"


def scaled(var: ShapeVar, k: int):
    """k * var as a dimension: 0, var itself, or a ScaledDim."""
    k = int(k)
    if k < 0:
        raise ValueError(f"a dimension cannot be a negative multiple: {k}*{var.name}")
    return 0 if k == 0 else var if k == 1 else ScaledDim(var, k)


def dim_monomial(d) -> tuple[int, ShapeVar | None] | None:
    """A dim as (k, var) meaning k * var (var None: the int k); None for Any."""
    if isinstance(d, int):
        return d, None
    if isinstance(d, ShapeVar):
        return 1, d
    if isinstance(d, ScaledDim):
        return d.k, d.var
    return None


Dim = int | AnyDim | ShapeVar | ScaledDim
SYMBOLIC_DIMS = (ShapeVar, ScaledDim)  # named dims (possibly times a constant)


def is_static_dim(d: Dim) -> bool:
    return isinstance(d, int)


def normalize_dim(d) -> Dim:
    if isinstance(d, (AnyDim, ShapeVar, ScaledDim)):
        return d
    if d is None:
        return Any
    if isinstance(d, str):
        k, star, name = d.partition("*")
        if star and k.strip().isdigit() and name.strip():
            return scaled(ShapeVar(name.strip()), int(k))
        return Any if d in ("?", "") else ShapeVar(d)
    try:
        v = int(d)
    except (TypeError, ValueError):
        raise TypeError(
            f"a dimension must be an int, Any, a ShapeVar or a ScaledDim, not {d!r}"
        ) from None
    if v < 0:
        raise ValueError(f"a dimension cannot be negative: {v}")
    return v


# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TensorType(Type):
    """A tensor of a fixed rank. `shape` holds ints, `Any` and `ShapeVar`s; `()` is a scalar."""

    shape: tuple
    dtype: str = "float32"

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(normalize_dim(d) for d in self.shape))
        check_dtype(self.dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    @property
    def concrete_shape(self) -> tuple[int, ...]:
        if not self.is_static:
            raise ValueError(f"shape {self.shape} is not static")
        return self.shape  # type: ignore[return-value]

    @property
    def size(self) -> int | None:
        if not self.is_static:
            return None
        n = 1
        for d in self.shape:
            n *= d
        return n


def scalar_type(dtype: str) -> TensorType:
    return TensorType((), dtype)


@dataclass(frozen=True, slots=True)
class TupleType(Type):
    fields: tuple[Type, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "fields", tuple(self.fields))


_ids = itertools.count()


@dataclass(frozen=True, slots=True, eq=False)
class TypeVar(Type):
    """A type parameter of a polymorphic function or an ADT. Compares by identity."""

    name: str
    kind: str = "Type"  # "Type" or "ShapeVar"


@dataclass(frozen=True, slots=True, eq=False)
class IncompleteType(Type):
    """An unknown type that inference fills in. Compares by identity."""

    id: int = field(default_factory=lambda: next(_ids))


@dataclass(frozen=True, slots=True)
class FuncType(Type):
    arg_types: tuple[Type, ...]
    ret_type: Type
    type_params: tuple[TypeVar, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "arg_types", tuple(self.arg_types))
        object.__setattr__(self, "type_params", tuple(self.type_params))


@dataclass(frozen=True, slots=True)
class RefType(Type):
    """The type of a mutable reference cell holding a `value`."""

    value: Type


@dataclass(frozen=True, slots=True)
class GlobalTypeVar(Type):
    """The name of an ADT, e.g. `List`. Compares by name."""

    name: str


@dataclass(frozen=True, slots=True)
class TypeCall(Type):
    """An ADT applied to type arguments, e.g. `List[Tensor[(3), float32]]`."""

    func: GlobalTypeVar
    args: tuple[Type, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "args", tuple(self.args))


@dataclass(frozen=True, slots=True, eq=False)
class TypeData:
    """An ADT definition: `type List[A] { Cons(A, List[A]), Nil }`."""

    header: GlobalTypeVar
    type_vars: tuple[TypeVar, ...]
    constructors: tuple  # tuple[Constructor, ...]


def free_type_vars(t: Type) -> list[TypeVar]:
    """TypeVars in `t` not bound by an enclosing FuncType, in first-seen order."""
    out: list[TypeVar] = []
    seen: set[int] = set()
    stack: list[tuple[Type, frozenset]] = [(t, frozenset())]
    while stack:
        ty, bound = stack.pop()
        if isinstance(ty, TypeVar):
            if ty not in bound and id(ty) not in seen:
                seen.add(id(ty))
                out.append(ty)
        elif isinstance(ty, TupleType):
            stack.extend((f, bound) for f in reversed(ty.fields))
        elif isinstance(ty, FuncType):
            b = bound | frozenset(ty.type_params)
            stack.append((ty.ret_type, b))
            stack.extend((a, b) for a in reversed(ty.arg_types))
        elif isinstance(ty, RefType):
            stack.append((ty.value, bound))
        elif isinstance(ty, TypeCall):
            stack.extend((a, bound) for a in reversed(ty.args))
    return out


def substitute_types(t: Type, subst: dict) -> Type:
    """Replace TypeVars / IncompleteTypes by `subst[var]` throughout `t`."""
    if not subst:
        return t
    if isinstance(t, (TypeVar, IncompleteType)):
        return subst.get(t, t)
    if isinstance(t, TensorType) or isinstance(t, GlobalTypeVar):
        return t
    if isinstance(t, TupleType):
        return TupleType(tuple(substitute_types(f, subst) for f in t.fields))
    if isinstance(t, FuncType):
        inner = {k: v for k, v in subst.items() if k not in t.type_params}
        return FuncType(
            tuple(substitute_types(a, inner) for a in t.arg_types),
            substitute_types(t.ret_type, inner),
            t.type_params,
        )
    if isinstance(t, RefType):
        return RefType(substitute_types(t.value, subst))
    if isinstance(t, TypeCall):
        return TypeCall(t.func, tuple(substitute_types(a, subst) for a in t.args))
    return t


def is_concrete(t: Type) -> bool:
    """True when `t` holds no IncompleteType and no TypeVar."""
    stack = [t]
    while stack:
        ty = stack.pop()
        if isinstance(ty, (IncompleteType, TypeVar)):
            return False
        if isinstance(ty, TupleType):
            stack.extend(ty.fields)
        elif isinstance(ty, FuncType):
            if ty.type_params:
                continue
            stack.extend(ty.arg_types)
            stack.append(ty.ret_type)
        elif isinstance(ty, RefType):
            stack.append(ty.value)
        elif isinstance(ty, TypeCall):
            stack.extend(ty.args)
    return True
