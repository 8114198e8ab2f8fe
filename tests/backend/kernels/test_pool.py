"""Pooling kernels against torch and a direct numpy reference."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from .helpers import assert_close, index_epilogue, index_expected, run_batch

rng = np.random.default_rng(3)
SP = {1: "W", 2: "HW", 3: "DHW"}


def out_dim(n, k, s, d, pb, pe, ceil):
    eff = d * (k - 1) + 1
    span = n + pb + pe - eff
    if ceil:
        o = -(-span // s) + 1
        if (o - 1) * s >= n + pb:
            o -= 1
        return o
    return span // s + 1


def ref_pool(x, kind, k, s, d, pb, pe, ceil=False, cip=False, p=2.0):
    """Direct loops over the canonical (N, C, *sp) array in float64."""
    nd = x.ndim - 2
    sp = x.shape[2:]
    out = [out_dim(sp[a], k[a], s[a], d[a], pb[a], pe[a], ceil) for a in range(nd)]
    y = np.zeros(x.shape[:2] + tuple(out))
    for o in itertools.product(*(range(v) for v in out)):
        vals, count = [], 0
        for t in itertools.product(*(range(v) for v in k)):
            pos = [o[a] * s[a] + t[a] * d[a] - pb[a] for a in range(nd)]
            if all(-pb[a] <= pos[a] < sp[a] + pe[a] for a in range(nd)):
                count += 1 if cip else 0
            if all(0 <= pos[a] < sp[a] for a in range(nd)):
                vals.append(x[(slice(None), slice(None), *pos)].astype(np.float64))
                count += 0 if cip else 1
        idx = (slice(None), slice(None), *o)
        if kind == "max":
            y[idx] = np.max(vals, axis=0) if vals else -np.inf
        elif kind == "avg":
            y[idx] = np.sum(vals, axis=0) / count if vals else np.nan
        else:
            y[idx] = (np.sum(np.abs(vals) ** p, axis=0) if vals else 0) ** (1 / p)
    return y


def to_layout(a, canon, layout):
    return np.ascontiguousarray(a.transpose([canon.index(c) for c in layout]))


def pool_case(
    kind,
    nd,
    n,
    c,
    sp,
    k,
    s=None,
    d=1,
    pads=0,
    ceil=False,
    cip=False,
    p=2.0,
    layout=None,
    dtype="float32",
    nthreads=1,
    epilogue=None,
):
    s = s or k
    kk, ss, dd = (k,) * nd, (s,) * nd, (d,) * nd
    pb, pe = pads if isinstance(pads, tuple) else ((pads,) * nd, (pads,) * nd)
    x = rng.standard_normal((n, c, *sp)).astype(dtype)
    want = ref_pool(x, kind, kk, ss, dd, pb, pe, ceil, cip, p)
    lay = layout or "NC" + SP[nd]
    attrs = dict(
        pool_size=kk,
        strides=ss,
        dilation=dd,
        padding=tuple(pb) + tuple(pe),
        layout=lay,
        ceil_mode=ceil,
    )
    if kind == "avg":
        attrs["count_include_pad"] = cip
    if kind == "lp":
        attrs["p"] = p
    want = to_layout(want, "NC" + SP[nd], lay)
    x = to_layout(x, "NC" + SP[nd], lay)
    return dict(
        inputs=[x], out_shape=want.shape, attrs=attrs, nthreads=nthreads, epilogue=epilogue
    ), want


GEOMS = {
    1: [
        (2, 3, (9,), 3, 2, 1, 1, False),
        (1, 4, (10,), 2, None, 1, 0, True),
        (1, 2, (11,), 3, 2, 2, 2, True),
    ],
    2: [
        (2, 3, (7, 6), 3, 2, 1, 1, False),
        (1, 5, (9, 9), 2, None, 1, 0, True),
        (1, 4, (11, 10), 3, 2, 2, 1, True),
        (1, 3, (8, 8), 3, 1, 1, ((0, 2), (1, 0)), False),
        (1, 32, (56, 56), 3, 2, 1, 1, False),
        (1, 2, (5, 5), 5, 1, 1, 2, False),
        # no window reaches the padding: planes read in place (SqueezeNet's ceil-mode pools)
        (2, 4, (111, 111), 3, 2, 1, 0, True),
        (1, 3, (33, 33), 3, 2, 1, 0, True),  # 16 columns: the last block's loads would pass W
        (1, 2, (13, 27), 3, 1, 1, 0, False),
        # blocks of 16 and 8 columns and a masked tail: padded (GoogLeNet's 3x3 stride-1 pools),
        # in place
        (1, 2, (28, 37), 3, 1, 1, 1, False),
        (1, 2, (9, 45), 3, 1, 1, 0, False),
    ],
    3: [(1, 3, (5, 6, 7), 3, 2, 1, 1, False), (1, 2, (6, 6, 6), 2, None, 1, 0, True)],
}


def _cases(kind, nd, layout, **kw):
    out = []
    for n, c, sp, k, s, d, pads, ceil in GEOMS[nd]:
        if isinstance(pads, tuple):
            pads = (tuple(pads[0]), tuple(pads[1])) if nd == 2 else 0
        if kind != "max" and d > 1:
            d = 1
        out.append(pool_case(kind, nd, n, c, sp, k, s, d, pads, ceil, layout=layout, **kw))
    return out


def _check(op, cases, tol=1e-5):
    outs = run_batch(op, [c for c, _ in cases])
    for (_c, want), y in zip(cases, outs):
        assert_close(y, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("cl", [False, True])
@pytest.mark.parametrize(
    "kind,extra",
    [
        ("max", {}),
        ("avg", {"cip": False}),
        ("avg", {"cip": True}),
        ("lp", {"p": 2.0}),
        ("lp", {"p": 3.0}),
        ("lp", {"p": 1.0}),
    ],
)
def test_pool(nd, cl, kind, extra):
    layout = "N" + SP[nd] + "C" if cl else None
    cases = _cases(kind, nd, layout, nthreads=2, **extra)
    _check(f"nn.{kind}_pool{nd}d", cases, 1e-4)


@pytest.mark.parametrize("cl", [False, True])
def test_pool_index_epilogue(cl):
    wts = (0.5, 0.25, 0.125, 0.0625)
    cases = []
    for kind in ("max", "avg"):
        for c, want in _cases(kind, 2, "NHWC" if cl else None, epilogue=index_epilogue(wts)):
            cases.append((kind, c, index_expected(want, wts)))
    for kind in ("max", "avg"):
        _check(f"nn.{kind}_pool2d", [(c, w) for k, c, w in cases if k == kind], 1e-4)


def test_max_pool_matches_torch():
    x = rng.standard_normal((2, 8, 15, 13)).astype(np.float32)
    want = F.max_pool2d(torch.from_numpy(x), 3, 2, 1, dilation=2, ceil_mode=True).numpy()
    attrs = dict(pool_size=(3, 3), strides=(2, 2), padding=(1, 1), dilation=(2, 2), ceil_mode=True)
    (y,) = run_batch("nn.max_pool2d", [dict(inputs=[x], out_shape=want.shape, attrs=attrs)])
    assert_close(y, want, 0, 0)


def test_avg_pool_matches_torch():
    x = rng.standard_normal((2, 8, 15, 13)).astype(np.float32)
    cases, wants = [], []
    for cip in (False, True):
        want = F.avg_pool2d(torch.from_numpy(x), 3, 2, 1, ceil_mode=True, count_include_pad=cip)
        attrs = dict(
            pool_size=(3, 3), strides=(2, 2), padding=(1, 1), ceil_mode=True, count_include_pad=cip
        )
        cases.append(dict(inputs=[x], out_shape=tuple(want.shape), attrs=attrs))
        wants.append(want.numpy())
    for y, want in zip(run_batch("nn.avg_pool2d", cases), wants):
        assert_close(y, want, 1e-5, 1e-6)


@pytest.mark.parametrize("dtype", ["float64", "float16", "int8", "uint8", "int32"])
def test_max_pool_dtypes(dtype):
    x = (
        rng.integers(-100, 100, (2, 3, 7, 6))
        if dtype != "uint8"
        else rng.integers(0, 255, (2, 3, 7, 6))
    )
    x = x.astype(dtype)
    cases = []
    for layout in ("NCHW", "NHWC"):
        want = ref_pool(x, "max", (3, 3), (2, 2), (1, 1), (1, 1), (1, 1)).astype(dtype)
        xi = to_layout(x, "NCHW", layout)
        want = to_layout(want, "NCHW", layout)
        attrs = dict(pool_size=(3, 3), strides=(2, 2), padding=(1, 1), layout=layout)
        cases.append((dict(inputs=[xi], out_shape=want.shape, attrs=attrs), want))
    for (_c, want), y in zip(cases, run_batch("nn.max_pool2d", [c for c, _ in cases])):
        assert y.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("kind", ["max", "avg", "lp"])
def test_global_pool(nd, kind):
    cases = []
    for layout in ("NC" + SP[nd], "N" + SP[nd] + "C"):
        for shape in [
            (2, 3) + (5,) * nd,
            (1, 17) + (9,) * nd,
            (1, 4) + (1,) * nd,
            (2, 64) + (40 if nd < 3 else 12,) * nd,
        ]:
            x = rng.standard_normal(shape).astype(np.float32)
            axes = tuple(range(2, nd + 2))
            if kind == "max":
                want = x.max(axis=axes, keepdims=True)
            elif kind == "avg":
                want = x.mean(axis=axes, keepdims=True, dtype=np.float64)
            else:
                want = np.sqrt((x.astype(np.float64) ** 2).sum(axis=axes, keepdims=True))
            want = to_layout(want, "NC" + SP[nd], layout)
            xi = to_layout(x, "NC" + SP[nd], layout)
            wts = tuple(0.5**i for i in range(1, nd + 3))
            cases.append(
                (
                    dict(inputs=[xi], out_shape=want.shape, attrs={"layout": layout}, nthreads=2),
                    want,
                )
            )
            cases.append(
                (
                    dict(
                        inputs=[xi],
                        out_shape=want.shape,
                        attrs={"layout": layout},
                        epilogue=index_epilogue(wts),
                    ),
                    index_expected(want, wts),
                )
            )
    _check(f"nn.global_{kind}_pool{nd}d", cases, 1e-5)


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_adaptive_pool(nd, kind):
    f = getattr(F, f"adaptive_{kind}_pool{nd}d")
    cases = []
    for sp, osz in [
        ((7,) * nd, (3,) * nd),
        ((10,) * nd, (4,) * nd),
        ((5,) * nd, (5,) * nd),
        ((4,) * nd, (7,) * nd),
    ]:
        x = rng.standard_normal((2, 3, *sp)).astype(np.float32)
        want = f(torch.from_numpy(x), osz).numpy()
        for layout in ("NC" + SP[nd], "N" + SP[nd] + "C"):
            cases.append(
                (
                    dict(
                        inputs=[to_layout(x, "NC" + SP[nd], layout)],
                        out_shape=to_layout(want, "NC" + SP[nd], layout).shape,
                        attrs={"layout": layout, "output_size": osz},
                        nthreads=2,
                    ),
                    to_layout(want, "NC" + SP[nd], layout),
                )
            )
    _check(f"nn.adaptive_{kind}_pool{nd}d", cases, 1e-5)


@pytest.mark.parametrize("storage_order,layout", [(0, "NCHW"), (0, "NHWC"), (1, "NCHW")])
def test_max_pool_with_argmax(storage_order, layout):
    from relay_core.ops import lookup
    from tools.kernel_jit import Compiled, tt

    x = rng.standard_normal((2, 3, 7, 6)).astype(np.float32)
    want = ref_pool(x, "max", (3, 3), (2, 2), (1, 1), (1, 1), (1, 1))
    xi = to_layout(x, "NCHW", layout)
    wl = to_layout(want, "NCHW", layout)
    attrs = dict(
        pool_size=(3, 3), strides=(2, 2), padding=(1, 1), layout=layout, storage_order=storage_order
    )
    k = Compiled.build(
        lookup("nn.max_pool2d_with_argmax").kernel,
        [tt(xi.shape)],
        [tt(wl.shape), tt(wl.shape, "int64")],
        attrs,
    )
    y, idx = k(xi)
    assert_close(y, wl, 0, 0)
    if storage_order == 0:
        np.testing.assert_array_equal(xi.ravel()[idx], y)
    else:
        xcm = x.transpose(0, 1, 3, 2).ravel()  # spatial axes column-major
        np.testing.assert_array_equal(xcm[idx], y)
