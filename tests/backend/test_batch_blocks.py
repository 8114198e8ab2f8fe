"""Batch-split kernels of shape-generic builds (unknown batch): convolutions, pooling and dense
on small planes get kernels for blocks of `lower.BLOCK_IMAGES` images (8 and 4) besides the
one-image kernel (whole blocks of 8, then of 4, the one-image kernel for the rest), with their
epilogues (bias, residual add read from batch-wide buffers, clip) built for each. Checked against
numpy at batch sizes below, at, and between multiples of the block sizes."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import relay_core
from relay_core.backend import lower, schedule
from relay_core.backend.derived import WINOGRAD_F23, DerivedPrepack
from relay_core.ir import Any, Function, IRModule, TensorType, Tuple, Var, call, const

K, K2 = lower.BLOCK_IMAGES
SIZES = (1, 3, K2, K2 + 2, K, K + 1, K + K2 + 1, 2 * K + 3)


def _conv_ref(x, w, stride=1, pad=0):
    """NCHW / OIHW convolution in float64."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    y = np.zeros((n, o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            win = xp[:, :, i : i + stride * oh : stride, j : j + stride * ow : stride]
            y += np.einsum("nchw,oc->nohw", win, w[:, :, i, j].astype(np.float64))
    return y


def _max_pool_ref(x, k=3, s=2, p=1):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=-np.inf)
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    y = np.full((n, c, oh, ow), -np.inf)
    for i in range(k):
        for j in range(k):
            y = np.maximum(y, xp[:, :, i : i + s * oh : s, j : j + s * ow : s])
    return y


def _model(rng):
    """A small network of batch-split ops on 7x7 and 14x14 planes; returns (module,
    reference function)."""
    f32 = lambda *s, scale=1.0: (rng.standard_normal(s) * scale).astype(np.float32)  # noqa: E731
    w1, b1 = f32(24, 16, 3, 3, scale=0.2), f32(24, 1, 1)  # 3x3 stride 1: Winograd
    w2, b2 = f32(32, 24, 1, 1, scale=0.2), f32(32, 1, 1)  # 1x1 on 7x7
    w3, b3 = f32(10, 32 * 4 * 4, scale=0.05), f32(10)  # dense after a max pool
    w4 = f32(12, 8, 3, 3, scale=0.3)  # 3x3 stride 2, 28x28 -> 14x14
    x = Var("x", TensorType((Any, 16, 7, 7), "float32"))
    r = Var("r", TensorType((Any, 24, 7, 7), "float32"))
    z = Var("z", TensorType((Any, 8, 28, 28), "float32"))
    conv = functools.partial(call, "nn.conv2d")
    y1 = conv(x, const(w1), padding=(1, 1, 1, 1), channels=24, kernel_size=(3, 3))
    y1 = call("nn.relu", call("add", call("add", y1, const(b1)), r))  # residual: batch-wide
    y2 = call("add", conv(y1, const(w2), channels=32, kernel_size=(1, 1)), const(b2))
    p = call("nn.max_pool2d", y2, pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1))
    d = call("add", call("nn.dense", call("nn.batch_flatten", p), const(w3), units=10), const(b3))
    y4 = conv(z, const(w4), strides=(2, 2), padding=(1, 1, 1, 1), channels=12, kernel_size=(3, 3))
    y4 = call("clip", y4, a_min=0.0, a_max=6.0)
    mod = IRModule.from_expr(Function((x, r, z), Tuple((d, y4))))

    def ref(xv, rv, zv):
        h1 = np.maximum(_conv_ref(xv, w1, pad=1) + b1 + rv, 0)
        h2 = _conv_ref(h1, w2) + b2
        hp = _max_pool_ref(h2)
        return hp.reshape(len(xv), -1) @ w3.T.astype(np.float64) + b3, np.clip(
            _conv_ref(zv, w4, stride=2, pad=1), 0, 6
        )

    return relay_core.infer_type(mod), ref


