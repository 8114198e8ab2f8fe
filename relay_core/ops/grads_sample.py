"""Gradient rules of the ops that sample their input at computed coordinates: image.grid_sample,
image.crop_and_resize (compositions of existing ops), vision.roi_align and vision.roi_pool
(backward ops of their own, vision_grad.py: their sampling grids have run-time sizes).

grid_sample and crop_and_resize are written as "each output point is a weighted sum of input
pixels at a few taps": per spatial axis, the tap indices, their weights and the weights'
derivatives with respect to the point's coordinate on that axis are computed elementwise in
Relay. Then, with the data as rows (pixels, channels):

- d data: the output gradient times the tap weights, summed into the tap rows (scatter_nd add);
- d coordinate on axis a: sum over taps and channels of g * data[tap] * dw_a * prod_{b != a} w_b,
  then chained to the op's inputs (grid values, box corners).

Everything is static-shaped and built from gather / scatter / elementwise ops, so the backward
pass runs in the interpreter and compiles like any forward program.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import RelayError
from ..ir import dtype as dt
from ..ir.expr import Constant, Expr, TupleGetItem, call, const
from . import nn_util as U
from .grads import GradCtx, GradFn
from .image import _GRID_METHODS
from .registry import attrs_to_dict


def _c(name, *args, **attrs) -> Expr:
    return call(name, *args, **attrs)


def _static(ctx: GradCtx, i: int | None, what: str) -> tuple[int, ...]:
    s = ctx.shape(i)
    if not all(isinstance(d, int) for d in s):
        raise RelayError(f"gradient of {ctx.call.op.name}: {what} needs static shapes, got {s}")
    return tuple(s)


def _transpose(e: Expr, perm) -> Expr:
    perm = tuple(int(p) for p in perm)
    return e if perm == tuple(range(len(perm))) else _c("transpose", e, axes=perm)


def _where(cond, a, b):
    return _c("where", cond, a, b)


def _f(value, dtype) -> Expr:
    return const(value, dtype)


class _Taps:
    """Per-axis taps of a sampler: integer indices, weights and d weight / d coordinate, each
    shaped (*points, count); points of different axes broadcast against each other."""

    def __init__(self, idx: Expr, w: Expr, dw: Expr | None, count: int):
        self.idx, self.w, self.dw, self.count = idx, w, dw, count


def _tap_axis(e: Expr, a: int, nd: int, prank: int) -> Expr:
    """(*points, T) -> (*points, 1.., T, ..1): axis a's taps on tap axis a of nd."""
    if nd - 1 - a:
        e = _c("expand_dims", e, axis=prank + 1, num_newaxis=nd - 1 - a)
    if a:
        e = _c("expand_dims", e, axis=prank, num_newaxis=a)
    return e


def _sample_grads(rows, channels, base, taps, strides, g_pts, points, coords=True):
    """Gradients of y[p, c] = sum over tap combinations of prod_a w_a * rows[base + sum_a
    idx_a * stride_a, c], for points p of static shape `points`.

    rows (R, channels): the data; base (int64, broadcasts to the points): the first row of each
    point's image; g_pts (*points, channels): the output gradient. Returns d rows and, per
    axis, sum over channels and taps of g * d y / d coordinate_a (shaped like the points), or
    None when `coords` is false."""
    nd, prank = len(taps), len(points)
    full = tuple(points) + tuple(t.count for t in taps)
    idx = _c("expand_dims", base, axis=prank, num_newaxis=nd)
    weights = []
    for a, t in enumerate(taps):
        off = _c("multiply", t.idx, const(strides[a], "int64"))
        idx = _c("add", idx, _tap_axis(off, a, nd, prank))
        weights.append(_tap_axis(t.w, a, nd, prank))
    w = weights[0]
    for x in weights[1:]:
        w = _c("multiply", w, x)
    flat = _c("reshape", _c("broadcast_to", idx, shape=full), newshape=(-1,))
    g_exp = _c("expand_dims", g_pts, axis=prank, num_newaxis=nd)  # (*points, 1.., C)
    w = _c("broadcast_to", w, shape=full)
    upd = _c("multiply", g_exp, _c("expand_dims", w, axis=-1))  # (*points, T.., C)
    drows = _c(
        "scatter_nd",
        _c("zeros_like", rows),
        _c("reshape", flat, newshape=(1, -1)),
        _c("reshape", upd, newshape=(-1, channels)),
        mode="add",
    )
    if not coords:
        return drows, None
    vals = _c("reshape", _c("take", rows, flat, axis=0), newshape=full + (channels,))
    gv = _c("sum", _c("multiply", vals, g_exp), axis=(-1,))  # (*points, T..)
    tap_axes = tuple(range(prank, prank + nd))
    dcoords = []
    for a, t in enumerate(taps):
        dwa = _tap_axis(t.dw, a, nd, prank)
        for b, x in enumerate(weights):
            if b != a:
                dwa = _c("multiply", dwa, x)
        dcoords.append(_c("sum", _c("multiply", gv, dwa), axis=tap_axes))
    return drows, dcoords


