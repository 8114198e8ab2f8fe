"""Every pass on 10,000-node programs: no recursion per node, same results."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
from relay_core import passes
from relay_core.ir import Function, If, IRModule, Let, Var, call, const, var

N = 10_000
X = np.array([0.25, -0.5], np.float32)


def _graph_chain():
    x = var("x", (2,))
    e = x
    for i in range(N):
        e = call("tanh", e) if i % 3 else call("multiply", e, const(1.0))
    return IRModule.from_expr(Function((x,), e))


def _let_chain():
    x = var("x", (2,))
    vs = [Var(f"v{i}") for i in range(N)]
    body = vs[-1]
    for i in reversed(range(N)):
        prev = x if i == 0 else vs[i - 1]
        body = Let(vs[i], call("sin", prev) if i % 2 else call("add", prev, const(0.0)), body)
    return IRModule.from_expr(Function((x,), body))


def _nested_ifs():
    x, c = var("x", (2,)), var("c", (), "bool")
    e = x
    for _ in range(N // 4):
        e = If(c, call("negative", e), call("exp", e))
    return IRModule.from_expr(Function((c, x), e))


PASSES = [
    passes.InferType(),
    passes.SimplifyInference(),
    passes.FoldConstant(),
    passes.DeadCodeElimination(),
    passes.EliminateCommonSubexpr(),
    passes.SimplifyExpr(),
    passes.ToANormalForm(),
    passes.ToGraphNormalForm(),
    passes.LambdaLift(),
    passes.Inline(),
    passes.DynamicToStatic(),
    passes.FoldScaleAxis(),
]


@pytest.mark.slow
@pytest.mark.parametrize("build", [_graph_chain, _let_chain, _nested_ifs])
def test_every_pass_on_a_large_program(build):
    mod = relay_core.infer_type(build())
    args = [np.bool_(True), X] if build is _nested_ifs else [X]
    want = relay_core.evaluate(mod, *args)
    for p in PASSES:
        out = relay_core.infer_type(p(mod))
        np.testing.assert_allclose(relay_core.evaluate(out, *args), want, rtol=1e-5, err_msg=p.name)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["first_order", "higher_order"])
def test_gradient_of_a_long_chain(mode):
    x = var("x", (2,))
    e = x
    for _ in range(3000):
        e = call("sin", e)
    mod = IRModule.from_expr(Function((x,), e))
    value, (dx,) = relay_core.evaluate(relay_core.gradient(mod, mode), X)
    v, d = X.astype(np.float64), np.ones(2)
    for _ in range(3000):
        d = d * np.cos(v)
        v = np.sin(v)
    np.testing.assert_allclose(value, v, rtol=1e-4)
    np.testing.assert_allclose(dx, d, rtol=1e-3)