@pytest.mark.parametrize("nthreads", [1, 2])
def test_blocks_and_remainders_match_numpy(monkeypatch, nthreads):
    blocked = []
    calls = schedule._batch_calls

    def record(op, *a):
        blocked.append((op.call.op.name, [k for k, _, _ in op.blocks]))
        return calls(op, *a)

    monkeypatch.setattr(schedule, "_batch_calls", record)
    rng = np.random.default_rng(0)
    mod, ref = _model(rng)
    lib = relay_core.build(mod, specialize=False, cache=False, num_threads=nthreads)
    # every batch-split op here has a block kernel (else this test checks nothing new)
    assert sorted(blocked) == sorted(
        [("nn.conv2d", [K, K2])] * 3 + [("nn.max_pool2d", [K, K2]), ("nn.dense", [K, K2])]
    ), blocked
    for n in SIZES:
        xv = rng.standard_normal((n, 16, 7, 7)).astype(np.float32)
        rv = rng.standard_normal((n, 24, 7, 7)).astype(np.float32)
        zv = rng.standard_normal((n, 8, 28, 28)).astype(np.float32)
        got = lib(xv, rv, zv)
        for g, want, what in zip(got, ref(xv, rv, zv), ("dense", "strided conv")):
            assert g.shape == want.shape, (n, what)
            np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-4, err_msg=f"batch {n} {what}")


