"""The float32 GEMM engine's tile follows the target's features: every path this CPU can run
(AVX-512 and, masked with RELAY_CPU_FEATURES=-avx512f, AVX2) compiles and agrees with the
references, for the kernels that pack operands or pad buffers for the engine (dense, matmul,
im2col / 1x1 / Winograd convolutions in both layouts, transposed convolutions)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from relay_core.backend.kernels.gemm_core import AVX2_TILE, AVX512_TILE, _tile_for, gemm_tile
from relay_core.backend.llvm_target import host

from . import helpers
from .helpers import assert_close, bias_relu_epilogue, index_epilogue, index_expected
from .test_conv import conv_case
from .test_conv_transpose import case as convt_case

rng = np.random.default_rng(15)


def _paths() -> list[str]:
    """RELAY_CPU_FEATURES values giving the tiles this CPU can run: the target as given (the
    host's own unless the environment masks features), and AVX2 masked from an AVX-512 one."""
    given = os.environ.get("RELAY_CPU_FEATURES", "")
    return [given, "-avx512f"] if "+avx512f" in host()[2].split(",") else [given]


def test_tile_follows_features():
    assert _tile_for("+avx,+avx2,+fma,-avx512f") == AVX2_TILE
    assert _tile_for("+avx,+avx2,+avx512f,+fma") == AVX512_TILE
    assert _tile_for("+avx512f,+avx512bw,-avx512vp2intersect") == AVX512_TILE
    for t in (AVX2_TILE, AVX512_TILE):
        assert t.nr == t.nv * t.width and t.nr % 8 == 0 and t.mc % t.mr == 0


def _run(op, cases, monkeypatch, feats):
    monkeypatch.setenv("RELAY_CPU_FEATURES", feats)
    tile = gemm_tile()
    assert tile == (AVX512_TILE if "+avx512f" in host()[2].split(",") else AVX2_TILE)
    km_before = helpers.KernelModule
    seen = {}

    class Recording(km_before):  # keeps the module's IR to check the microkernel's width
        def compile(self, opt: int = 3):
            seen["ir"] = str(self.llmod)
            return super().compile(opt)

    monkeypatch.setattr(helpers, "KernelModule", Recording)
    outs = helpers.run_batch(op, cases)
    fma = f"llvm.fma.v{tile.width}f32"
    assert fma in seen["ir"], f"{op}: no {fma} in the module built for {feats or 'the host'}"
    return outs


def _rand(shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("feats", _paths())
def test_dense_paths(feats, monkeypatch):
    cases, wants = [], []
    wts = (0.25, 0.125)
    for m, n, k in [(1, 40, 300), (13, 33, 70), (31, 100, 5), (64, 64, 257), (25, 8, 16)]:
        for packed in (False, True):
            x, w = _rand((m, k)), _rand((n, k))
            c = dict(
                inputs=[x, w],
                out_shape=(m, n),
                const_inputs=(1,) if packed else (),
                nthreads=1 + (m + n) % 2,
            )
            cases.append(c)
            wants.append(x @ w.T)
            cases.append(dict(c, epilogue=index_epilogue(wts)))
            wants.append(index_expected(x @ w.T, wts))
        bias = _rand((n,))
        cases.append(
            dict(
                inputs=[x, w],
                out_shape=(m, n),
                const_inputs=(1,),
                epilogue=bias_relu_epilogue(n, -1),
                extras=[bias],
                nthreads=2,
            )
        )
        wants.append(np.maximum(x @ w.T + bias, 0))
    for (c, want), y in zip(zip(cases, wants), _run("nn.dense", cases, monkeypatch, feats)):
        assert_close(y, want, rtol=1e-4, atol=1e-4 * c["inputs"][0].shape[1] ** 0.5)


@pytest.mark.parametrize("feats", _paths())
def test_batch_matmul_paths(feats, monkeypatch):
    cases, wants = [], []
    for sa, sb, packed in [((3, 13, 70), (3, 50, 70), False), ((2, 7, 33), (2, 40, 33), True)]:
        a, b_ = _rand(sa), _rand(sb)
        cases.append(
            dict(inputs=[a, b_], out_shape=(sa[0], sa[1], sb[1]), const_inputs=(1,) * packed)
        )
        wants.append(a @ np.swapaxes(b_, -1, -2))
    for want, y in zip(wants, _run("nn.batch_matmul", cases, monkeypatch, feats)):
        assert_close(y, want, rtol=1e-4, atol=1e-3)


CONV_2D = [
    # n, c, (h, w), o, k, s, p, d, g
    (1, 3, (20, 19), 40, 3, 2, 1, 1, 1),  # im2col, a stem-like convolution
    (1, 16, (8, 8), 37, 1, 1, 0, 1, 1),  # 1x1 read in place (plane a multiple of 16)
    (1, 24, (16, 16), 20, 1, 1, 0, 1, 1),  # 1x1 direct, the plane a multiple of 32
    (2, 70, (9, 7), 33, 1, 1, 0, 1, 1),  # 1x1 direct, packed by the driver
    (1, 40, (7, 7), 50, 1, 1, 0, 1, 1),  # 1x1 on few positions: conv_strips
    (1, 24, (6, 6), 70, 1, 1, 0, 1, 1),  # conv_strips, a partial strip
    (1, 24, (14, 14), 40, 3, 2, 1, 1, 1),  # conv_strips, 3x3 stride 2 (im2col into strips)
    (1, 32, (5, 5), 48, 3, 1, 1, 1, 1),  # few positions: the transposed product
    (1, 20, (13, 10), 18, 3, 1, 1, 1, 1),  # Winograd
    (1, 48, (15, 30), 64, 3, 1, 1, 1, 1),  # Winograd, several tile columns of 32
    (1, 40, (7, 7), 64, 3, 1, 1, 1, 1),  # Winograd on few tiles (transposed with AVX-512)
    (2, 16, (14, 13), 40, 3, 1, 1, 1, 1),  # Winograd, 49 tiles
    (1, 8, (11, 12), 12, 3, 1, 1, 1, 2),  # grouped
]


@pytest.mark.parametrize("feats", _paths())
@pytest.mark.parametrize("layout,klayout", [("NCHW", "OIHW"), ("NHWC", "HWIO")])
def test_conv2d_paths(feats, layout, klayout, monkeypatch):
    wts = (0.5, 0.25, 0.125, 0.0625)
    cases = []
    for k, g in enumerate(CONV_2D):
        kw = dict(layout=layout, klayout=klayout, nthreads=1 + k % 2)
        cases.append(conv_case(2, *g, **kw))
        if k % 2 == 0:
            c, want = conv_case(2, *g, epilogue=index_epilogue(wts), **kw)
            cases.append((c, index_expected(want, wts)))
    cases.append(conv_case(2, *CONV_2D[0], packed=False, layout=layout, klayout=klayout))
    outs = _run("nn.conv2d", [c for c, _ in cases], monkeypatch, feats)
    for (_c, want), y in zip(cases, outs):
        assert_close(y, want, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(want).max())))


@pytest.mark.parametrize("feats", _paths())
def test_conv2d_transpose_paths(feats, monkeypatch):
    cases = [
        convt_case(2, 1, 16, (9, 8), 24, 3, s=2, p=1),
        convt_case(2, 1, 20, (4, 8), 5, 4, s=2, p=1, packed=False),
        convt_case(2, 2, 8, (7, 7), 40, 2, s=2, layout="NHWC"),
    ]
    outs = _run("nn.conv2d_transpose", [c for c, _ in cases], monkeypatch, feats)
    for (_c, want), y in zip(cases, outs):
        assert_close(y, want, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(want).max())))
