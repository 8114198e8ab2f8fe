"""nn.conv*d_transpose kernels against torch (float64 reference)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from .helpers import assert_close, index_epilogue, index_expected, run_batch

rng = np.random.default_rng(5)
SP = {1: "W", 2: "HW", 3: "DHW"}


def ref(x, w, s, p, op, d, g):
    nd = x.ndim - 2
    f = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[nd]
    return f(
        torch.from_numpy(x.astype(np.float64)),
        torch.from_numpy(w.astype(np.float64)),
        stride=s,
        padding=p,
        output_padding=op,
        dilation=d,
        groups=g,
    ).numpy()


def to_layout(a, canon, layout):
    return np.ascontiguousarray(a.transpose([canon.index(c) for c in layout]))


def case(
    nd,
    n,
    c,
    sp,
    og,
    k,
    s=1,
    p=0,
    op=0,
    d=1,
    g=1,
    layout=None,
    klayout=None,
    packed=True,
    nthreads=2,
    dtype="float32",
    epilogue=None,
):
    x = rng.standard_normal((n, c, *sp)).astype(dtype)
    w = rng.standard_normal((c, og, *([k] * nd))).astype(dtype)
    want = ref(x, w, s, p, op, d, g)
    dl = layout or "NC" + SP[nd]
    kl = klayout or "IO" + SP[nd]
    attrs = dict(
        strides=(s,) * nd,
        padding=(p,) * nd,
        output_padding=(op,) * nd,
        dilation=(d,) * nd,
        groups=g,
        data_layout=dl,
        kernel_layout=kl,
    )
    want = to_layout(want, "NC" + SP[nd], dl)
    return dict(
        inputs=[to_layout(x, "NC" + SP[nd], dl), to_layout(w, "IO" + SP[nd], kl)],
        out_shape=want.shape,
        attrs=attrs,
        const_inputs=(1,) if packed else (),
        nthreads=nthreads,
        epilogue=epilogue,
    ), want


GEOMS = {
    1: [(1, 3, (9,), 4, 3, 2, 1, 1, 1, 1), (2, 4, (7,), 3, 4, 1, 0, 0, 2, 2)],
    2: [
        (1, 3, (5, 4), 4, 3, 2, 1, 1, 1, 1),
        (2, 4, (6, 6), 3, 4, 2, 1, 0, 1, 2),
        (1, 8, (8, 8), 8, 3, 1, 1, 0, 2, 1),
        (1, 16, (4, 4), 16, 2, 2, 0, 0, 1, 1),
        (1, 6, (7, 5), 2, 5, 3, 2, 2, 1, 3),
        (1, 32, (8, 8), 16, 4, 2, 1, 0, 1, 1),
    ],
    3: [(1, 2, (3, 4, 5), 3, 3, 2, 1, 1, 1, 1), (1, 4, (3, 3, 3), 2, 2, 1, 0, 0, 1, 2)],
}


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("layout_kind", ["cf", "cf_oihw", "cl"])
@pytest.mark.parametrize("packed", [True, False])
def test_conv_transpose(nd, layout_kind, packed):
    layout = {"cf": None, "cf_oihw": None, "cl": "N" + SP[nd] + "C"}[layout_kind]
    klayout = "OI" + SP[nd] if layout_kind == "cf_oihw" else None
    cases = [case(nd, *g, layout=layout, klayout=klayout, packed=packed) for g in GEOMS[nd]]
    wts = tuple(0.5**i for i in range(1, nd + 3))
    cases += [
        (c, index_expected(w, wts))
        for c, w in [
            case(
                nd,
                *g,
                layout=layout,
                klayout=klayout,
                packed=packed,
                nthreads=1,
                epilogue=index_epilogue(wts),
            )
            for g in GEOMS[nd]
        ]
    ]
    outs = run_batch(f"nn.conv{nd}d_transpose", [c for c, _ in cases])
    for (_c, want), y in zip(cases, outs):
        assert_close(y, want, rtol=1e-4, atol=1e-4 * max(1, np.abs(want).max()))


def test_conv_transpose_float64():
    cases = [case(2, *g, dtype="float64") for g in GEOMS[2][:3]]
    outs = run_batch("nn.conv2d_transpose", [c for c, _ in cases])
    for (_c, want), y in zip(cases, outs):
        assert_close(y, want, rtol=1e-10, atol=1e-10)