def test_no_block_for_large_planes(monkeypatch):
    """A convolution on a 56x56 plane has enough work per image: one kernel."""
    blocked = []
    calls = schedule._batch_calls
    monkeypatch.setattr(
        schedule, "_batch_calls", lambda op, *a: blocked.append(op.blocks) or calls(op, *a)
    )
    rng = np.random.default_rng(1)
    w = (rng.standard_normal((8, 4, 3, 3)) * 0.3).astype(np.float32)
    x = Var("x", TensorType((Any, 4, 56, 56), "float32"))
    y = call("nn.conv2d", x, const(w), padding=(1, 1, 1, 1), channels=8, kernel_size=(3, 3))
    mod = relay_core.infer_type(IRModule.from_expr(Function((x,), y)))
    lib = relay_core.build(mod, specialize=False, cache=False)
    assert blocked == [[]]
    xv = rng.standard_normal((3, 4, 56, 56)).astype(np.float32)
    np.testing.assert_allclose(lib(xv)[0], _conv_ref(xv, w, pad=1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("adopt", [True, False])
def test_element_kernel_takes_the_blocks_algorithm(monkeypatch, adopt):
    """One image of a 1x1 convolution on wide channels takes conv_strips by its own rule, a
    block of 8 conv_pointwise (their weight layouts differ): the one-image kernel is built again
    with the block's conv_pointwise (a new name), and the blocks are kept as they are. Where the
    one-image kernel cannot take it (adopt=False: as a Winograd form of one image that blocks do
    not take), the blocks are built again with its variant (new names); the weights are stored
    once either way."""
    if not adopt:
        monkeypatch.setattr(schedule.Scheduler, "_adopt_block_variant", lambda *a: None)
    seen = []
    emit_blocks = schedule.Scheduler._emit_blocks

    def record(self, op, epilogue_of):
        before = op.info.variant
        emit_blocks(self, op, epilogue_of)
        seen.append((before, op.info.variant, op.name, [name for _, name, _ in op.blocks]))

    monkeypatch.setattr(schedule.Scheduler, "_emit_blocks", record)
    rng = np.random.default_rng(2)
    # 324 positions, not a multiple of 16: not conv_pointwise's in-place AVX-512 kernel
    c, o, hw = 72, 64, 18
    w = (rng.standard_normal((o, c, 1, 1)) * 0.3).astype(np.float32)
    x = Var("x", TensorType((Any, c, hw, hw), "float32"))
    y = call("nn.conv2d", x, const(w), channels=o, kernel_size=(1, 1))
    mod = relay_core.infer_type(IRModule.from_expr(Function((x,), call("nn.relu", y))))
    monkeypatch.setattr(lower, "BLOCK_MAX_POSITIONS", hw * hw)
    lib = relay_core.build(mod, specialize=False, cache=False)
    assert len(seen) == 1, seen
    before, after, name, blocks = seen[0]
    assert before == ("strips",), seen
    if adopt:
        assert after == ("pointwise",) and name.endswith("w"), seen
        assert len(blocks) == 2 and not any(n.endswith("v") for n in blocks), seen
        assert blocks[0].endswith("p"), seen  # the probe is the block of 8: emitted once
    else:
        assert after == ("strips",) and not name.endswith("w"), seen
        assert len(blocks) == 2 and all(n.endswith("v") for n in blocks), seen
    for n in (3, K2, K, K + K2 + 1):
        xv = rng.standard_normal((n, c, hw, hw)).astype(np.float32)
        want = np.maximum(_conv_ref(xv, w), 0)
        np.testing.assert_allclose(lib(xv)[0], want, rtol=1e-4, atol=1e-4, err_msg=f"batch {n}")


def test_element_kernel_takes_the_blocks_winograd(monkeypatch):
    """One image of a 192-channel 3x3 convolution on 7x7 is refused by Winograd's rule for few
    positions against large weights (on AVX-512 targets, forced here) and a block of 8 is not:
    the one-image kernel is built again with the block's Winograd, so the blocks keep it."""
    from relay_core.backend.kernels import conv_winograd

    monkeypatch.setattr(conv_winograd, "vector_width", lambda: 16)
    seen = []
    emit_blocks = schedule.Scheduler._emit_blocks

    def record(self, op, epilogue_of):
        before = op.info.variant
        emit_blocks(self, op, epilogue_of)
        seen.append((before, op.info.variant, [name for _, name, _ in op.blocks]))

    monkeypatch.setattr(schedule.Scheduler, "_emit_blocks", record)
    rng = np.random.default_rng(3)
    c = o = 192
    w = (rng.standard_normal((o, c, 3, 3)) * 0.05).astype(np.float32)
    x = Var("x", TensorType((Any, c, 7, 7), "float32"))
    y = call("nn.conv2d", x, const(w), padding=(1,) * 4, channels=o, kernel_size=(3, 3))
    mod = relay_core.infer_type(IRModule.from_expr(Function((x,), call("nn.relu", y))))
    lib = relay_core.build(mod, specialize=False, cache=False)
    assert len(seen) == 1, seen
    before, after, blocks = seen[0]
    assert before == ("strips",) and after[0] == "winograd", seen
    assert len(blocks) == 2 and not any(n.endswith("v") for n in blocks), seen
    assert blocks[0].endswith("p"), seen
    for n in (1, 3, K2, K + 1):
        xv = rng.standard_normal((n, c, 7, 7)).astype(np.float32)
        want = np.maximum(_conv_ref(xv, w, pad=1), 0)
        np.testing.assert_allclose(lib(xv)[0], want, rtol=1e-4, atol=1e-4, err_msg=f"batch {n}")


def _closure(scale, panel):
    def pack(w):
        return (w * scale).reshape(-1, panel)

    return pack


def test_same_transform():
    """Block kernels share the one-image kernel's prepacked constants only when the two
    transforms are known to be the same."""
    same = schedule.same_transform
    assert same(_closure(2, 4), _closure(2, 4))
    assert not same(_closure(2, 4), _closure(2, 8))
    assert same(_closure(np.int64(2), 4), _closure(np.int64(2), 4))
    assert not same(_closure(np.int64(2), 4), _closure(2, 4))  # another type: unsure
    assert not same(_closure(2, 4), lambda w: (w * 2).reshape(-1, 4))  # other code
    wrap = lambda f, ax: lambda w: f(w.transpose(ax))  # noqa: E731
    assert same(wrap(_closure(1, 4), (1, 0)), wrap(_closure(1, 4), (1, 0)))
    assert not same(wrap(_closure(1, 4), (1, 0)), wrap(_closure(1, 4), (0, 1)))
    arr = np.zeros(3)
    assert not same(_closure(arr, 4), _closure(arr.copy(), 4))  # unknown values: unsure
    d = lambda params: DerivedPrepack(_closure(1, 4), WINOGRAD_F23, params, (16,))  # noqa: E731
    assert same(d((0, 6, 8, 8)), d((0, 6, 8, 8)))
    assert not same(d((0, 6, 8, 8)), d((1, 16, 8, 8)))
