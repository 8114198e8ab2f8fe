"""Structural equality and hashing modulo alpha-renaming. Iterative; no recursion per node.

Bound variables (function params, let vars, pattern vars) and type parameters are equal when they
are bound at corresponding places. Free variables compare by identity unless
`map_free_vars=True`. Sharing is not significant: a DAG equals its tree unfolding.
`structural_hash` is stable across processes (blake2b), so it can key on-disk caches.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import struct

import numpy as np

from .expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    TupleGetItem,
    Var,
)
from .module import IRModule
from .types import (
    AnyDim,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    ScaledDim,
    ShapeVar,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
    TypeVar,
)
from .visitor import ExprFunctor, ExprVisitor, binders, children


class _Eq(ExprFunctor):
    def __init__(self, map_free_vars: bool):
        self.map_free = map_free_vars
        self.vmap: dict[Var, Var] = {}
        self.rvmap: dict[Var, Var] = {}
        self.tmap: dict[Type, Type] = {}
        self.done: set[tuple[int, int]] = set()

    # -- types ---------------------------------------------------------------------------------
    def type_eq(self, a: Type | None, b: Type | None) -> bool:
        stack = [(a, b)]
        while stack:
            x, y = stack.pop()
            if x is y:
                continue
            if x is None or y is None or type(x) is not type(y):
                return False
            if isinstance(x, (TypeVar, IncompleteType)):
                if self.tmap.get(x) is y:
                    continue
                if x in self.tmap or y in self.tmap.values():
                    return False
                if isinstance(x, TypeVar) and x.kind != y.kind:
                    return False
                if not self.map_free and isinstance(x, TypeVar):
                    return False
                self.tmap[x] = y
            elif isinstance(x, TensorType):
                if x != y:
                    return False
            elif isinstance(x, TupleType):
                if len(x.fields) != len(y.fields):
                    return False
                stack.extend(zip(x.fields, y.fields))
            elif isinstance(x, FuncType):
                if len(x.arg_types) != len(y.arg_types) or len(x.type_params) != len(y.type_params):
                    return False
                if not self.bind_tvars(x.type_params, y.type_params):
                    return False
                stack.extend(zip(x.arg_types, y.arg_types))
                stack.append((x.ret_type, y.ret_type))
            elif isinstance(x, RefType):
                stack.append((x.value, y.value))
            elif isinstance(x, TypeCall):
                if x.func != y.func or len(x.args) != len(y.args):
                    return False
                stack.extend(zip(x.args, y.args))
            elif x != y:
                return False
        return True

    def bind_tvars(self, xs, ys) -> bool:
        if len(xs) != len(ys):
            return False
        for x, y in zip(xs, ys):
            if x in self.tmap:
                if self.tmap[x] is not y:
                    return False
            else:
                self.tmap[x] = y
        return True

    # -- vars ----------------------------------------------------------------------------------
    def bind(self, a: Var, b: Var, site: bool = False) -> bool:
        """Map `a` to `b`. At a binding site the newest binding wins, so that a binder shared
        in a DAG (one closure used twice) equals its tree unfolding (two copies)."""
        if self.vmap.get(a) is b:
            return True
        if site:
            old = self.vmap.pop(a, None)
            if old is not None:
                del self.rvmap[old]
            old = self.rvmap.pop(b, None)
            if old is not None:
                del self.vmap[old]
        elif a in self.vmap or b in self.rvmap:
            return False
        if not self.type_eq(a.type_annotation, b.type_annotation):
            return False
        self.vmap[a] = b
        self.rvmap[b] = a
        return True

    def pattern_eq(self, p: Pattern, q: Pattern) -> bool:
        stack = [(p, q)]
        while stack:
            x, y = stack.pop()
            if type(x) is not type(y):
                return False
            if isinstance(x, PatternVar):
                if not self.bind(x.var, y.var, site=True):
                    return False
            elif isinstance(x, PatternConstructor):
                if not ctor_eq(x.constructor, y.constructor) or len(x.patterns) != len(y.patterns):
                    return False
                stack.extend(zip(x.patterns, y.patterns))
            elif isinstance(x, PatternTuple):
                if len(x.patterns) != len(y.patterns):
                    return False
                stack.extend(zip(x.patterns, y.patterns))
        return True

    # -- expressions ---------------------------------------------------------------------------
    def expr_eq(self, a: Expr, b: Expr) -> bool:
        """The pairwise walk: an explicit stack of (lhs, rhs) pairs; `visit_<kind>(x, y,
        stack)` compares one pair's own fields and pushes its children's pairs."""
        stack = [(a, b)]
        done = self.done
        table = self._table
        while stack:
            x, y = stack.pop()
            t = type(x)
            if x is y and t is not Var and t is not Function:
                continue
            key = (id(x), id(y))
            if key in done:
                continue
            done.add(key)
            if t is not type(y):
                return False
            if not table[t](self, x, y, stack):
                return False
        return True

    def visit_var(self, x: Var, y: Var, stack) -> bool:
        if x in self.vmap:
            return self.vmap[x] is y
        if self.map_free:
            return self.bind(x, y)
        return x is y

    def visit_constant(self, x, y, stack) -> bool:
        return const_eq(x.data, y.data)

    def visit_op(self, x, y, stack) -> bool:
        return x is y

    def visit_global_var(self, x, y, stack) -> bool:
        return x.name_hint == y.name_hint

    def visit_constructor(self, x, y, stack) -> bool:
        return ctor_eq(x, y)

    def visit_call(self, x: Call, y: Call, stack) -> bool:
        if len(x.args) != len(y.args) or not attrs_eq(x.attrs, y.attrs):
            return False
        stack.append((x.op, y.op))
        stack.extend(zip(x.args, y.args))
        return True

    def visit_function(self, x: Function, y: Function, stack) -> bool:
        if len(x.params) != len(y.params):
            return False
        if not self.bind_tvars(x.type_params, y.type_params):
            return False
        for p, q in zip(x.params, y.params):
            if not self.bind(p, q, site=True):
                return False
        if not self.type_eq(x.ret_type, y.ret_type):
            return False
        if not attrs_eq(x.attrs or None, y.attrs or None):
            return False
        stack.append((x.body, y.body))
        return True

    def visit_let(self, x: Let, y: Let, stack) -> bool:
        if not self.bind(x.var, y.var, site=True):
            return False
        stack.append((x.body, y.body))
        stack.append((x.value, y.value))
        return True

    def visit_match(self, x: Match, y: Match, stack) -> bool:
        if x.complete != y.complete or len(x.clauses) != len(y.clauses):
            return False
        for c, d in zip(x.clauses, y.clauses):
            if not self.pattern_eq(c.lhs, d.lhs):
                return False
            stack.append((c.rhs, d.rhs))
        stack.append((x.data, y.data))
        return True

    def visit_tuple_getitem(self, x: TupleGetItem, y: TupleGetItem, stack) -> bool:
        if x.index != y.index:
            return False
        stack.append((x.tuple_value, y.tuple_value))
        return True

    def visit_default(self, x, y, stack) -> bool:  # Tuple, If, RefCreate, RefRead, RefWrite
        cx, cy = children(x), children(y)
        if len(cx) != len(cy):
            return False
        stack.extend(zip(cx, cy))
        return True

    visit_tuple = visit_if = visit_ref_create = visit_ref_read = visit_ref_write = visit_default


def ctor_eq(a: Constructor, b: Constructor) -> bool:
    return a.name == b.name and a.belong_to == b.belong_to and a.tag == b.tag


def const_eq(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype == object:
        return bool(np.all(a == b))
    return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def _val_eq(x, y) -> bool:
    if isinstance(x, float) and isinstance(y, float):
        return x == y or (math.isnan(x) and math.isnan(y))
    if isinstance(x, (tuple, list)) and isinstance(y, (tuple, list)):
        return len(x) == len(y) and all(_val_eq(a, b) for a, b in zip(x, y))
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and const_eq(x, y)
    return type(x) is type(y) and x == y


def attrs_eq(a, b) -> bool:
    if a is b:
        return True
    if a is None or b is None:
        return False
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_val_eq(a[k], b[k]) for k in a)
    if type(a) is not type(b):
        return False
    if dataclasses.is_dataclass(a):
        return all(_val_eq(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    return a == b


def _type_def_eq(e: _Eq, a: TypeData, b: TypeData) -> bool:
    if a.header != b.header or not e.bind_tvars(a.type_vars, b.type_vars):
        return False
    if len(a.constructors) != len(b.constructors):
        return False
    for c, d in zip(a.constructors, b.constructors):
        if not ctor_eq(c, d) or len(c.inputs) != len(d.inputs):
            return False
        if not all(e.type_eq(x, y) for x, y in zip(c.inputs, d.inputs)):
            return False
    return True


def structural_equal(lhs, rhs, map_free_vars: bool = False) -> bool:
    """Alpha-equivalence of two expressions, types, patterns or modules."""
    e = _Eq(map_free_vars)
    if isinstance(lhs, IRModule) and isinstance(rhs, IRModule):
        if set(lhs.functions) != set(rhs.functions):
            return False
        if set(lhs.type_definitions) != set(rhs.type_definitions):
            return False
        for k, td in lhs.type_definitions.items():
            if not _type_def_eq(e, td, rhs.type_definitions[k]):
                return False
        return all(
            _Eq(map_free_vars).expr_eq(f, rhs.functions[g]) for g, f in lhs.functions.items()
        )
    if isinstance(lhs, Type) and isinstance(rhs, Type):
        e.map_free = True if map_free_vars else e.map_free
        return e.type_eq(lhs, rhs)
    if isinstance(lhs, Pattern) and isinstance(rhs, Pattern):
        return e.pattern_eq(lhs, rhs)
    if isinstance(lhs, Expr) and isinstance(rhs, Expr):
        return e.expr_eq(lhs, rhs)
    return False


def assert_structural_equal(lhs, rhs, map_free_vars: bool = False) -> None:
    if not structural_equal(lhs, rhs, map_free_vars):
        raise AssertionError(
            "not structurally equal:\n--- lhs ---\n" + str(lhs) + "\n--- rhs ---\n" + str(rhs)
        )


# ---------------------------------------------------------------------------------------------
# Hashing.


class _Hasher(ExprVisitor):
    def __init__(self):
        super().__init__()
        self.var_index: dict[Var, int] = {}

    @staticmethod
    def h(*parts) -> bytes:
        m = hashlib.blake2b(digest_size=16)
        for p in parts:
            if isinstance(p, bytes):
                m.update(p)
            else:
                m.update(repr(p).encode())
            m.update(b"\x00")
        return m.digest()

    def var_h(self, v: Var) -> bytes:
        # A bound var hashes by its position at its binder (context-free, alpha-invariant),
        # so a shared closure and its unfolded copies hash alike; a free var as "free".
        idx = self.var_index.get(v)
        return self.h("var", "free" if idx is None else idx, self.type_h(v.type_annotation))

    def bind(self, vs) -> None:
        for i, v in enumerate(vs):
            self.var_index.setdefault(v, i)

    def type_h(self, t: Type | None) -> bytes:
        if t is None:
            return b"none"
        if isinstance(t, TensorType):
            dims = tuple(
                "?"
                if isinstance(d, AnyDim)
                else f"${d.name}"
                if isinstance(d, ShapeVar)
                else f"{d.k}*${d.var.name}"
                if isinstance(d, ScaledDim)
                else d
                for d in t.shape
            )
            return self.h("T", dims, t.dtype)
        if isinstance(t, (TypeVar, IncompleteType)):
            return self.h("tv", getattr(t, "kind", "?"))  # context-free, like bound vars
        if isinstance(t, TupleType):
            return self.h("tup", *(self.type_h(f) for f in t.fields))
        if isinstance(t, FuncType):
            return self.h(
                "fn", *(self.type_h(a) for a in t.arg_types), b"->", self.type_h(t.ret_type)
            )
        if isinstance(t, RefType):
            return self.h("ref", self.type_h(t.value))
        if isinstance(t, GlobalTypeVar):
            return self.h("gtv", t.name)
        if isinstance(t, TypeCall):
            return self.h("tc", t.func.name, *(self.type_h(a) for a in t.args))
        return self.h("type", repr(t))

    def pattern_h(self, p: Pattern) -> bytes:
        if isinstance(p, PatternWildcard):
            return b"_"
        if isinstance(p, PatternVar):
            return self.h("pv", self.var_h(p.var))  # bound by the enclosing Match
        if isinstance(p, PatternConstructor):
            return self.h("pc", p.constructor.name, *(self.pattern_h(q) for q in p.patterns))
        if isinstance(p, PatternTuple):
            return self.h("pt", *(self.pattern_h(q) for q in p.patterns))
        return b"?"

    def expr_h(self, root: Expr) -> bytes:
        return self.visit(root)

    def children(self, e: Expr):
        for group in binders(e):  # number binders before the body is hashed (pre-order)
            self.bind(group)
        return children(e)

    def visit_var(self, e: Var) -> bytes:
        return self.var_h(e)

    def visit_constant(self, e: Constant) -> bytes:
        d = e.data
        return self.h("const", str(d.dtype), d.shape, constant_digest(d))

    def visit_op(self, e: Op) -> bytes:
        return self.h("op", e.name)

    def visit_global_var(self, e: GlobalVar) -> bytes:
        return self.h("gv", e.name_hint)

    def visit_constructor(self, e: Constructor) -> bytes:
        return self.h("ctor", e.belong_to.name if e.belong_to else "", e.name, e.tag)

    def visit_call(self, e: Call) -> bytes:
        m = self.memo
        return self.h("call", m[e.op], *(m[a] for a in e.args), _attrs_repr(e.attrs))

    def visit_function(self, e: Function) -> bytes:
        return self.h(
            "fn",
            *(self.var_h(p) for p in e.params),
            self.type_h(e.ret_type),
            self.memo[e.body],
            _attrs_repr(e.attrs),
        )

    def visit_let(self, e: Let) -> bytes:
        m = self.memo
        return self.h("let", self.var_h(e.var), m[e.value], m[e.body])

    def visit_match(self, e: Match) -> bytes:
        m = self.memo
        parts = [m[e.data], e.complete]
        for c in e.clauses:
            parts += [self.pattern_h(c.lhs), m[c.rhs]]
        return self.h("match", *parts)

    def visit_tuple_getitem(self, e: TupleGetItem) -> bytes:
        return self.h("tgi", e.index, self.memo[e.tuple_value])

    def _plain(name: str):
        def visit(self, e) -> bytes:
            return self.h(name, *(self.memo[c] for c in children(e)))

        return visit

    visit_tuple = _plain("tuple")
    visit_if = _plain("if")
    visit_ref_create = _plain("rc")
    visit_ref_read = _plain("rr")
    visit_ref_write = _plain("rw")
    del _plain


# The digests of arrays that cannot change, by id (the weak reference tells a live array from
# a later one at the same address): a model's weights are hashed once per process, and not at
# all when they come from the conversion cache, which stores each digest beside the bytes.
_DIGESTS: dict[int, tuple] = {}


def constant_digest(data: np.ndarray) -> bytes:
    """The blake2b digest of an array's bytes (C order; an object array: its values' repr),
    remembered for arrays that cannot change: read-only ones that own their memory (a
    Constant's own copy) and those registered with `remember_digest`."""
    known = _DIGESTS.get(id(data))
    if known is not None and known[0]() is data:
        return known[1]
    if data.dtype == object:
        return hashlib.blake2b(repr(data.tolist()).encode()).digest()
    d = np.ascontiguousarray(data)
    digest = hashlib.blake2b(d.reshape(-1).view(np.uint8) if d.size else b"").digest()
    if not data.flags.writeable and data.base is None:
        remember_digest(data, digest)
    return digest


def remember_digest(data: np.ndarray, digest: bytes) -> None:
    """Record `digest` as `constant_digest(data)` without reading the bytes. The caller vouches
    that the digest is right and that the memory cannot change (a read-only file mapping)."""
    import weakref

    key = id(data)
    try:
        ref = weakref.ref(data, lambda _r, k=key: _forget(k, _r))
    except TypeError:
        return
    _DIGESTS[key] = (ref, digest)


def _forget(key: int, ref) -> None:
    known = _DIGESTS.get(key)
    if known is not None and known[0] is ref:
        del _DIGESTS[key]


def _attrs_repr(a) -> str:
    if a is None:
        return "-"
    if isinstance(a, dict):
        return repr(sorted((k, repr(v)) for k, v in a.items()))
    if dataclasses.is_dataclass(a):
        return type(a).__name__ + repr(
            [(f.name, _val_repr(getattr(a, f.name))) for f in dataclasses.fields(a)]
        )
    return repr(a)


def _val_repr(v) -> str:
    if isinstance(v, float):
        return struct.pack("<d", v).hex()
    if isinstance(v, np.ndarray):
        return hashlib.blake2b(np.ascontiguousarray(v).tobytes()).hexdigest()
    return repr(v)


def structural_hash(x) -> int:
    """A 64-bit hash, equal for structurally equal inputs and stable across processes."""
    hs = _Hasher()
    if isinstance(x, IRModule):
        parts = []
        for gv in sorted(x.functions, key=lambda g: g.name_hint):
            parts += [gv.name_hint, hs.expr_h(x.functions[gv])]
        for g in sorted(x.type_definitions, key=lambda g: g.name):
            td = x.type_definitions[g]
            parts += [g.name] + [
                hs.h(c.name, *(hs.type_h(i) for i in c.inputs)) for c in td.constructors
            ]
        d = hs.h("module", *parts)
    elif isinstance(x, Type):
        d = hs.type_h(x)
    elif isinstance(x, Expr):
        d = hs.expr_h(x)
    else:
        raise TypeError(f"cannot hash {type(x).__name__}")
    return int.from_bytes(d[:8], "little")
