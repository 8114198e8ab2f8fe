"""Golden tests for FuseOps: parse a program, fuse, compare structurally with the expected
program (also parsed), then check the fused program still computes the same values."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
from relay_core.ir.expr import Call, Function
from relay_core.ir.visitor import post_order
from relay_core.passes.fuse_ops import FuseOps

V = '#[version = "0.0.5"]\n'

CASES = {
    # conv2d anchors a group and absorbs its elementwise / broadcast consumers
    "conv_epilogue": (
        """
def @main(%x: Tensor[(1, 4, 8, 8), float32], %w: Tensor[(4, 4, 3, 3), float32],
    %b: Tensor[(4), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1]);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  add(%2, %x)
}""",
        """
def @main(%x: Tensor[(1, 4, 8, 8), float32], %w: Tensor[(4, 4, 3, 3), float32],
    %b: Tensor[(4), float32]) {
  %0 = fn (%p0: Tensor[(1, 4, 8, 8), float32], %p1: Tensor[(4, 4, 3, 3), float32],
      %p2: Tensor[(4), float32], Primitive=1) {
    %1 = nn.conv2d(%p0, %p1, padding=[1, 1]);
    %2 = nn.bias_add(%1, %p2);
    %3 = nn.relu(%2);
    add(%3, %p0)
  };
  %0(%x, %w, %b)
}""",
    ),
    # a diamond of elementwise ops is post-dominated by its join: one group
    "diamond": (
        """
def @main(%x: Tensor[(4, 8), float32]) {
  %0 = exp(%x);
  %1 = sqrt(%x);
  nn.relu(add(%0, %1))
}""",
        """
def @main(%x: Tensor[(4, 8), float32]) {
  %0 = fn (%p0: Tensor[(4, 8), float32], Primitive=1) {
    nn.relu(add(exp(%p0), sqrt(%p0)))
  };
  %0(%x)
}""",
    ),
    # elementwise producers fuse into a reduction; the reduction does not fuse forward
    "reduce": (
        """
def @main(%x: Tensor[(4, 8), float32]) {
  sqrt(sum(exp(%x), axis=[1]))
}""",
        """
def @main(%x: Tensor[(4, 8), float32]) {
  %0 = fn (%p0: Tensor[(4, 8), float32], Primitive=1) { sum(exp(%p0), axis=[1]) };
  %1 = %0(%x);
  %2 = fn (%p0: Tensor[(4), float32], Primitive=1) { sqrt(%p0) };
  %2(%1)
}""",
    ),
    # injective chains fuse (phase 1); softmax (an anchor: only what follows it fuses) stays apart
    "injective": (
        """
def @main(%x: Tensor[(4, 8), float32], %y: Tensor[(8, 4), float32]) {
  %0 = reshape(%x, newshape=[8, 4]);
  %1 = transpose(add(%0, %y), axes=[1, 0]);
  nn.softmax(%1)
}""",
        """
def @main(%x: Tensor[(4, 8), float32], %y: Tensor[(8, 4), float32]) {
  %0 = fn (%p0: Tensor[(4, 8), float32], %p1: Tensor[(8, 4), float32], Primitive=1) {
    transpose(add(reshape(%p0, newshape=[8, 4]), %p1), axes=[1, 0])
  };
  %1 = %0(%x, %y);
  %2 = fn (%p0: Tensor[(4, 8), float32], Primitive=1) { nn.softmax(%p0) };
  %2(%1)
}""",
    ),
    # a value with two consumers, one of them the result tuple, is not post-dominated
    "tuple_result": (
        """
def @main(%x: Tensor[(4), float32]) {
  %0 = nn.relu(%x);
  (%0, exp(%0))
}""",
        """
def @main(%x: Tensor[(4), float32]) {
  %0 = fn (%p0: Tensor[(4), float32], Primitive=1) { nn.relu(%p0) };
  %1 = %0(%x);
  %2 = fn (%p0: Tensor[(4), float32], Primitive=1) { exp(%p0) };
  (%1, %2(%1))
}""",
    ),
    # multi-output ops and tuple projections fuse with their consumers
    "split": (
        """
def @main(%x: Tensor[(6, 4), float32]) {
  %0 = split(%x, indices_or_sections=3);
  multiply(add(%0.0, %0.1), %0.2)
}""",
        """
def @main(%x: Tensor[(6, 4), float32]) {
  %0 = fn (%p0: Tensor[(6, 4), float32], Primitive=1) {
    %1 = split(%p0, indices_or_sections=3);
    multiply(add(%1.0, %1.1), %1.2)
  };
  %0(%x)
}""",
    ),
    # branches are fused on their own; scalar constants stay inside the groups
    "if": (
        """
def @main(%x: Tensor[(4), float32], %c: bool) {
  if (%c) { exp(multiply(%x, 2f)) } else { negative(add(%x, 1f)) }
}""",
        """
