"""nn.conv1d / conv2d / conv3d kernels against torch (float64 reference)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from .helpers import assert_close, bias_relu_epilogue, index_epilogue, index_expected, run_batch

rng = np.random.default_rng(2)
SP = {1: "W", 2: "HW", 3: "DHW"}


def ref_conv(x, w, strides, dil, pb, pe, groups):
    """Canonical (N, C, *sp) x (O, I, *k) convolution in float64 with asymmetric padding."""
    nd = x.ndim - 2
    xt = torch.from_numpy(x.astype(np.float64))
    pad = []
    for a in reversed(range(nd)):
        pad += [pb[a], pe[a]]
    xt = F.pad(xt, pad)
    f = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]
    return f(
        xt, torch.from_numpy(w.astype(np.float64)), stride=strides, dilation=dil, groups=groups
    ).numpy()


def to_layout(a, canon: str, layout: str):
    return np.ascontiguousarray(a.transpose([canon.index(c) for c in layout]))


def conv_case(
    nd,
    n,
    c,
    sp,
    o,
    k,
    s=1,
    p=0,
    d=1,
    g=1,
    layout=None,
    klayout=None,
    packed=True,
    nthreads=1,
    dtype="float32",
    epilogue=None,
    pads=None,
):
    """A run_batch case and its expected output."""
    x = rng.standard_normal((n, c, *sp)).astype(dtype)
    ks = k if isinstance(k, tuple) else (k,) * nd
    w = rng.standard_normal((o, c // g, *ks)).astype(dtype)
    if np.dtype(dtype).kind in "iu":
        x = rng.integers(0, 50, x.shape).astype(dtype)
        w = rng.integers(-50, 50, w.shape).astype("int8")
    pp = p if isinstance(p, tuple) else (p,) * nd
    pb, pe = pads if pads else (pp, pp)
    want = ref_conv(x, w, (s,) * nd, (d,) * nd, pb, pe, g)
    dl = layout or "NC" + SP[nd]
    kl = klayout or "OI" + SP[nd]
    attrs = dict(
        strides=(s,) * nd,
        padding=tuple(pb) + tuple(pe),
        dilation=(d,) * nd,
        groups=g,
        data_layout=dl,
        kernel_layout=kl,
    )
    canon_d, canon_k = "NC" + SP[nd], "OI" + SP[nd]
    want_l = to_layout(want, canon_d, dl)
    case = dict(
        inputs=[to_layout(x, canon_d, dl), to_layout(w, canon_k, kl)],
        out_shape=want_l.shape,
        attrs=attrs,
        const_inputs=(1,) if packed else (),
        nthreads=nthreads,
        epilogue=epilogue,
    )
    if np.dtype(dtype).kind in "iu":
        case["out_dtype"] = "int32"
        case["attrs"]["out_dtype"] = "int32"
    return case, want_l


def _check(cases, op, tol=1e-4):
    outs = run_batch(op, [c for c, _ in cases])
    for (_c, want), y in zip(cases, outs):
        scale = max(1.0, float(np.abs(want).max()))
        assert_close(
            y, want.astype(y.dtype) if y.dtype.kind in "iu" else want, rtol=tol, atol=tol * scale
        )


GEOMS_2D = [
    # n, c, (h, w), o, k, s, p, d, g
    (1, 3, (7, 6), 5, 3, 1, 1, 1, 1),
    (2, 4, (9, 9), 6, 3, 2, 1, 1, 2),
    (1, 8, (10, 11), 17, 1, 1, 0, 1, 1),
    (1, 16, (16, 16), 16, 1, 1, 0, 1, 1),
    (1, 16, (8, 8), 32, 1, 2, 0, 1, 1),
    (1, 5, (1, 1), 7, 1, 1, 0, 1, 1),
    # 1x1 planes: dense layers (heads after global pooling), also strided and over batches
    (8, 96, (1, 1), 40, 1, 1, 0, 1, 1),
    (3, 64, (1, 1), 33, 1, 2, 0, 1, 1),
    (1, 4, (1, 1), 5, 1, 3, 1, 1, 1),  # padded: the one output reads padding, not a dense layer
    (1, 6, (9, 9), 12, 3, 1, 2, 2, 3),
    (2, 7, (13, 5), 9, 5, 3, 2, 1, 1),
    (1, 20, (17, 17), 33, 3, 1, 1, 1, 1),
    (1, 3, (30, 30), 8, 7, 2, 3, 1, 1),
    (1, 64, (20, 20), 64, 3, 1, 1, 1, 1),
    (2, 24, (7, 7), 40, 3, 1, 1, 1, 1),  # few positions: the transposed GEMM
    (1, 32, (3, 3), 48, 1, 1, 0, 1, 2),
]
DEPTHWISE_2D = [
    (1, 5, (8, 8), 5, 3, 2, 1, 1, 5),
    (2, 8, (7, 9), 16, 3, 1, 1, 1, 8),
    (1, 6, (11, 11), 6, 5, 1, 4, 2, 6),
    (1, 32, (14, 14), 32, 3, 2, 1, 1, 32),
    (1, 32, (40, 40), 32, 3, 1, 1, 1, 32),
]


@pytest.mark.parametrize(
    "layout,klayout", [("NCHW", "OIHW"), ("NHWC", "HWIO"), ("NCHW", "HWIO"), ("NHWC", "OHWI")]
)
@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_conv2d(layout, klayout, packed, nthreads):
    cases = [
        conv_case(2, *g, layout=layout, klayout=klayout, packed=packed, nthreads=nthreads)
        for g in GEOMS_2D + DEPTHWISE_2D
    ]
    _check(cases, "nn.conv2d")


def test_conv2d_asymmetric_padding():
    cases = [
        conv_case(2, 1, 4, (9, 8), 6, 3, pads=((0, 2), (1, 0)), layout=lay, klayout=kl)
        for lay, kl in (("NCHW", "OIHW"), ("NHWC", "HWIO"))
    ]
    cases += [
        conv_case(2, 1, 4, (9, 8), 4, 3, g=4, pads=((2, 1), (0, 1)), layout=lay, klayout=kl)
        for lay, kl in (("NCHW", "OIHW"), ("NHWC", "HWIO"))
    ]
    _check(cases, "nn.conv2d")


def test_conv2d_same_upper():
    x = rng.standard_normal((1, 3, 9, 8)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    # SAME_UPPER, stride 2: out = ceil(in / 2); total pad = (out-1)*2 + 3 - in, extra at the end
    want = ref_conv(x, w, (2, 2), (1, 1), (1, 0), (1, 1), 1)
    case = dict(
        inputs=[x, w],
        out_shape=want.shape,
        const_inputs=(1,),
        attrs=dict(strides=(2, 2), auto_pad="SAME_UPPER"),
    )
    (y,) = run_batch("nn.conv2d", [case])
    assert_close(y, want)


@pytest.mark.parametrize("layout,klayout", [("NCHW", "OIHW"), ("NHWC", "HWIO")])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_conv2d_index_epilogue(layout, klayout, nthreads):
    wts = (0.5, 0.25, 0.125, 0.0625)
    cases = [
        conv_case(
            2, *g, layout=layout, klayout=klayout, nthreads=nthreads, epilogue=index_epilogue(wts)
        )
        for g in GEOMS_2D + DEPTHWISE_2D
    ]
    cases = [(c, index_expected(want, wts)) for c, want in cases]
    _check(cases, "nn.conv2d")


@pytest.mark.parametrize("layout,klayout,axis", [("NCHW", "OIHW", 1), ("NHWC", "HWIO", -1)])
def test_conv2d_bias_relu_epilogue(layout, klayout, axis):
    cases = []
    for g in [GEOMS_2D[0], GEOMS_2D[8], GEOMS_2D[10], DEPTHWISE_2D[1]]:
        o = g[3]
        c, want = conv_case(
            2, *g, layout=layout, klayout=klayout, nthreads=2, epilogue=bias_relu_epilogue(o, axis)
        )
        bias = rng.standard_normal(o).astype(np.float32)
        c["extras"] = [bias]
        shape = [1] * want.ndim
        shape[axis] = o
        cases.append((c, np.maximum(want + bias.reshape(shape), 0)))
    _check(cases, "nn.conv2d")


@pytest.mark.parametrize("layout,klayout", [("NCW", "OIW"), ("NWC", "WIO")])
@pytest.mark.parametrize("packed", [True, False])
def test_conv1d(layout, klayout, packed):
    geoms = [
        (1, 3, (17,), 5, 3, 1, 1, 1, 1),
        (2, 4, (30,), 8, 5, 2, 2, 2, 2),
        (1, 6, (9,), 6, 3, 1, 1, 1, 6),
        (1, 16, (64,), 16, 1, 1, 0, 1, 1),
    ]
    wts = (0.5, 0.25, 0.125)
    cases = [
        conv_case(1, *g, layout=layout, klayout=klayout, packed=packed, nthreads=2) for g in geoms
    ]
    cases += [
        (c, index_expected(w, wts))
        for c, w in [
            conv_case(
                1, *g, layout=layout, klayout=klayout, packed=packed, epilogue=index_epilogue(wts)
            )
            for g in geoms
        ]
    ]
    _check(cases, "nn.conv1d")


@pytest.mark.parametrize("layout,klayout", [("NCDHW", "OIDHW"), ("NDHWC", "DHWIO")])
@pytest.mark.parametrize("packed", [True, False])
def test_conv3d(layout, klayout, packed):
    geoms = [
        (1, 3, (5, 6, 7), 4, 3, 1, 1, 1, 1),
        (1, 4, (6, 6, 6), 6, 3, 2, 1, 1, 2),
        (1, 4, (5, 5, 5), 4, 3, 1, 1, 1, 4),
        (1, 8, (4, 4, 4), 8, 1, 1, 0, 1, 1),
    ]
    wts = (0.5, 0.25, 0.125, 0.0625, 0.03125)
    cases = [
        conv_case(3, *g, layout=layout, klayout=klayout, packed=packed, nthreads=2) for g in geoms
    ]
    cases += [
        (c, index_expected(w, wts))
        for c, w in [
            conv_case(
                3, *g, layout=layout, klayout=klayout, packed=packed, epilogue=index_epilogue(wts)
            )
            for g in geoms
        ]
    ]
    _check(cases, "nn.conv3d")


@pytest.mark.parametrize("dtype", ["float64", "float16", "uint8"])
def test_conv2d_generic_dtypes(dtype):
    geoms = [GEOMS_2D[0], GEOMS_2D[1], GEOMS_2D[6], DEPTHWISE_2D[0]]
    cases = [conv_case(2, *g, dtype=dtype, nthreads=2) for g in geoms]
    cases += [conv_case(2, *g, dtype=dtype, layout="NHWC", klayout="HWIO") for g in geoms]
    tol = {"float64": 1e-10, "float16": 1e-2, "uint8": 0}[dtype]
    if dtype == "uint8":
        outs = run_batch("nn.conv2d", [c for c, _ in cases])
        for (_c, want), y in zip(cases, outs):
            np.testing.assert_array_equal(y, want.astype(np.int32))
    else:
        _check(cases, "nn.conv2d", tol)


def test_conv2d_out_layout_differs():
    c, want = conv_case(2, 1, 3, (7, 6), 5, 3, p=1)
    c["attrs"]["out_layout"] = "NHWC"
    c["out_shape"] = want.transpose(0, 2, 3, 1).shape
    (y,) = run_batch("nn.conv2d", [c])
    assert_close(y, want.transpose(0, 2, 3, 1))


WINOGRAD_2D = [  # 3x3 stride 1, >= 16 channels, constant weights: Winograd F(2x2, 3x3)
    (1, 16, (12, 14), 16, 3, 1, 1, 1, 1),
    (2, 17, (9, 13), 19, 3, 1, 1, 1, 1),
    (1, 32, (23, 40), 24, 3, 1, 0, 1, 1),
    (1, 16, (6, 35), 32, 3, 1, 2, 1, 1),
    (1, 48, (30, 30), 64, 3, 1, 1, 1, 1),
    (5, 32, (6, 7), 40, 3, 1, 1, 1, 1),  # small images: units of 3 and 2 images
    (3, 24, (14, 14), 20, 3, 1, 1, 1, 1),
]


@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize(
    "layout,klayout", [("NCHW", "OIHW"), ("NCHW", "HWIO"), ("NHWC", "HWIO"), ("NHWC", "OIHW")]
)
def test_conv2d_winograd(nthreads, layout, klayout, monkeypatch):
    from relay_core.backend.kernels import conv

    # few channels on small planes go to conv_strips by the rules (worth_transforms)
    monkeypatch.setattr(conv, "FORCE", "winograd")
    kw = dict(layout=layout, klayout=klayout, nthreads=nthreads)
    cases = [conv_case(2, *g, **kw) for g in WINOGRAD_2D]
    cases += [conv_case(2, 1, 20, (13, 10), 18, 3, pads=((0, 2), (1, 0)), **kw)]
    wts = (0.5, 0.25, 0.125, 0.0625)
    cases += [
        (c, index_expected(want, wts))
        for c, want in [conv_case(2, *g, epilogue=index_epilogue(wts), **kw) for g in WINOGRAD_2D]
    ]
    _check(cases, "nn.conv2d")


@pytest.mark.parametrize(
    "n,c,hw,o,pad,width,want",
    [
        (8, 32, 149, 32, 0, 16, True),  # Inception-v3's 32 -> 32 (h 16): many tiles, the batch
        (1, 32, 149, 32, 0, 16, True),  # 21609 positions at batch 1
        (8, 32, 56, 32, 1, 16, True),
        (8, 32, 28, 32, 1, 16, False),  # too few positions: conv_strips
        (1, 32, 56, 32, 1, 16, False),
        (8, 16, 112, 16, 1, 16, False),  # h 8: never
        (1, 64, 56, 64, 1, 16, True),  # h 32 on a wide plane (worth_transforms)
        (1, 64, 14, 64, 1, 16, False),
        # AVX2: from 4000 positions (h >= 8: any 16 -> 16 channels or more)
        (8, 32, 28, 32, 1, 8, True),
        (8, 16, 112, 16, 1, 8, True),
        (8, 16, 55, 64, 1, 8, True),  # SqueezeNet's fire expansion at batch 8
        (1, 16, 55, 64, 1, 8, False),  # ... at batch 1: 3025 positions
        (8, 24, 14, 64, 1, 8, False),  # 1568 positions
        # Zen 4 (AVX-512 at half rate): from 3100 positions on planes of 1000 or more
        (1, 16, 56, 16, 1, "zen4", True),  # HGNetV2's 16 -> 16 per image
        (8, 16, 55, 64, 1, "zen4", True),
        (1, 16, 55, 64, 1, "zen4", False),  # 3025 positions
        (8, 32, 28, 32, 1, "zen4", False),  # 28x28 planes: conv_strips
        (8, 64, 14, 64, 1, "zen4", False),
    ],
)
def test_winograd_rules(n, c, hw, o, pad, width, want, monkeypatch):
    """Which 3x3 convolutions take Winograd by the rules (no FORCE): worth_transforms per image,
    or many_tiles over the batch (its thresholds depend on the vector width and, with AVX-512,
    on whether the cores multiply-add 16 lanes at full rate: Intel's server cores, or at half
    rate: Zen 4)."""
    from relay_core.backend.kernels import conv_winograd
    from relay_core.backend.kernels.conv import conv_window
    from tools.kernel_jit import tt

    monkeypatch.setattr(conv_winograd, "vector_width", lambda: 16 if width == "zen4" else width)
    monkeypatch.setattr(conv_winograd, "half_rate_512", lambda: width == "zen4")
    cs, want_y = conv_case(2, n, c, (hw, hw), o, 3, 1, pad, 1, 1)
    win, G, O, Cg, Og, _, _ = conv_window(
        [tt(a.shape) for a in cs["inputs"]], [tt(want_y.shape)], cs["attrs"], 2
    )
    assert conv_winograd.usable(win, G, Cg, Og, True) is want


@pytest.mark.parametrize("nthreads", [1, 2])
def test_conv2d_many_tiles_winograd(nthreads):
    """Convolutions the many_tiles rule sends to Winograd by default (32 -> 32 on 103x103 at
    batch 2, 24 -> 48 with padding at batch 3), plain and with an epilogue reading output
    indices."""
    geo = [(2, 32, (103, 103), 32, 3, 1, 0, 1, 1), (3, 24, (90, 84), 48, 3, 1, 1, 1, 1)]
    from relay_core.backend.kernels import conv_winograd
    from relay_core.backend.kernels.conv import conv_window
    from tools.kernel_jit import tt

    cases = [conv_case(2, *g, nthreads=nthreads) for g in geo]
    for c, want in cases:
        win, G, O, Cg, Og, _, _ = conv_window(
            [tt(a.shape) for a in c["inputs"]], [tt(want.shape)], c["attrs"], 2
        )
        assert conv_winograd.usable(win, G, Cg, Og, True)
        assert not conv_winograd.worth_transforms(win.P, Cg, Og)
    wts = (0.5, 0.25, 0.125, 0.0625)
    cases += [
        (c, index_expected(want, wts))
        for c, want in [
            conv_case(2, *g, nthreads=nthreads, epilogue=index_epilogue(wts)) for g in geo
        ]
    ]
    _check(cases, "nn.conv2d")


GROUPED_2D = [  # small output planes, batch >= 4: units of several images (conv.images_per_unit),
    # for the convolutions conv_strips leaves to the im2col path (forced here)
    (8, 40, (7, 7), 70, 1, 1, 0, 1, 1),
    (8, 24, (13, 13), 36, 3, 2, 1, 1, 1),
    (7, 15, (9, 9), 20, 3, 1, 0, 1, 1),  # units of 2, 2, 2 and 1 images
    (6, 33, (10, 10), 29, 1, 2, 0, 1, 1),
]
GROUPED_IPU = [4, 4, 2, 3]


@pytest.mark.parametrize("nthreads", [1, 2])
def test_conv2d_grouped_images(nthreads, monkeypatch):
    from relay_core.backend.kernels import conv
    from relay_core.backend.kernels.conv import images_per_unit
    from relay_core.backend.kernels.geometry import Window

    monkeypatch.setattr(conv, "FORCE", "im2col")
    cases = [conv_case(2, *g, nthreads=nthreads) for g in GROUPED_2D]
    wts = (0.5, 0.25, 0.125, 0.0625)
    cases += [
        (c, index_expected(want, wts))
        for c, want in [
            conv_case(2, *g, epilogue=index_epilogue(wts), nthreads=nthreads) for g in GROUPED_2D
        ]
    ]
    for (n, c, (h, w), _o, k, s, p, _, _), ipu in zip(GROUPED_2D, GROUPED_IPU):
        oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        win = Window(
            2, n, c, (1, h, w), (1, oh, ow), (1, k, k), (1, s, s), (1, 1, 1), (0, p, p), (0, p, p)
        )
        assert images_per_unit(win, 1, c, True, False) == ipu
    _check(cases, "nn.conv2d")


def test_winograd_plan():
    """Chunks of whole tile rows whose 16 GEMMs fill the NR-wide tiles; small images grouped."""
    from relay_core.backend.kernels import conv_winograd as cw

    assert cw.plan(8, 28, 28, 64, 64, 32) == (9, 4, 1)  # 252 of 256 columns (5 rows: 140 of 160)
    assert cw.plan(1, 28, 28, 64, 64, 32)[1] == 4  # two threads: four chunks, not three
    assert cw.plan(8, 4, 4, 512, 512, 32) == (4, 1, 2)  # a 7x7 output: 2 images x 16 tiles
    assert cw.plan(1, 4, 4, 512, 512, 32) == (4, 1, 1)
    r, n, ipu = cw.plan(5, 3, 4, 32, 40, 32)
    assert (n, ipu) == (1, 3)  # units of 3 and 2 images (36 and 24 tiles)
    for args in [(1, 28, 28, 64, 64, 32), (8, 7, 7, 256, 256, 32), (2, 56, 56, 128, 128, 32)]:
        r, n, ipu = cw.plan(*args)
        assert n == -(-args[1] // r) and (ipu == 1 or n == 1)
        assert 16 * 4 * (args[3] + args[4]) * -(-ipu * r * args[2] // 32) * 32 <= cw.PLAN_BUDGET


STRIPS_2D = [  # conv_strips: small output planes, strided, 1x1 at batch 1
    # n, c, (h, w), o, k, s, p, d, g
    (1, 24, (14, 14), 40, 3, 2, 1, 1, 1),  # 3x3 stride 2 to 7x7: 7 full strips, O % 32 == 8
    (2, 20, (13, 11), 37, 3, 2, 1, 1, 1),  # 7x6 outputs: 42 positions, batch 2
    (
        1,
        40,
        (9, 9),
        50,
        1,
        2,
        0,
        1,
        1,
    ),  # 1x1 stride 2 (downsampling): 25 positions, a partial strip
    (3, 16, (16, 16), 64, 1, 2, 0, 1, 1),  # 1x1 stride 2, batch 3, whole panels only
    (1, 72, (30, 30), 66, 1, 1, 0, 1, 1),  # 1x1 at batch 1 on a large plane (wide): row blocks
    (1, 17, (15, 15), 20, 5, 1, 2, 1, 1),  # 5x5 stride 1 on 225 positions (< MAX_P)
    (1, 12, (10, 10), 16, 3, 1, 2, 2, 1),  # dilated 3x3 (not Winograd's)
    (8, 33, (7, 7), 96, 1, 1, 0, 1, 1),  # 1x1 at batch 8 on 7x7 (was units of several images)
    (1, 5, (11, 11), 40, 3, 1, 1, 1, 1),  # 5 channels: a short reduction (45)
    (1, 300, (6, 6), 20, 3, 2, 1, 1, 1),  # long reduction: several im2col calls (COL_BUDGET)
    (1, 2100, (7, 7), 70, 1, 1, 0, 1, 1),  # one weight panel per unit (W_BUDGET)
    (2, 8, (5, 4), 3, 3, 1, 0, 1, 1),  # fewer channels than a panel, 3x2 outputs
    # strips packed straight from X (window_pack: output rows of a multiple of the strip)
    (1, 12, (13, 13), 8, 3, 2, 1, 1, 1),  # 7x7 out, the last column's window in the padding
    (2, 10, (28, 28), 20, 3, 2, 1, 1, 1),  # 14x14 out, two strips per row, batch 2
    (1, 6, (10, 32), 9, 5, 1, 2, 2, 1),  # dilated 5x5 stride 1, rows of 28
    (1, 8, (12, 12), 16, 3, 2, 1, 1, 1),  # rows of 6 (the AVX2 strip)
    # strips crossing into the next output row (rows not a multiple of the strip; `windowed`:
    # any plane size when O >= 32)
    (1, 16, (17, 17), 40, (1, 7), 1, (0, 3), 1, 1),  # Inception's 1x7 on 17x17
    (2, 12, (17, 17), 36, (7, 1), 1, (3, 0), 1, 1),  # 7x1, batch 2
    (1, 10, (19, 17), 33, 3, 2, 1, 1, 1),  # stride 2, rows of 9
    (1, 9, (8, 8), 32, 3, 1, 1, 1, 1),  # rows of 8
    (1, 8, (35, 35), 32, 5, 1, 2, 1, 1),  # 5x5 on 1225 positions
    # strips of 8 with AVX-512 (planes of 36, 16 positions)
    (1, 40, (6, 6), 36, 1, 1, 0, 1, 1),
    (2, 24, (4, 4), 40, 3, 1, 1, 1, 1),
]


@pytest.mark.parametrize("nthreads", [1, 2])
def test_conv2d_strips(nthreads):
    """Every case is one conv_strips serves (by its rules), plain, with an index epilogue and
    with bias + relu; asymmetric padding too."""
    from relay_core.backend.kernels import conv_strips
    from relay_core.backend.kernels.conv import conv_window
    from relay_core.backend.kernels.llvm_util import vector_width
    from tools.kernel_jit import tt

    cases = [conv_case(2, *g, nthreads=nthreads) for g in STRIPS_2D]
    packs = set()
    for c, want in cases:
        win, G, O, Cg, Og, _, cl = conv_window(
            [tt(a.shape) for a in c["inputs"]], [tt(want.shape)], c["attrs"], 2
        )
        mr = conv_strips.tile(vector_width(), win.P)[0]
        assert conv_strips.usable(win, G, Cg, O, True, cl), c["inputs"][0].shape
        if win.KK > 1 or win.s != (1, 1, 1):
            packs.add((conv_strips.window_pack(win, mr), win.osp[2] % mr == 0))
    # windows packed straight from X (strips within a row, strips crossing rows), and through
    # im2col
    assert {True, False} <= {w for w, _ in packs} and (True, False) in packs
    wts = (0.5, 0.25, 0.125, 0.0625)
    cases += [
        (c, index_expected(want, wts))
        for c, want in [
            conv_case(2, *g, epilogue=index_epilogue(wts), nthreads=nthreads) for g in STRIPS_2D
        ]
    ]
    for g in STRIPS_2D[:4]:
        c, want = conv_case(2, *g, epilogue=bias_relu_epilogue(g[3], 1), nthreads=nthreads)
        bias = rng.standard_normal(g[3]).astype(np.float32)
        c["extras"] = [bias]
        cases.append((c, np.maximum(want + bias.reshape(1, -1, 1, 1), 0)))
    cases.append(conv_case(2, *STRIPS_2D[0], nthreads=nthreads, pads=((0, 2), (1, 0))))
    _check(cases, "nn.conv2d")


POINTWISE_2D = [  # 1x1 stride 1 or stems, channel first, constant weights: conv_pointwise
    # n, c, (h, w), o, k, s, p, d, g
    (1, 40, (7, 7), 50, 1, 1, 0, 1, 1),  # few positions: transposed (conv_strips), O % 32
    (8, 20, (7, 7), 37, 1, 1, 0, 1, 1),  # transposed, batch 8
    (1, 300, (5, 7), 16, 1, 1, 0, 1, 1),  # transposed, long reduction
    (1, 24, (6, 6), 40, 1, 1, 0, 1, 1),  # transposed, a partial strip (36 % 7 == 1)
    (3, 50, (3, 3), 70, 1, 1, 0, 1, 1),  # transposed, 9 positions, batch 3
    (1, 2100, (7, 7), 70, 1, 1, 0, 1, 1),  # transposed, one panel per unit (W_BUDGET)
    (1, 96, (7, 7), 1030, 1, 1, 0, 1, 1),  # transposed, 16 channel blocks, O % 32 == 6
    (2, 9, (2, 3), 5, 1, 1, 0, 1, 1),  # tiny: fewer channels than a panel
    (1, 3, (33, 31), 32, 3, 2, 1, 1, 1),  # stems: im2col per unit
    (8, 3, (20, 20), 16, 3, 2, 1, 1, 1),
    (1, 4, (17, 17), 13, 5, 1, 2, 1, 1),
    (1, 1, (16, 16), 7, 3, 1, 2, 2, 1),
    (2, 3, (30, 30), 8, 7, 2, 3, 1, 1),
    (1, 24, (16, 16), 144, 1, 1, 0, 1, 1),
    (2, 7, (13, 11), 13, 1, 1, 0, 1, 1),  # odd channels, plane not a multiple of 16
    (1, 20, (12, 12), 17, 1, 1, 0, 1, 1),  # AVX-512 wide: a 16-position tail, 14 + 3 rows
    (2, 16, (4, 12), 3, 1, 1, 0, 1, 1),  # wide, 3 rows (two accumulator sets), 32 + 16
    (1, 3, (19, 21), 17, 3, 2, 1, 1, 1),  # stem with a row tail (14 + 3 on AVX-512)
    (8, 16, (12, 12), 23, 1, 1, 0, 1, 1),  # batch 8, O % 6 == 5
    (1, 300, (14, 14), 64, 1, 1, 0, 1, 1),  # long reduction, O % 6 == 4
    (1, 3, (40, 40), 2, 1, 1, 0, 1, 1),  # fewer output channels than one panel
    (1, 33, (25, 30), 97, 1, 1, 0, 1, 1),  # many column blocks, O % 6 == 1
    (1, 40, (7, 7), 66, 1, 1, 0, 1, 1),  # transposed, O % 32 == 2
    (2, 12, (10, 13), 31, 1, 1, 0, 1, 1),  # 130 positions: a 32-wide panel of 2
    # planes of a multiple of 16 positions: X read in place with AVX-512 (`wide`)
    (2, 40, (8, 8), 30, 1, 1, 0, 1, 1),  # two tiles of 15 output channels
    (1, 17, (4, 16), 5, 1, 1, 0, 1, 1),  # a tile of 5 (two accumulator sets), odd reduction
    (3, 64, (16, 12), 61, 1, 1, 0, 1, 1),  # tiles of 24 and a tail tile of 13
    (8, 144, (16, 16), 24, 1, 1, 0, 1, 1),  # a projection: one tile holds every channel
    (2, 64, (14, 14), 96, 1, 1, 0, 1, 1),  # batch 2 on 14x14 (on AVX2 by pointwise_batched)
]


@pytest.mark.parametrize(
    "n,c,hw,o,width,want",
    [
        (8, 64, 14, 384, 8, True),  # MobileNetV2's expansion at batch 8, AVX2
        (2, 1024, 14, 256, 8, True),  # ResNet-50's projection at batch 2
        (1, 64, 14, 384, 8, False),  # batch 1: conv_strips' rules
        (8, 160, 7, 960, 8, False),  # 7x7: the same time either way, conv_strips
        (8, 64, 28, 384, 8, False),  # 28x28: not a small plane (conv_pointwise already)
        (8, 64, 14, 384, 16, False),  # AVX-512: conv_strips (32-wide tiles waste 12.5%)
    ],
)
def test_pointwise_batched_rule(n, c, hw, o, width, want, monkeypatch):
    """Which 1x1 convolutions on small planes go to conv_pointwise rather than conv_strips or
    units of several images, and that emit_conv follows it."""
    from llvmlite import ir

    from relay_core.backend.kernels import conv, conv_strips
    from relay_core.backend.kernels.conv import conv_window
    from tools.kernel_jit import tt

    monkeypatch.setattr(conv_strips, "vector_width", lambda: width)
    cs, want_y = conv_case(2, n, c, (hw, hw), o, 1, 1, 0, 1, 1)
    win, G, O, Cg, Og, _, cl = conv_window(
        [tt(a.shape) for a in cs["inputs"]], [tt(want_y.shape)], cs["attrs"], 2
    )
    assert conv_strips.pointwise_batched(win) is want
    if want:
        assert not conv_strips.usable(win, G, Cg, O, True, cl)
        ins, outs = [tt(a.shape) for a in cs["inputs"]], [tt(want_y.shape)]
        info = conv.emit_conv(ir.Module(), "k", ins, outs, cs["attrs"], const_inputs=(1,))
        assert info.variant == ("pointwise",), info.variant


@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("layout,klayout", [("NCHW", "OIHW"), ("NCHW", "HWIO")])
def test_conv2d_pointwise(nthreads, layout, klayout, monkeypatch):
    from relay_core.backend.kernels import conv, conv_pointwise
    from relay_core.backend.kernels.conv import conv_window
    from relay_core.backend.kernels.llvm_util import vector_width
    from tools.kernel_jit import tt

    kw = dict(layout=layout, klayout=klayout, nthreads=nthreads)
    cases = [conv_case(2, *g, **kw) for g in POINTWISE_2D]
    variants = set()
    for c, want in cases:  # each case is one the pointwise kernel serves
        win, G, O, Cg, Og, _, cl = conv_window(
            [tt(a.shape) for a in c["inputs"]], [tt(want.shape)], c["attrs"], 2
        )
        assert conv_pointwise.usable(win, G, Cg, Og, True, cl)
        stem = not conv_pointwise.is_1x1(win)
        variants.add("stem" if stem else conv_pointwise.transposed(win.P, O))
        if not stem and conv_pointwise.wide(win):
            variants.add("wide")
    wide = {"wide"} if vector_width() == 16 else set()
    assert variants == {True, False, "stem"} | wide
    monkeypatch.setattr(conv, "FORCE", "pointwise")  # small planes would go to conv_strips
    wts = (0.5, 0.25, 0.125, 0.0625)
    cases += [
        (c, index_expected(want, wts))
        for c, want in [conv_case(2, *g, epilogue=index_epilogue(wts), **kw) for g in POINTWISE_2D]
    ]
    for g in POINTWISE_2D[:3]:
        c, want = conv_case(2, *g, epilogue=bias_relu_epilogue(g[3], 1), **kw)
        bias = rng.standard_normal(g[3]).astype(np.float32)
        c["extras"] = [bias]
        cases.append((c, np.maximum(want + bias.reshape(1, -1, 1, 1), 0)))
    _check(cases, "nn.conv2d")


GROUPS_2D = [  # grouped, Cg > 1: conv_grouped
    # n, c, (h, w), o, k, s, p, d, g
    (2, 32, (16, 16), 32, 3, 1, 1, 1, 2),  # groups of 16 -> 16: one tile per group
    (1, 48, (8, 8), 96, 3, 1, 1, 1, 3),  # 16 -> 32: two tiles of 16 per group
    (3, 24, (8, 8), 24, 3, 2, 1, 1, 3),  # stride 2, rows too short for the vector split
    (1, 64, (16, 16), 64, 1, 1, 0, 1, 4),  # grouped 1x1
    (2, 20, (8, 8), 20, 3, 1, 1, 1, 4),  # tiles of 5 channels (two accumulator sets)
    (1, 80, (8, 8), 80, 3, 1, 1, 1, 2),  # 40 -> 40: two tiles of 20
    (1, 64, (14, 14), 64, 3, 1, 1, 1, 4),  # RegNet's 14x14: grid rows of 16
    (2, 96, (7, 7), 96, 3, 1, 1, 1, 6),  # 7x7: grid rows of 9, the last tile past the band
    (1, 32, (30, 30), 32, 3, 1, 1, 1, 2),  # 8 bands of 4 rows, the last one of 2
    (1, 32, (45, 37), 32, 3, 2, 1, 1, 2),  # stride 2, odd sizes: vector split + scalar edges
    (1, 16, (20, 20), 16, 5, 1, 2, 2, 4),  # 5x5, dilation 2, groups of 4 -> 4
    (1, 24, (17, 17), 24, 3, 3, 1, 1, 3),  # stride 3: nine phases, scalar copy
    (1, 72, (10, 10), 72, 3, 1, 1, 1, 3),  # 24 -> 24 (RegNetX-1.6GF): AVX2 tiles of 6 rows
    (2, 18, (9, 9), 18, 3, 2, 1, 1, 6),  # 3 -> 3: three rows, two accumulator sets
]


@pytest.mark.parametrize("nthreads", [1, 2])
def test_conv2d_grouped(nthreads):
    from relay_core.backend.kernels import conv_grouped

    for g in GROUPS_2D:  # each is one the kernel serves (AVX-512 and AVX2 tiles)
        c, o, groups = g[1], g[3], g[8]
        assert conv_grouped.usable(_win(g), groups, c // groups, o // groups, True, False)
    cases = [conv_case(2, *g, nthreads=nthreads) for g in GROUPS_2D]
    cases += [conv_case(2, *g, nthreads=nthreads, pads=((0, 2), (1, 0))) for g in GROUPS_2D[6:8]]
    wts = (0.5, 0.25, 0.125, 0.0625)
    cases += [
        (c, index_expected(want, wts))
        for c, want in [
            conv_case(2, *g, epilogue=index_epilogue(wts), nthreads=nthreads)
            for g in GROUPS_2D[7:10]
        ]
    ]
    for g in GROUPS_2D[:2]:
        c, want = conv_case(2, *g, epilogue=bias_relu_epilogue(g[3], 1), nthreads=nthreads)
        bias = rng.standard_normal(g[3]).astype(np.float32)
        c["extras"] = [bias]
        cases.append((c, np.maximum(want + bias.reshape(1, -1, 1, 1), 0)))
    _check(cases, "nn.conv2d")


DEPTHWISE_NARROW_2D = [  # channel-first rows of < 8 outputs: 8 channels interleaved per block
    # n, c, (h, w), o, k, s, p, d, g
    (1, 19, (7, 7), 19, 3, 1, 1, 1, 19),  # a partial block of 3 channels
    (8, 16, (14, 14), 16, 3, 2, 1, 1, 16),  # batch 8, stride 2
    (2, 9, (9, 7), 9, 5, 1, 2, 1, 9),  # 5x5
    (1, 12, (11, 6), 12, 3, 1, 2, 2, 12),  # dilation 2
    (1, 8, (6, 9), 8, 3, 2, 0, 1, 8),  # no padding
    (1, 6, (7, 7), 12, 3, 1, 1, 1, 6),  # multiplier 2: the per-plane path
]


@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("packed", [True, False])
def test_conv2d_depthwise_narrow(nthreads, packed):
    kw = dict(nthreads=nthreads, packed=packed)
    cases = [conv_case(2, *g, **kw) for g in DEPTHWISE_NARROW_2D]
    cases += [conv_case(2, *g, **kw, pads=((0, 2), (1, 0))) for g in DEPTHWISE_NARROW_2D[:1]]
    wts = (0.5, 0.25, 0.125, 0.0625)
    cases += [
        (c, index_expected(want, wts))
        for c, want in [
            conv_case(2, *g, epilogue=index_epilogue(wts), **kw) for g in DEPTHWISE_NARROW_2D
        ]
    ]
    for g in DEPTHWISE_NARROW_2D[:2]:
        c, want = conv_case(2, *g, epilogue=bias_relu_epilogue(g[3], 1), **kw)
        bias = rng.standard_normal(g[3]).astype(np.float32)
        c["extras"] = [bias]
        cases.append((c, np.maximum(want + bias.reshape(1, -1, 1, 1), 0)))
    _check(cases, "nn.conv2d")


DEPTHWISE_ROWS_2D = [  # conv_depthwise._cf_rows: rows of ceil(OW / V) vectors, phases for s = 2
    # n, c, (h, w), o, k, s, p, d, g
    (2, 5, (7, 7), 5, 5, 1, 2, 1, 5),  # 7x7 (V = 8): the plane's last store through the tile
    (1, 6, (14, 14), 6, 5, 2, 2, 1, 6),  # stride 2 to 7x7 (EfficientNet's 672 -> 7x7)
    (1, 4, (15, 15), 4, 5, 2, 2, 1, 4),  # stride 2, odd input width
    (8, 3, (14, 14), 3, 3, 1, 1, 1, 3),  # 14 wide (one 16-lane vector per row)
    (1, 3, (28, 28), 3, 5, 1, 2, 1, 3),  # 28 wide: a full and a partial vector per row
    (1, 3, (56, 56), 3, 5, 2, 2, 1, 3),  # stride 2 from 56 to 28
    (1, 2, (32, 32), 2, 3, 1, 1, 1, 2),  # 32 wide: whole vectors, no tile
    (1, 3, (3, 9), 3, 3, 1, 1, 1, 3),  # rows of 3 of 8 lanes run two rows ahead
    (1, 3, (10, 12), 3, 7, 1, 3, 1, 3),  # 7x7 window
    (1, 3, (9, 8), 3, 2, 2, 0, 1, 3),  # even window, no padding
    (2, 7, (12, 10), 7, 3, 2, 1, 1, 7),  # stride 2, non-square, even input
    # stride 2 input rows split 32 floats at a time (then a scalar tail)
    (1, 3, (70, 70), 3, 3, 2, 1, 1, 3),  # padding 1 (even columns to phase 1), 6-column tail
    (1, 3, (66, 66), 3, 3, 2, 0, 1, 3),  # unpadded (even columns to phase 0), 2-column tail
    (2, 2, (9, 111), 2, 3, 2, 1, 1, 2),  # 56 outputs per row (ROWS_MAX_OW), odd width
]
DEPTHWISE_ROWS_FORCED = [  # wider rows than the rule sends here (FORCE = "rows")
    (1, 2, (56, 56), 2, 3, 1, 1, 1, 2),
    (1, 2, (112, 112), 2, 3, 2, 1, 1, 2),
    (1, 2, (50, 50), 2, 3, 1, 1, 1, 2),
]


@pytest.mark.parametrize("nthreads", [1, 2])
def test_conv2d_depthwise_rows(nthreads):
    from relay_core.backend.kernels import conv_depthwise

    kw = dict(nthreads=nthreads)
    geoms = [g for g in DEPTHWISE_ROWS_2D]
    assert all(conv_depthwise._rows_usable(_win(g), 1) for g in geoms)
    cases = [conv_case(2, *g, **kw) for g in geoms]
    cases += [conv_case(2, *g, **kw, pads=((0, 2), (1, 0))) for g in geoms[:3]]
    wts = (0.5, 0.25, 0.125, 0.0625)  # reads every index: the per-row epilogue
    cases += [
        (c, index_expected(want, wts))
        for c, want in [conv_case(2, *g, epilogue=index_epilogue(wts), **kw) for g in geoms]
    ]
    for g in geoms:  # per channel: the per-plane epilogue
        c, want = conv_case(2, *g, epilogue=bias_relu_epilogue(g[3], 1), **kw)
        bias = rng.standard_normal(g[3]).astype(np.float32)
        c["extras"] = [bias]
        cases.append((c, np.maximum(want + bias.reshape(1, -1, 1, 1), 0)))
    _check(cases, "nn.conv2d")
    forced = [conv_case(2, *g, **kw) for g in DEPTHWISE_ROWS_FORCED]
    for g in DEPTHWISE_ROWS_FORCED[:1]:
        c, want = conv_case(2, *g, epilogue=bias_relu_epilogue(g[3], 1), **kw)
        bias = rng.standard_normal(g[3]).astype(np.float32)
        c["extras"] = [bias]
        forced.append((c, np.maximum(want + bias.reshape(1, -1, 1, 1), 0)))
    conv_depthwise.FORCE = "rows"
    try:
        _check(forced, "nn.conv2d")
    finally:
        conv_depthwise.FORCE = None


def _win(g):
    from relay_core.backend.kernels.conv import conv_window
    from tools.kernel_jit import tt

    n, c, (h, w_), o, k, s, p, d, grp = g
    oh = (h + 2 * p - d * (k - 1) - 1) // s + 1
    ow = (w_ + 2 * p - d * (k - 1) - 1) // s + 1
    attrs = dict(strides=(s, s), padding=(p, p, p, p), dilation=(d, d), groups=grp)
    ins = [tt((n, c, h, w_)), tt((o, c // grp, k, k))]
    return conv_window(ins, [tt((n, o, oh, ow))], attrs, 2)[0]
