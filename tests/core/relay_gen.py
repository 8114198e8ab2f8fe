"""Random well-typed Relay programs for property tests (hypothesis).

`programs()` draws an IRModule whose @main takes one parameter of every base type and builds a
body of a drawn type out of every construct of the language: elementwise ops, an op with
attributes of every kind (`test.attrs`, see `register_test_op`), scalar and meta constants,
tuples and projections, let, if, closures (capturing), global functions (recursive), references,
lists with match (complete and partial, nested and tuple patterns), Option, prelude functions,
and shared subexpressions. Functions are fully annotated (params and return type), so printing a
typed module adds no information that the untyped one lacks.
"""

from __future__ import annotations

import dataclasses
import typing

import numpy as np
from hypothesis import strategies as st

from relay_core.ir import (
    Any,
    Call,
    Clause,
    Constant,
    Function,
    GlobalVar,
    If,
    IRModule,
    Let,
    Match,
    Op,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    ShapeVar,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    TypeCall,
    Var,
    call,
)
from relay_core.ir import dtype as dt
from relay_core.ir.prelude import prelude_module
from relay_core.ir.visitor import free_vars
from relay_core.ops import registry

SCALAR_DTYPES = ["float32", "int32", "bool", "float64", "int64", "float16", "int8", "uint8"]
TENSORS = [TensorType((), d) for d in SCALAR_DTYPES] + [
    TensorType((2, 3), "float32"),
    TensorType((3,), "int64"),
    TensorType((1, 3), "bool"),
    TensorType((Any, 3), "float32"),
    TensorType((ShapeVar("n"), 2), "float32"),
]
F32 = TensorType((), "float32")
I32 = TensorType((), "int32")
BOOL = TensorType((), "bool")
NAMES = ["x", "x", "y", "x_1", "acc", "0a", "conv1.weight", "a b", "", "_t", "%odd"]


# -- a test-only operator with attributes of every kind ---------------------------------------
@dataclasses.dataclass(frozen=True)
class TestAttrs:
    axis: int = 0
    axes: tuple[int, ...] = (1, 1)
    alpha: float = 1.0
    layout: str = "NCHW"
    flag: bool = False
    units: int | None = None
    nested: tuple = ()
    anything: typing.Any = None


TEST_OP = "test.attrs"


def register_test_op() -> None:
    """`test.attrs(x, attrs...)`: the identity, with attributes of every kind to print."""
    if TEST_OP in registry._REGISTRY:
        return
    registry.register(
        registry.OpDef(
            TEST_OP,
            type_rel=lambda args, attrs: args[0],
            ref=lambda xs, attrs: xs[0].copy(),
            attrs=TestAttrs,
            samples=lambda rng: [registry.Sample([np.ones(3, "float32")], {"axis": 1})],
        )
    )


def unregister_test_op() -> None:
    registry._REGISTRY.pop(TEST_OP, None)
    Op._table.pop(TEST_OP, None)


_floats = st.floats(allow_nan=True, allow_infinity=True, width=64)
_attr_leaf = st.one_of(
    st.integers(-(2**40), 2**40), _floats, st.text(max_size=6), st.booleans(), st.none()
)
ATTRS = st.fixed_dictionaries(
    {},
    optional={
        "axis": st.integers(-5, 5),
        "axes": st.lists(st.integers(-3, 9), max_size=4).map(tuple),
        "alpha": _floats,
        "layout": st.text(max_size=8),
        "flag": st.booleans(),
        "units": st.none() | st.integers(0, 64),
        "nested": st.lists(st.lists(st.integers(0, 3), max_size=3).map(tuple), max_size=3).map(
            tuple
        ),
        "anything": st.one_of(_attr_leaf, st.lists(_attr_leaf, max_size=3).map(tuple)),
    },
)


# -- the generator ----------------------------------------------------------------------------
def list_of(t):
    p = prelude_module(copy=False)
    return TypeCall(p.get_type("List").header, (t,))


def option_of(t):
    p = prelude_module(copy=False)
    return TypeCall(p.get_type("Option").header, (t,))