def _stack(parts) -> Expr:
    return _c("stack", *parts, axis=-1)


# -- grid_sample ----------------------------------------------------------------------------------
def _reflect(x: Expr, lo: float, hi: float, d: str):
    """Fold x into [lo, hi] (as image._reflect) and d fold / d x (+-1 outside, 1 inside)."""
    span = hi - lo
    if span <= 0:
        return _c("zeros_like", x), _c("zeros_like", x)
    below = _c("less", x, _f(lo, d))
    above = _c("greater", x, _f(hi, d))
    dx = _where(below, _c("subtract", _f(lo, d), x), _c("subtract", x, _f(hi, d)))
    n = _c("floor", _c("divide", dx, _f(span, d)))
    r = _c("subtract", dx, _c("multiply", n, _f(span, d)))
    even = _c("equal", _c("floor_mod", n, _f(2.0, d)), _f(0.0, d))
    lo_r = _c("add", _f(lo, d), r)
    hi_r = _c("subtract", _f(hi, d), r)
    folded = _where(below, _where(even, lo_r, hi_r), _where(above, _where(even, hi_r, lo_r), x))
    outside = _c("logical_or", below, above)
    sign = _where(outside, _where(even, _f(-1.0, d), _f(1.0, d)), _f(1.0, d))
    return folded, _c("broadcast_to_like", sign, x)


def _keys_and_slope(u: Expr, a: float, d: str):
    """Keys' cubic kernel at u >= 0 and its derivative."""
    u2 = _c("multiply", u, u)
    near = _c(
        "add",
        _c("multiply", _c("subtract", _c("multiply", _f(a + 2, d), u), _f(a + 3, d)), u2),
        _f(1.0, d),
    )
    far = _c(
        "subtract",
        _c(
            "multiply",
            _c(
                "add",
                _c("multiply", _c("subtract", _c("multiply", _f(a, d), u), _f(5 * a, d)), u),
                _f(8 * a, d),
            ),
            u,
        ),
        _f(4 * a, d),
    )
    dnear = _c(
        "subtract", _c("multiply", _f(3 * (a + 2), d), u2), _c("multiply", _f(2 * (a + 3), d), u)
    )
    dfar = _c(
        "add",
        _c("subtract", _c("multiply", _f(3 * a, d), u2), _c("multiply", _f(10 * a, d), u)),
        _f(8 * a, d),
    )
    le1 = _c("less_equal", u, _f(1.0, d))
    lt2 = _c("less", u, _f(2.0, d))
    zero = _c("zeros_like", u)
    return _where(le1, near, _where(lt2, far, zero)), _where(le1, dnear, _where(lt2, dfar, zero))


