"""Compiled fused groups whose elementwise consumer a hand-written kernel runs as its epilogue,
against the reference interpreter: a depthwise convolution with bias + SiLU (an epilogue of
(image, channel) only, run over whole planes) and with a residual add (an epilogue that reads a
value per row, run per row), on the planes of EfficientNet / MobileNet; reductions over
several contiguous axes (one fused loop) and over non-adjacent ones; elementwise stages whose
trailing loops fuse in part."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
from relay_core.ir import Function, IRModule, call, const, var


def _check(mod, *xs, rtol=1e-5, atol=1e-5):
    lib = relay_core.build(mod, num_threads=2, cache=False)
    got = lib(*xs)[0]
    want = np.asarray(relay_core.evaluate(mod, *xs))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# n, c, h, k, stride
DW = [
    (2, 19, 14, 5, 1),  # flat path, 14-wide rows
    (1, 24, 7, 3, 1),  # flat path, 7-wide rows
    (2, 11, 28, 5, 1),  # flat path, 28-wide rows
    (2, 13, 14, 5, 2),  # 7-wide output rows: the channel-blocked path
    (1, 10, 28, 3, 2),  # 14-wide output rows: the row path
]


@pytest.mark.parametrize("n,c,h,k,s", DW)
@pytest.mark.parametrize("residual", [False, True])
def test_depthwise_bias_silu(n, c, h, k, s, residual):
    rng = np.random.default_rng(c)
    x = var("x", (n, c, h, h))
    w = const(rng.standard_normal((c, 1, k, k)).astype("float32") * 0.3)
    bias = const(rng.standard_normal(c).astype("float32"))
    y = call("nn.conv2d", x, w, strides=(s, s), padding=(k // 2,) * 4, groups=c)
    y = call("nn.bias_add", y, bias)
    y = call("multiply", y, call("sigmoid", y))
    params = [x]
    if residual:
        oh = (h + 2 * (k // 2) - k) // s + 1
        r = var("r", (n, c, oh, 1))  # broadcast along W: the epilogue depends on the row
        params.append(r)
        y = call("add", y, r)
    mod = relay_core.infer_type(IRModule.from_expr(Function(tuple(params), y)))
    xs = [rng.standard_normal(p.checked_type.concrete_shape).astype("float32") for p in params]
    _check(mod, *xs)


@pytest.mark.parametrize(
    "op,axes",
    [("mean", [2, 3]), ("sum", [1, 2, 3]), ("max", [1, 3]), ("sum", [0, 1]), ("min", [3])],
)
def test_reduction_axes(op, axes):
    rng = np.random.default_rng(len(axes))
    x = var("x", (3, 5, 7, 9))
    y = call(op, x, axis=axes, keepdims=True)
    mod = relay_core.infer_type(IRModule.from_expr(Function((x,), y)))
    _check(mod, rng.standard_normal((3, 5, 7, 9)).astype("float32"))


def test_elementwise_trailing_loops():
    """Elementwise stages over 7x7 planes: the trailing loops fuse where every read stays
    linear (a full-shape read, a per-channel broadcast) and not past a read broadcast along H
    or a transposed read."""
    rng = np.random.default_rng(7)
    shape = (2, 5, 7, 7)
    x, s, r = var("x", shape), var("s", (1, 5, 1, 1)), var("r", (2, 1, 7, 1))
    t = call("transpose", x, axes=[0, 1, 3, 2])
    y = call("add", call("multiply", call("sigmoid", x), s), r)
    y = call("add", y, call("multiply", t, const(np.float32(0.5))))
    mod = relay_core.infer_type(IRModule.from_expr(Function((x, s, r), y)))
    xs = [rng.standard_normal(p.checked_type.concrete_shape).astype("float32") for p in (x, s, r)]
    _check(mod, *xs)
    a, sv, rv = xs
    want = 1 / (1 + np.exp(-a)) * sv + rv + 0.5 * a.transpose(0, 1, 3, 2)
    lib = relay_core.build(mod, num_threads=1, cache=False)
    np.testing.assert_allclose(lib(*xs)[0], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["nn.softmax", "nn.log_softmax"])
@pytest.mark.parametrize("shape, axis", [((2, 3, 5, 197), -1), ((4, 9, 6), 1)])
def test_softmax_with_its_elementwise_consumers(op, shape, axis):
    # Hugging Face attention: where(isnan(softmax(s)), 0, softmax(s)) * c, one kernel; a row of
    # -inf (softmax NaN) becomes 0, log_softmax's -inf stays
    rng = np.random.default_rng(len(shape))
    xv = (rng.standard_normal(shape) * 3).astype("float32")
    xv[0, 1] = -np.inf
    x = var("x", shape)
    p = call(op, x, axis=axis)
    y = call(
        "multiply", call("where", call("isnan", p), const(np.float32(0)), p), const(np.float32(2))
    )
    mod = relay_core.infer_type(IRModule.from_expr(Function((x,), y)))
    fused = relay_core.passes.FuseOps()(relay_core.passes.optimize(mod)).astext()
    assert fused.count("Primitive=1") == 1, fused
    _check(mod, xv)


# n, c, h, o, k, stride, pad: the convolution paths that apply an epilogue per unit of rows
CONV_RESIDUAL = [
    (1, 16, 28, 24, 1, 1, 0),  # 1x1 on 28x28 (AVX-512: the in-place wide kernel)
    (2, 8, 13, 12, 1, 1, 0),  # 1x1 on 13x13, batch 2
    (1, 16, 14, 40, 3, 2, 1),  # 3x3 stride 2 to 7x7 (conv_strips)
    (1, 3, 32, 16, 7, 2, 3),  # a stem (im2col per unit)
    (1, 12, 10, 8, 3, 1, 1),  # 3x3 stride 1
]


@pytest.mark.parametrize("n,c,h,o,k,s,p", CONV_RESIDUAL)
def test_conv_bias_residual_relu(n, c, h, o, k, s, p, monkeypatch):
    """conv + bias + residual + relu with a residual of the output's shape (run over each
    channel's positions as one flattened run: Epi.flat_from), broadcast along W (per output
    row) and along H (not flat: each row's run restarts its columns)."""
    from relay_core.backend.kernels import common

    seen = []
    real = common.Epi.flat_from

    def spy(self, k_, extents):
        seen.append(real(self, k_, extents))
        return seen[-1]

    monkeypatch.setattr(common.Epi, "flat_from", spy)
    rng = np.random.default_rng(o)
    oh = (h + 2 * p - k) // s + 1
    for rshape, flat in [((n, o, oh, oh), True), ((n, o, oh, 1), False), ((1, o, 1, oh), False)]:
        seen.clear()
        x, r = var("x", (n, c, h, h)), var("r", rshape)
        w = const(rng.standard_normal((o, c, k, k)).astype("float32") * 0.3)
        bias = const(rng.standard_normal(o).astype("float32"))
        y = call("nn.conv2d", x, w, strides=(s, s), padding=(p,) * 4)
        y = call("nn.relu", call("add", call("nn.bias_add", y, bias), r))
        mod = relay_core.infer_type(IRModule.from_expr(Function((x, r), y)))
        xs = [rng.standard_normal(v.checked_type.concrete_shape).astype("float32") for v in (x, r)]
        _check(mod, *xs, rtol=1e-4, atol=1e-4)
        assert seen and seen[0] is flat, (rshape, seen)  # fused, the flat run taken or not
