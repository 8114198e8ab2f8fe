"""Random Relay programs for property tests of the passes (hypothesis).

`programs()` draws a typed IRModule whose @main takes two float32 tensors of shape (2, 3) and
computes a tensor of that shape with: smooth elementwise ops, broadcasting constants (some of
them identities such as `* 1` or `+ 0` that SimplifyExpr removes), constant subgraphs that
FoldConstant evaluates, shared subexpressions and duplicates (CSE), dead and live lets,
data-dependent `if`, tuples and projections, closures that capture variables, a global
function, a bounded recursive loop, transposes / reshapes that cancel, and same-dtype casts.
Every program terminates and is smooth almost everywhere, so gradients can be checked too.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from relay_core.ir import (
    Call,
    Constant,
    Function,
    GlobalVar,
    If,
    IRModule,
    Let,
    Tuple,
    TupleGetItem,
    Var,
    call,
    const,
    var,
)

SHAPE = (2, 3)
UNARY = ["tanh", "sigmoid", "sin", "negative", "exp"]
BINARY = ["add", "subtract", "multiply"]


class _Builder:
    def __init__(self, draw, params, allow_globals=True):
        self.draw = draw
        self.pool = list(params)  # expressions of type Tensor[(2, 3), float32] to reuse
        self.globals: dict[GlobalVar, Function] = {}
        self.allow_globals = allow_globals

    def leaf(self):
        d = self.draw
        k = d(st.integers(0, 3))
        if k == 0:
            v = d(st.floats(-1.5, 1.5, allow_nan=False, width=32))
            return Constant(np.full(SHAPE, v, np.float32))
        return d(st.sampled_from(self.pool))

    def expr(self, depth: int):
        d = self.draw
        if depth <= 0:
            return self.leaf()
        kind = d(st.integers(0, 13))
        if kind <= 2:
            e = call(d(st.sampled_from(UNARY)), self._bounded(depth - 1))
        elif kind <= 5:
            e = call(d(st.sampled_from(BINARY)), self.expr(depth - 1), self.expr(depth - 1))
        elif kind == 6:  # identities and broadcasting constants
            x = self.expr(depth - 1)
            e = d(
                st.sampled_from(
                    [
                        lambda: call("multiply", x, const(1.0)),
                        lambda: call("add", const(np.zeros(3, np.float32)), x),
                        lambda: call("subtract", x, const(0.0)),
                        lambda: call("multiply", x, const(np.full((1, 3), 0.5, np.float32))),
                        lambda: call("negative", call("negative", x)),
                        lambda: call("cast", x, dtype="float32"),
                    ]
                )
            )()
        elif kind == 7:  # a constant subgraph
            c = Constant(np.linspace(-1, 1, 6, dtype=np.float32).reshape(SHAPE))
            e = call("add", self.expr(depth - 1), call("tanh", call("multiply", c, c)))
        elif kind == 8:  # let (sometimes dead), the variable reused
            v = Var("v", None)
            val = self.expr(depth - 1)
            mark = len(self.pool)
            self.pool.append(v)
            body = self.expr(depth - 1)
            del self.pool[mark:]  # nothing that uses %v escapes its scope
            e = Let(v, val, body)
        elif kind == 9:  # data-dependent if
            a = self.expr(depth - 1)
            cond = call("greater", call("sum", a), const(0.0))
            e = If(cond, self.expr(depth - 1), call("negative", self.expr(depth - 1)))
        elif kind == 10:  # tuple and projection
            t = Tuple((self.expr(depth - 1), self.expr(depth - 1)))
            e = TupleGetItem(t, d(st.integers(0, 1)))
        elif kind == 11:  # a closure capturing something, called twice
            z = var("z", SHAPE)
            f = Var("f")
            captured = self.expr(depth - 1)
            mark = len(self.pool)
            self.pool.append(z)
            fbody = (
                call("multiply", z, call("tanh", captured))
                if d(st.booleans())
                else call("add", z, self.expr(depth - 2))
            )
            del self.pool[mark:]
            a, b = self.expr(depth - 1), self.expr(depth - 1)
            e = Let(f, Function((z,), fbody), call("add", Call(f, (a,)), Call(f, (b,))))
        elif kind == 12 and self.allow_globals:  # a global helper or a recursive loop
            e = self._global(depth)
        elif kind == 13:  # layout changes that cancel
            x = self.expr(depth - 1)
            e = d(
                st.sampled_from(
                    [
                        lambda: call("transpose", call("transpose", x, axes=(1, 0)), axes=(1, 0)),
                        lambda: call("reshape", call("reshape", x, newshape=(6,)), newshape=SHAPE),
                        lambda: call("squeeze", call("expand_dims", x, axis=0), axis=(0,)),
                    ]
                )
            )()
        else:
            e = self.expr(depth - 1)
        if d(st.integers(0, 4)) == 0:
            self.pool.append(e)  # share this node with later parts
        return e

    def _bounded(self, depth):
        # exp only of something bounded, so values stay finite
        return call("tanh", self.expr(depth))

    def _global(self, depth):
        d = self.draw
        if d(st.booleans()):
            a, b = var("a", SHAPE), var("b", SHAPE)
            g = GlobalVar(f"helper{len(self.globals)}")
            self.globals[g] = Function(
                (a, b), call("add", call("multiply", a, call("sigmoid", b)), b)
            )
            return Call(g, (self.expr(depth - 1), self.expr(depth - 1)))
        i, h, w = var("i", (), "int32"), var("h", SHAPE), var("w", SHAPE)
        g = GlobalVar(f"loop{len(self.globals)}")
        n = d(st.integers(0, 3))
        body = If(
            call("less", i, const(n, "int32")),
            Call(g, (call("add", i, const(1, "int32")), call("tanh", call("multiply", h, w)), w)),
            h,
        )
        self.globals[g] = Function((i, h, w), body)
        return Call(g, (const(0, "int32"), self.expr(depth - 1), self.expr(depth - 1)))


@st.composite
def programs(draw, max_depth: int = 4, allow_globals: bool = True):
    x, y = var("x", SHAPE), var("y", SHAPE)
    b = _Builder(draw, [x, y], allow_globals)
    body = b.expr(draw(st.integers(1, max_depth)))
    funcs = dict(b.globals)
    funcs[GlobalVar("main")] = Function((x, y), body)
    return IRModule(funcs)


def inputs(seed: int = 0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, SHAPE).astype(np.float32) for _ in range(2)]