def _grid_sample(c, g, ctx):
    """d data, and d grid (zero for nearest: piecewise constant in the grid)."""
    x, grid = c.args
    n, ch, *sp = _static(ctx, 0, "the data")
    gshape = _static(ctx, 1, "the grid")
    nd, out = len(sp), gshape[1:-1]
    a = ctx.attrs
    d = ctx.dtype(0)
    method, mode = _GRID_METHODS[a.method], a.padding_mode
    size = math.prod(sp)
    rows = _c("reshape", _transpose(x, (0, *range(2, 2 + nd), 1)), newshape=(n * size, ch))
    g_pts = _transpose(g, (0, *range(2, 2 + len(out)), 1))
    base = Constant((np.arange(n, dtype=np.int64) * size).reshape((n,) + (1,) * len(out)))
    strides = [math.prod(sp[i + 1 :]) for i in range(nd)]
    taps = []
    for ax in range(nd):
        length = sp[ax]
        gc = _c("take", grid, const(nd - 1 - ax, "int64"), axis=-1)  # (N, *out)
        if a.align_corners:
            pos = _c("multiply", _c("add", gc, _f(1.0, d)), _f((length - 1) / 2, d))
            slope, lo, hi = (length - 1) / 2, 0.0, length - 1.0
        else:
            pos = _c(
                "divide",
                _c("subtract", _c("multiply", _c("add", gc, _f(1.0, d)), _f(length, d)), _f(1, d)),
                _f(2.0, d),
            )
            slope, lo, hi = length / 2, -0.5, length - 0.5
        if method == "nearest":
            pos = _c("round", pos)  # half to even, as np.rint
        dpos = _c("full_like", pos, _f(slope, d))
        outside = _c("logical_or", _c("less", pos, _f(lo, d)), _c("greater", pos, _f(hi, d)))
        if mode == "border" and method != "cubic":
            pos = _where(outside, _c("clip", pos, a_min=0.0, a_max=length - 1.0), pos)
            dpos = _where(outside, _c("zeros_like", dpos), dpos)
        elif mode == "reflection" and method != "cubic":
            folded, sign = _reflect(pos, lo, hi, d)
            pos = _where(outside, folded, pos)
            dpos = _c("multiply", dpos, sign)

        def pixel(i, length=length, lo=lo, hi=hi):
            """A (float, integral) tap -> (int64 index, validity as 0/1 or None)."""
            valid = None
            if mode == "zeros":
                ok = _c(
                    "logical_and",
                    _c("greater_equal", i, _f(0.0, d)),
                    _c("less", i, _f(float(length), d)),
                )
                valid = _c("cast", ok, dtype=d)
            elif mode == "reflection":
                i = _reflect(i, lo, hi, d)[0]
                i = _c("cast", _c("cast", i, dtype="int64"), dtype=d)  # truncate, as the ref
            i = _c("clip", i, a_min=0.0, a_max=length - 1.0)
            return _c("cast", i, dtype="int64"), valid

        if method == "nearest":
            spec = [(pos, _c("ones_like", pos), None)]
        else:
            lo_i = _c("floor", pos)
            t = _c("subtract", pos, lo_i)
            if method == "linear":
                spec = [
                    (lo_i, _c("subtract", _f(1.0, d), t), _c("negative", dpos)),
                    (_c("add", lo_i, _f(1.0, d)), t, dpos),
                ]
            else:
                spec = []
                for k, (shift, s) in enumerate(
                    ((1.0, 1.0), (0.0, 1.0), (-1.0, -1.0), (-2.0, -1.0))
                ):
                    u = _c("add", t, _f(shift, d)) if s > 0 else _c("subtract", _f(-shift, d), t)
                    w, dw = _keys_and_slope(u, -0.75, d)
                    dw = _c("multiply", dw, _c("multiply", dpos, _f(s, d)))
                    spec.append((_c("add", lo_i, _f(k - 1.0, d)), w, dw))
        idxs, ws, dws = [], [], []
        for i, w, dw in spec:
            ii, valid = pixel(i)
            if valid is not None:
                w = _c("multiply", w, valid)
                dw = None if dw is None else _c("multiply", dw, valid)
            idxs.append(ii)
            ws.append(w)
            dws.append(dw)
        dw = None if dws[0] is None else _stack(dws)
        taps.append(_Taps(_stack(idxs), _stack(ws), dw, len(spec)))
    drows, dcoords = _sample_grads(
        rows, ch, base, taps, strides, g_pts, (n, *out), coords=method != "nearest"
    )
    dx = _c("reshape", drows, newshape=(n, *sp, ch))
    dx = _transpose(dx, (0, nd + 1, *range(1, nd + 1)))
    if dcoords is None:
        return [dx, _c("zeros_like", grid)]
    return [dx, _stack([dcoords[nd - 1 - j] for j in range(nd)])]