class Gen:
    def __init__(self, draw):
        self.draw = draw
        self.mod = IRModule()
        self.prelude = prelude_module(copy=False)
        self.uses_prelude = False
        self.pool: list = []  # (expression, its type): reused to make the program a DAG
        self.n_globals = 0

    def pick(self, options):
        return options[self.draw(st.integers(0, len(options) - 1))]

    def types(self, env) -> list:
        """Tensor types an expression can have here: static ones, or one a variable has."""
        have = [vt for _, vt in env]
        return [t for t in TENSORS if t.is_static or t in have]

    def var(self, t, annotate: bool = True) -> Var:
        return Var(self.pick(NAMES), t if annotate else None)

    def ctor(self, name: str):
        self.uses_prelude = True
        return self.prelude.get_constructor(name)

    # -- atoms -------------------------------------------------------------------------------
    def constant(self, t: TensorType) -> Constant:
        npd = dt.to_numpy(t.dtype)
        shape = t.shape
        if t.dtype == "bool":
            vals = st.booleans()
        elif dt.is_float(t.dtype):
            vals = st.floats(width=16 if t.dtype == "float16" else 32, allow_subnormal=True)
        else:
            info = np.iinfo(npd)
            vals = st.integers(int(info.min), int(info.max))
        size = int(np.prod(shape, dtype=np.int64))
        data = self.draw(st.lists(vals, min_size=size, max_size=size))
        return Constant(np.asarray(data, dtype=npd).reshape(shape))

    def tensor(self, t: TensorType, env, depth: int):
        e = self._tensor(t, env, depth)
        if depth > 0:
            self.pool.append((e, t))
        return e

    def _tensor(self, t: TensorType, env, depth: int):
        same = [v for v, vt in env if vt == t]
        kinds = ["var"] if same else []
        if t.is_static:
            kinds.append("const")
        if depth > 0:
            kinds += ["op", "op", "attrs", "let", "if", "tuple", "closure", "global", "ref"]
            kinds += ["match", "option", "prelude", "share"]
        kind = self.pick(kinds or ["op"])
        d = depth - 1
        if kind == "var":
            return self.pick(same)
        if kind == "const":
            return self.constant(t)
        if kind == "op" or (kind == "share" and not self._shareable(t, env)):
            return self.elementwise(t, env, d)
        if kind == "share":
            return self.pick(self._shareable(t, env))
        if kind == "attrs":
            register_test_op()
            return call(TEST_OP, self.expr(t, env, d), **self.draw(ATTRS))
        if kind == "let":
            vt = self.pick(self.types(env) + [TupleType((F32, I32))])
            v = self.var(vt, annotate=self.draw(st.booleans()))
            return Let(v, self.expr(vt, env, d), self.expr(t, env + [(v, vt)], d))
        if kind == "if":
            return If(self.cond(env, d), self.expr(t, env, d), self.expr(t, env, d))
        if kind == "tuple":
            other = self.pick(self.types(env))
            i = self.draw(st.integers(0, 1))
            fields = [self.expr(t, env, d), self.expr(other, env, d)]
            if i:
                fields.reverse()
            return TupleGetItem(Tuple(tuple(fields)), i)
        if kind == "closure":
            pts = [self.pick(self.types(env)) for _ in range(self.draw(st.integers(0, 2)))]
            params = [self.var(pt) for pt in pts]
            body = self.expr(t, env + list(zip(params, pts)), d)
            f = Function(tuple(params), body, t)
            args = tuple(self.expr(pt, env, d) for pt in pts)
            if self.draw(st.booleans()):
                fv = Var("f", None)
                return Let(fv, f, Call(fv, args))
            return Call(f, args)
        if kind == "global":
            return self.global_call(t, env, d)
        if kind == "ref":
            rv = self.var(None, annotate=False)
            r = RefCreate(self.expr(t, env, d))
            write = RefWrite(rv, self.expr(t, env, d))
            return Let(rv, r, Let(Var("_"), write, RefRead(rv)))
        if kind == "match":
            return self.list_match(t, env, d)
        if kind == "option":
            v = self.var(t)
            opt = Call(self.ctor("Some"), (self.expr(t, env, d),))
            clauses = (
                Clause(PatternConstructor(self.ctor("Some"), (PatternVar(v),)), v),
                Clause(PatternConstructor(self.ctor("None"), ()), self.expr(t, env, d)),
            )
            return Match(opt, clauses)
        # prelude: fold a list with a closure
        lst = self.list_expr(t, env, d)
        acc, x = self.var(t), self.var(t)
        f = Function((acc, x), self.elementwise(t, env + [(acc, t), (x, t)], 0), t)
        g = self.pick(["foldl", "foldr"])
        self.uses_prelude = True
        return Call(GlobalVar(g), (f, self.expr(t, env, d), lst))

    def _shareable(self, t, env):
        """Earlier expressions of type `t` whose variables are all in scope here."""
        names = {v for v, _ in env}
        return [e for e, et in self.pool[-30:] if et == t and all(v in names for v in free_vars(e))]

    def elementwise(self, t: TensorType, env, depth: int):
        d = t.dtype
        if d == "bool":
            if self.draw(st.booleans()):
                src = TensorType(t.shape, "float32")
                op = self.pick(["less", "greater_equal", "equal"])
                return call(op, self.expr(src, env, depth), self.expr(src, env, depth))
            op = self.pick(["logical_and", "logical_or", "logical_not"])
        elif dt.is_float(d):
            op = self.pick(["add", "multiply", "subtract", "negative", "exp", "maximum"])
        else:
            op = self.pick(["add", "multiply", "subtract", "abs", "copy"])
        n = registry.lookup(op).num_inputs[0]
        return call(op, *[self.expr(t, env, depth) for _ in range(n)])

    def cond(self, env, depth: int):
        if self.draw(st.booleans()):
            return self.expr(BOOL, env, depth)
        return call("less", self.expr(F32, env, depth), self.expr(F32, env, depth))

    def list_expr(self, t, env, depth: int):
        n = self.draw(st.integers(0, 2))
        lst = Call(self.ctor("Nil"), ())
        for _ in range(n):
            lst = Call(self.ctor("Cons"), (self.expr(t, env, depth), lst))
        if depth > 0 and self.draw(st.booleans()):
            self.uses_prelude = True
            return Call(GlobalVar(self.pick(["rev", "tl"]) if n else "rev"), (lst,))
        return lst

    def list_match(self, t, env, depth: int):
        lt = list_of(t)
        lst = self.list_expr(t, env, depth)
        h, rest = self.var(t), self.var(lt, False)  # %h fixes the element type
        cons, nil = self.ctor("Cons"), self.ctor("Nil")
        style = self.draw(st.integers(0, 2))
        if style == 0:
            clauses = [
                Clause(
                    PatternConstructor(cons, (PatternVar(h), PatternVar(rest))),
                    self.expr(t, env + [(h, t), (rest, lt)], depth),
                ),
                Clause(PatternConstructor(nil, ()), self.expr(t, env, depth)),
            ]
            return Match(lst, tuple(clauses))
        if style == 1:  # nested and wildcard patterns
            inner = PatternConstructor(cons, (PatternWildcard(), PatternWildcard()))
            clauses = [
                Clause(
                    PatternConstructor(cons, (PatternVar(h), inner)),
                    self.expr(t, env + [(h, t)], depth),
                ),
                Clause(PatternWildcard(), self.expr(t, env, depth)),
            ]
            return Match(lst, tuple(clauses))
        # a partial match on a tuple pattern
        a, b = self.var(t), self.var(lt)
        pair = Tuple((self.expr(t, env, depth), lst))
        clause = Clause(PatternTuple((PatternVar(a), PatternVar(b))), a)
        return Match(pair, (clause,), complete=False)

    def global_call(self, t, env, depth: int):
        """A recursive global `@gN(%i: int32, %x: T) -> T` looping three times."""
        name = f"g{self.n_globals}"
        self.n_globals += 1
        gv = GlobalVar(name)
        i, x = Var("i", I32), Var("x", t)
        step = self.expr(t, [(x, t), (i, I32)], min(depth, 2))
        loop = Call(gv, (call("add", i, Constant(np.int32(1))), step))
        body = If(call("less", i, Constant(np.int32(3))), loop, x)
        self.mod.add(gv, Function((i, x), body, t))
        return Call(gv, (Constant(np.int32(0)), self.expr(t, env, depth)))

    # -- any type ------------------------------------------------------------------------------
    def expr(self, t, env, depth: int):
        if isinstance(t, TensorType):
            return self.tensor(t, env, depth)
        if isinstance(t, TupleType):
            same = [v for v, vt in env if vt == t]
            if same and self.draw(st.booleans()):
                return self.pick(same)
            return Tuple(tuple(self.expr(f, env, depth) for f in t.fields))
        raise TypeError(t)


@st.composite
def programs(draw, depth: int = 3) -> IRModule:
    g = Gen(draw)
    params = [Var(f"p{i}", t) for i, t in enumerate(TENSORS)]
    env = list(zip(params, TENSORS))
    ret = draw(st.sampled_from(TENSORS + [TupleType((F32, TensorType((2, 3), "float32")))]))
    body = g.expr(ret, env, depth)
    mod = g.mod
    main = Function(tuple(params), body, ret)
    mod.add("main", main)
    if g.uses_prelude:
        mod.import_prelude()
    return mod