def @main(%x: Tensor[(4), float32], %c: bool) {
  if (%c) {
    %0 = fn (%p0: Tensor[(4), float32], Primitive=1) { exp(multiply(%p0, 2f)) };
    %0(%x)
  } else {
    %1 = fn (%p0: Tensor[(4), float32], Primitive=1) { negative(add(%p0, 1f)) };
    %1(%x)
  }
}""",
    ),
}


def _fused(text: str):
    return FuseOps()(relay_core.parse(V + text))


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name):
    src, want = CASES[name]
    got = _fused(src)
    expected = relay_core.infer_type(relay_core.parse(V + want))
    assert relay_core.structural_equal(got["main"], expected["main"]), (
        f"FuseOps({name}) gave\n{got}\nexpected\n{expected}"
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_fused_program_computes_the_same(name):
    src, _ = CASES[name]
    mod = relay_core.parse(V + src)
    fused = FuseOps()(mod)
    rng = np.random.default_rng(0)
    args = []
    for p in mod["main"].params:
        t = p.checked_type
        args.append(
            np.asarray(rng.standard_normal(t.shape) if t.dtype != "bool" else True).astype(t.dtype)
        )
    want = relay_core.evaluate(mod, *args)
    got = relay_core.evaluate(fused, *args)
    for w, g in zip(
        want if isinstance(want, tuple) else (want,), got if isinstance(got, tuple) else (got,)
    ):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def _groups(mod):
    return [
        n
        for n in post_order(mod["main"].body)
        if type(n) is Call and isinstance(n.op, Function) and n.op.attr("Primitive")
    ]


def test_max_depth_caps_a_group():
    src = """
def @main(%x: Tensor[(4), float32]) {
  exp(exp(exp(exp(exp(exp(%x))))))
}"""
    mod = relay_core.parse(V + src)
    assert len(_groups(FuseOps()(mod))) == 1
    capped = FuseOps(max_depth=2)(mod)
    assert len(_groups(capped)) == 3


def test_level_zero_fuses_nothing():
    src, _ = CASES["conv_epilogue"]
    mod = relay_core.parse(V + src)
    assert len(_groups(FuseOps(fuse_opt_level=0)(mod))) == 4


def test_long_chain_without_recursion():
    # 5,000 elementwise ops: iterative traversals, bounded groups
    x = relay_core.ir.var("x", (3,))
    e = x
    for _ in range(5000):
        e = relay_core.ir.call("negative", e)
    mod = relay_core.infer_type(relay_core.ir.IRModule.from_expr(Function((x,), e)))
    fused = FuseOps()(mod)
    groups = _groups(fused)
    assert len(groups) == -(-5000 // 256)


LAYER_NORM = """
def @main(%x: Tensor[(2, 6, 16), float32], %g: Tensor[(16), float32]) {
  %0 = mean(%x, axis=[-1], keepdims=True);
  %1 = subtract(%x, %0);
  %2 = mean(multiply(%1, %1), axis=[2], keepdims=True);
  %3 = multiply(%1, rsqrt(add(%2, 1e-5f)));
  add(multiply(%3, %g), %g)
}"""


def _op_names(group) -> set:
    return {
        n.op.name
        for n in post_order(group.op.body)
        if type(n) is Call and not isinstance(n.op, Function)
    }


def test_fuse_reductions_makes_a_row_normalisation_one_group():
    # TVM's phases give four groups (the reductions do not fuse forward, the subtract feeds
    # two groups); phase 3 joins them, computing the same values
    mod = relay_core.parse(V + LAYER_NORM)
    assert len(_groups(FuseOps()(mod))) == 4
    fused = FuseOps(fuse_reductions=True)(mod)
    groups = _groups(fused)
    assert len(groups) == 1 and _op_names(groups[0]) == {
        "mean",
        "subtract",
        "multiply",
        "rsqrt",
        "add",
    }
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 6, 16)).astype("float32")
    g = rng.standard_normal(16).astype("float32")
    np.testing.assert_allclose(
        relay_core.evaluate(fused, x, g), relay_core.evaluate(mod, x, g), rtol=1e-5, atol=1e-6
    )
    lib = relay_core.build(mod, cache=False)
    mu = x.mean(-1, keepdims=True)
    want = (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * g + g
    np.testing.assert_allclose(lib(x, g)[0], want, rtol=1e-5, atol=1e-5)


def test_fuse_reductions_leaves_statistics_over_a_middle_axis_apart():
    # a channel normalisation of NCHW data: its readers would recompute per element what
    # depends on the statistics; it keeps TVM's groups
    src = LAYER_NORM.replace("(2, 6, 16)", "(2, 16, 6)").replace("axis=[-1]", "axis=[1]")
    src = src.replace("axis=[2]", "axis=[1]").replace("%g), %g)", "%x), %x)")
    mod = relay_core.parse(V + src)
    assert len(_groups(FuseOps(fuse_reductions=True)(mod))) == len(_groups(FuseOps()(mod))) == 4


def test_fuse_reductions_sums_into_their_elementwise_reader():
    mod = relay_core.parse(V + CASES["reduce"][0])
    assert len(_groups(FuseOps()(mod))) == 2
    assert len(_groups(FuseOps(fuse_reductions=True)(mod))) == 1