# -- crop_and_resize ------------------------------------------------------------------------------
def _crop_and_resize(c, g, ctx):
    """d data, and d boxes (zero for nearest_neighbor: piecewise constant in the boxes).
    Box coordinates are rounded to float32 first, as the forward op (ONNX's roi arithmetic)."""
    x, boxes, ind = c.args
    d = ctx.dtype()  # the output's (float) dtype
    if not dt.is_float(d):
        return [None, None, None]
    ax = U.data_axes(ctx.attrs.layout, 2, "image.crop_and_resize")
    xs = _static(ctx, 0, "the data")
    k = _static(ctx, 1, "the boxes")[0]
    n, ch, h, w = (xs[i] for i in ax)
    oh, ow = U.ntuple(ctx.attrs.crop_size, 2, "crop_size", "image.crop_and_resize")
    perm = (ax[0], ax[2], ax[3], ax[1])  # (N, H, W, C)
    xr = _transpose(x, perm)
    if ctx.dtype(0) != d:
        xr = _c("cast", xr, dtype=d)
    rows = _c("reshape", xr, newshape=(n * h * w, ch))
    g_pts = _transpose(g, perm)  # (K, oh, ow, C)
    b = _c("cast", _c("cast", boxes, dtype="float32"), dtype=d)
    base = _c(
        "reshape",
        _c("multiply", _c("cast", ind, dtype="int64"), const(h * w, "int64")),
        newshape=(k, 1, 1),
    )
    nearest = ctx.attrs.method == "nearest_neighbor"
    taps, chains = [], []
    for axis, (length, olen) in enumerate(((h, oh), (w, ow))):
        s = _c("take", b, const(axis, "int64"), axis=1)
        e = _c("take", b, const(axis + 2, "int64"), axis=1)
        ext = float(length - 1)
        if olen == 1:
            pos = _c(
                "add",
                _c("divide", _c("multiply", _c("subtract", e, s), _f(ext, d)), _f(2.0, d)),
                _c("multiply", s, _f(ext, d)),
            )
            pos = _c("expand_dims", pos, axis=1)  # (K, 1)
            ds = de = _f(ext / 2, d)
        else:
            y = Constant(np.arange(olen, dtype=dt.to_numpy(d)))
            span = _c("expand_dims", _c("subtract", e, s), axis=1)
            pos = _c(
                "add",
                _c("divide", _c("multiply", _c("multiply", y, span), _f(ext, d)), _f(olen - 1, d)),
                _c("expand_dims", _c("multiply", s, _f(ext, d)), axis=1),
            )  # (K, olen)
            frac = np.arange(olen) / (olen - 1)
            ds = Constant((ext * (1 - frac)).astype(dt.to_numpy(d)))
            de = Constant((ext * frac).astype(dt.to_numpy(d)))
        chains.append((ds, de))
        inside = _c(
            "cast",
            _c(
                "logical_and",
                _c("greater_equal", pos, _f(0.0, d)),
                _c("less_equal", pos, _f(ext, d)),
            ),
            dtype=d,
        )
        p = _c("floor", pos)
        r = _c("subtract", pos, p)

        def index(i, length=length):
            return _c("cast", _c("clip", i, a_min=0.0, a_max=length - 1.0), dtype="int64")

        if nearest:
            right = _c("cast", _c("greater_equal", r, _f(0.5, d)), dtype=d)
            tap = _Taps(_stack([index(_c("add", p, right))]), _stack([inside]), None, 1)
        else:
            tap = _Taps(
                _stack([index(p), index(_c("add", p, _f(1.0, d)))]),
                _stack(
                    [
                        _c("multiply", _c("subtract", _f(1.0, d), r), inside),
                        _c("multiply", r, inside),
                    ]
                ),
                _stack([_c("negative", inside), inside]),
                2,
            )
        # points (K, oh, ow): the H taps vary along oh, the W taps along ow
        expand = 2 if axis == 0 else 1
        taps.append(
            _Taps(
                _c("expand_dims", tap.idx, axis=expand),
                _c("expand_dims", tap.w, axis=expand),
                None if tap.dw is None else _c("expand_dims", tap.dw, axis=expand),
                tap.count,
            )
        )
    drows, dcoords = _sample_grads(
        rows, ch, base, taps, (w, 1), g_pts, (k, oh, ow), coords=not nearest
    )
    dx = _c("reshape", drows, newshape=(n, h, w, ch))
    dx = _transpose(dx, np.argsort(perm))
    if ctx.dtype(0) != d:
        dx = _c("cast", dx, dtype=ctx.dtype(0)) if dt.is_float(ctx.dtype(0)) else None
    if dcoords is None:
        return [dx, _c("zeros_like", boxes), None]
    parts = {}
    for axis, ((ds, de), dpos) in enumerate(zip(chains, dcoords)):
        dpos = _c("sum", dpos, axis=(2 if axis == 0 else 1,))  # (K, olen)
        parts[axis] = _c("sum", _c("multiply", dpos, ds), axis=(1,))
        parts[axis + 2] = _c("sum", _c("multiply", dpos, de), axis=(1,))
    db = _c("stack", *(parts[i] for i in range(4)), axis=1)
    if ctx.dtype(1) != d:
        db = _c("cast", db, dtype=ctx.dtype(1))
    return [dx, db, None]


# -- roi_align / roi_pool: their backward ops (vision_grad.py) -------------------------------------
def _roi_rule(name: str) -> GradFn:
    def rule(c, g, ctx):
        both = _c(name + "_grad", *c.args, g, **attrs_to_dict(ctx.attrs))
        return [TupleGetItem(both, 0), TupleGetItem(both, 1)] + [None] * (len(c.args) - 2)

    return rule
