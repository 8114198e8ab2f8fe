"""Lowering of image.resize{1,2,3}d (ONNX Resize).

Resizing is separable: one pass per resized axis, each output element a weighted sum of a few
input elements along that axis. The taps and weights per output position depend only on the
(static) geometry, so they are computed at compile time with the reference's own coordinate
and weight rules and compiled into the kernel as small tables; the passes inline into one loop
nest. Arithmetic is float64, like the reference.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..ops import image as I
from ..ops import nn_util as U
from . import expr as E
from . import tensor as T
from .expr import Const, PrimExpr, call, cast, select
from .tensor import compute, const_array


def _axis_tables(attrs, in_len: int, out_len: int, scale: float, roi, cubic_dtype):
    """(index table (out, n) int64, weight table (out, n) float64, extrapolate mask or None)."""
    method = I._METHODS[attrs.method]
    x, extrap = I._source_coords(attrs.coordinate_transformation_mode, out_len, in_len, scale, roi)
    p = np.floor(x)
    r = x - p
    whole = r == 0
    p = np.where(whole, p - 1, p).astype(np.int64)
    r = np.where(whole, 1.0, r)
    offsets, coef = I._weights(method, r, scale, attrs, cubic_dtype)
    coef = coef.astype(np.float64)
    idx = p[:, None] + offsets[None, :]
    if attrs.cubic_exclude:
        coef = np.where((idx < 0) | (idx >= in_len), 0.0, coef)
        total = coef.sum(axis=1, keepdims=True)
        coef = coef / np.where(total == 0, 1.0, total)
    idx = np.clip(idx, 0, in_len - 1)
    if extrap is not None and not extrap.any():
        extrap = None
    return idx.astype(np.int64), coef, extrap


def _resize(nd: int):
    def lower(inputs, attrs, out_type):
        x = inputs[0]
        op = f"image.resize{nd}d"
        ax = U.data_axes(attrs.layout, nd, op)
        sp = [x.shape[a] for a in ax[2:]]
        if not all(isinstance(d, int) for d in sp):
            raise NotImplementedError("resize with run-time spatial dims")
        # batch and channels are the input's (a run-time batch: the type's may be `?`)
        oshape = tuple(x.shape[k] if k in ax[:2] else d for k, d in enumerate(out_type.shape))
        out = [oshape[a] for a in ax[2:]]
        if attrs.scale is not None:
            scale = [float(s) for s in U.ntuple(attrs.scale, nd, "scale", op)]
        else:
            scale = [o / d if d else 1.0 for o, d in zip(out, sp)]
        roi = attrs.roi if attrs.coordinate_transformation_mode == "tf_crop_and_resize" else None
        cubic_dtype = np.dtype(np.float64 if x.dtype == "float64" else np.float32)
        cur = compute(x.shape, lambda *i: cast("float64", x[i]), "resize_in")
        for k, a in enumerate(ax[2:]):
            r = None if roi is None else (roi[k], roi[nd + k])
            trivial_roi = r is None or (math.isclose(r[0], 0.0) and math.isclose(r[1], 1.0))
            if out[k] == sp[k] and math.isclose(scale[k], 1.0) and trivial_roi:
                continue
            if out[k] == 0 or sp[k] == 0:
                shape = list(cur.shape)
                shape[a] = out[k]
                cur = compute(tuple(shape), lambda *i: Const(0.0, "float64"), "resize_empty")
                continue
            idx, coef, extrap = _axis_tables(attrs, sp[k], out[k], scale[k], r, cubic_dtype)
            it = const_array(idx, "resize_idx")
            ct = const_array(coef, "resize_w")
            et = const_array(extrap.astype(np.bool_), "resize_ex") if extrap is not None else None
            shape = list(cur.shape)
            shape[a] = out[k]

            def body(*i, cur=cur, a=a, it=it, ct=ct, et=et, n=idx.shape[1]):
                acc = None
                for t in range(n):
                    src = list(i)
                    src[a] = it[i[a], t]
                    term = cur[tuple(src)] * ct[i[a], t]
                    acc = term if acc is None else acc + term
                if et is not None:
                    acc = select(
                        et[(i[a],)], Const(float(attrs.extrapolation_value), "float64"), acc
                    )
                return acc

            # materialized per axis and summed without FMA: the reference's rounding exactly
            cur = compute(tuple(shape), body, f"resize_ax{a}", {"exact": True, "materialize": True})
        odt = out_type.dtype
        if E.is_float(odt):
            return compute(oshape, lambda *i: cast(odt, cur[i]), "resize")
        from ..ir import dtype as _dt

        info = _dt.iinfo(odt)

        def fin(*i):
            v = call("round", cur[i])
            v = E.min_(
                E.max_(v, Const(float(info.min), "float64")), Const(float(info.max), "float64")
            )
            return cast(odt, v)

        return compute(oshape, fin, "resize")

    return lower


# -- affine_grid / grid_sample ---------------------------------------------------------------------
def _affine_grid(inputs, attrs, out_type):
    theta = inputs[0]
    sp = tuple(attrs.size[2:])
    nd = len(sp)
    f = "float64"

    def base(a, i):  # normalised coordinate along spatial axis a (D, H, W order)
        d = sp[a]
        if d <= 1:
            return Const(0.0, f)
        v = Const(-1.0, f) + cast(f, i) * Const(2.0 / (d - 1), f)
        if not attrs.align_corners:
            v = v * Const((d - 1) / d, f)
        return v

    def body(n, *rest):
        pos, j = rest[:nd], rest[nd]
        # base vector (x, y[, z], 1): x is the last spatial axis
        vec = [base(nd - 1 - k, pos[nd - 1 - k]) for k in range(nd)] + [Const(1.0, f)]
        acc = None
        for k, v in enumerate(vec):
            term = v * cast(f, theta[n, j, k])
            acc = term if acc is None else acc + term
        return cast(theta.dtype, acc)

    return compute(tuple(out_type.shape), body, "affine_grid", {"exact": True})


def _fl(v) -> PrimExpr:
    """A float64 expression of a static number or an index expression (a run-time extent)."""
    return cast("float64", v) if isinstance(v, PrimExpr) else Const(float(v), "float64")


def _reflect(x, lo, hi):
    """Fold a float64 coordinate into [lo, hi] by reflections at the borders (lo / hi numbers
    or float64 expressions: an extent known at run time only)."""
    f = "float64"
    static = not isinstance(lo, PrimExpr) and not isinstance(hi, PrimExpr)
    if static and hi - lo <= 0:
        return Const(0.0, f)
    lo_c, hi_c = _fl(lo), _fl(hi)
    span = hi_c - lo_c
    below = x < lo_c
    above = x > hi_c
    dx = select(below, lo_c - x, x - hi_c)
    n = call("floor", dx / span)
    r = dx - n * span
    even = E.eq(call("fmod", n, Const(2.0, f)), Const(0.0, f))
    out = select(
        below, select(even, lo_c + r, hi_c - r), select(above, select(even, hi_c - r, lo_c + r), x)
    )
    return out if static else select(span > Const(0.0, f), out, Const(0.0, f))


def _keys(t):
    """Keys' cubic kernel, a = -0.75 (float64)."""
    f = "float64"
    a = Const(-0.75, f)
    t = call("abs", t)
    near = ((a + Const(2.0, f)) * t - (a + Const(3.0, f))) * t * t + Const(1.0, f)
    far = ((a * t - Const(5.0, f) * a) * t + Const(8.0, f) * a) * t - Const(4.0, f) * a
    return select(t <= Const(1.0, f), near, select(t < Const(2.0, f), far, Const(0.0, f)))


def _grid_sample(inputs, attrs, out_type):
    x, grid = inputs
    nd = x.ndim - 2
    sp = [x.shape[2 + a] for a in range(nd)]
    method = I._GRID_METHODS[attrs.method]
    mode = attrs.padding_mode
    f = "float64"

    def coords(n, out):
        cs, los, his = [], [], []
        for a in range(nd):  # grid's last axis lists (x, y[, z]): the reverse of D, H, W
            g = cast(f, grid[(n, *out, nd - 1 - a)])
            d = sp[a]  # an int, or an index expression when the extent is known at run time
            last = _fl(d - 1)
            if attrs.align_corners:
                c = (g + Const(1.0, f)) / Const(2.0, f) * last
                lo, hi = 0.0, (d - 1.0 if isinstance(d, int) else last)
            else:
                c = ((g + Const(1.0, f)) * _fl(d) - Const(1.0, f)) / Const(2.0, f)
                lo, hi = -0.5, (d - 0.5 if isinstance(d, int) else _fl(d) - Const(0.5, f))
            if method == "nearest":
                c = call("round", c)
            outside = E.logical_or(c < _fl(lo), c > _fl(hi))
            if mode == "border" and method != "cubic":
                c = select(outside, E.min_(E.max_(c, Const(0.0, f)), last), c)
            elif mode == "reflection" and method != "cubic":
                c = select(outside, _reflect(c, lo, hi), c)
            cs.append(c)
            los.append(lo)
            his.append(hi)
        return cs, los, his

    def pixel(i, a, los, his):
        """(clamped index, valid) of integer tap i (float64) under the padding mode."""
        d = sp[a]
        if mode == "zeros":
            ii = cast("int64", i)
            return E.max_(E.min_(ii, E.index(d - 1)), E.index(0)), E.logical_and(ii >= 0, ii < d)
        if mode == "border":
            ii = cast("int64", i)
            return E.max_(E.min_(ii, E.index(d - 1)), E.index(0)), None
        ii = cast("int64", _reflect(i, los[a], his[a]))
        return E.max_(E.min_(ii, E.index(d - 1)), E.index(0)), None

    def body(n, c, *out):
        cs, los, his = coords(n, out)
        taps = []
        for cv in cs:
            if method == "nearest":
                taps.append([(cv, Const(1.0, f))])
                continue
            base = call("floor", cv)
            t = cv - base
            if method == "linear":
                taps.append([(base, Const(1.0, f) - t), (base + Const(1.0, f), t)])
            else:
                ws = [t + Const(1.0, f), t, Const(1.0, f) - t, Const(2.0, f) - t]
                taps.append([(base + Const(float(k - 1), f), _keys(ws[k])) for k in range(4)])
        # each axis' taps as (index, weight) once, shared by every combination of taps (a 3-D
        # bicubic sample combines 3 x 4 of them into 64 terms)
        axis_taps = []
        for a, ts in enumerate(taps):
            row = []
            for i, wi in ts:
                ci, valid = pixel(i, a, los, his)
                row.append((ci, wi if valid is None else select(valid, wi, Const(0.0, f))))
            axis_taps.append(row)
        acc = None
        for combo in itertools.product(*axis_taps):
            w = combo[0][1]
            for _, wi in combo[1:]:
                w = w * wi
            term = cast(f, x[(n, c, *(ci for ci, _ in combo))]) * w
            acc = term if acc is None else acc + term
        return cast(x.dtype, acc)

    # (N, C, *grid's spatial dims), from the inputs (a run-time batch: the type's is `?`)
    oshape = (x.shape[0], x.shape[1], *grid.shape[1 : 1 + nd])
    return compute(oshape, body, "grid_sample")


# -- ONNX Resize with run-time roi / scales / sizes ---------------------------------------------
def _keys_f32(t, a: float):
    """Keys' cubic kernel evaluated in float32, as the reference does for non-float64 data."""
    f = "float32"
    t = call("abs", cast(f, t))
    av = Const(a, f)
    near = ((av + Const(2.0, f)) * t - (av + Const(3.0, f))) * t * t + Const(1.0, f)
    far = ((av * t - Const(5.0, f) * av) * t + Const(8.0, f) * av) * t - Const(4.0, f) * av
    return select(t <= Const(1.0, f), near, select(t < Const(2.0, f), far, Const(0.0, f)))


def _coord(mode: str, y, d, out_len, scale, roi):
    """Source coordinate (float64) of output position y; and the extrapolation condition. d:
    the input extent, an int or an index expression (known at run time)."""
    f = "float64"
    yf = cast(f, y)
    width = scale * _fl(d)
    one = Const(1.0, f)
    half = Const(0.5, f)
    extrap = None
    if mode == "align_corners":
        x = select(E.eq(width, one), Const(0.0, f), yf * _fl(d - 1) / (width - one))
    elif mode == "asymmetric":
        x = yf / scale
    elif mode == "tf_half_pixel_for_nn":
        x = (yf + half) / scale
    elif mode == "tf_crop_and_resize":
        start, end = roi
        span = cast(f, end - start)  # float32 difference, as the reference
        x = select(
            E.eq(width, one),
            span * _fl(d - 1) / Const(2.0, f),
            yf * span * _fl(d - 1) / (width - one),
        )
        x = x + cast(f, start) * _fl(d - 1)
        extrap = E.logical_or(x < Const(0.0, f), x > _fl(d - 1))
    elif mode == "pytorch_half_pixel":
        x = select(E.eq(width, one), Const(-0.5, f), (yf + half) / scale - half)
    elif mode == "half_pixel":
        x = (yf + half) / scale - half
    else:  # half_pixel_symmetric
        offset = _fl(d) / Const(2.0, f) * (one - cast(f, out_len) / width)
        x = offset + (yf + half) / scale - half
    return x, extrap


def _axis_taps(attrs, x, d, cubic32: bool):
    """[(index, weight)] taps along one axis for source coordinate x (float64)."""
    f = "float64"
    method = I._METHODS[attrs.method]
    p = call("floor", x)
    r = x - p
    whole = E.eq(r, Const(0.0, f))
    p = select(whole, p - Const(1.0, f), p)
    r = select(whole, Const(1.0, f), r)
    pi = cast("int64", p)
    if method == "nearest":
        rm = I._ROUNDING[attrs.rounding_method]
        right = {
            "round_prefer_floor": r > Const(0.5, f),
            "round_prefer_ceil": r >= Const(0.5, f),
            "floor": Const(False, "bool"),
            "ceil": Const(True, "bool"),
        }[rm]
        right = E.logical_or(right, E.eq(r, Const(1.0, f)))
        idx = pi + cast("int64", right)
        return [(E.max_(E.min_(idx, E.index(d - 1)), E.index(0)), Const(1.0, f))]
    offsets = [0, 1] if method == "linear" else [-1, 0, 1, 2]
    taps = []
    for o in offsets:
        t = Const(float(o), f) - r
        if method == "linear":
            w = E.max_(Const(0.0, f), Const(1.0, f) - call("abs", t))
        elif cubic32:
            w = cast(f, _keys_f32(t, attrs.cubic_alpha))
        else:
            w = _keys(t) if attrs.cubic_alpha == -0.75 else _keys_a(t, attrs.cubic_alpha)
        taps.append((pi + o, w))
    if attrs.cubic_exclude:
        total = None
        masked = []
        for i, w in taps:
            w = select(E.logical_and(i >= 0, i < d), w, Const(0.0, f))
            masked.append((i, w))
            total = w if total is None else total + w
        total = select(E.eq(total, Const(0.0, f)), Const(1.0, f), total)
        taps = [(i, w / total) for i, w in masked]
    return [(E.max_(E.min_(i, E.index(d - 1)), E.index(0)), w) for i, w in taps]


def _keys_a(t, a: float):
    f = "float64"
    av = Const(a, f)
    t = call("abs", t)
    near = ((av + Const(2.0, f)) * t - (av + Const(3.0, f))) * t * t + Const(1.0, f)
    far = ((av * t - Const(5.0, f) * av) * t + Const(8.0, f) * av) * t - Const(4.0, f) * av
    return select(t <= Const(1.0, f), near, select(t < Const(2.0, f), far, Const(0.0, f)))


def _dyn_resize(inputs, attrs, out_type):
    from .tensor import value_of

    x, roi_t, scales_t, sizes_t = inputs
    r = x.ndim  # x's extents may be known at run time only (Mask R-CNN pastes masks per box)
    axes = list(range(r)) if attrs.axes is None else [a % r for a in attrs.axes]
    f = "float64"
    n_sizes = sizes_t.shape[0] if sizes_t.ndim else 1
    n_roi = roi_t.shape[0] if roi_t.ndim else 1
    scale = {a: Const(1.0, f) for a in range(r)}
    out = {a: E.index(x.shape[a]) for a in range(r)}
    if n_sizes:
        for k, a in enumerate(axes):
            out[a] = cast("int64", value_of(sizes_t, (k,)))
            scale[a] = cast(f, out[a]) / _fl(x.shape[a])
        if attrs.keep_aspect_ratio_policy != "stretch":
            pick = E.min_ if attrs.keep_aspect_ratio_policy == "not_larger" else E.max_
            s = scale[axes[0]]
            for a in axes[1:]:
                s = pick(s, scale[a])
            for a in axes:
                scale[a] = s
                out[a] = cast("int64", s * _fl(x.shape[a]) + Const(0.5, f))
    else:
        for k, a in enumerate(axes):
            scale[a] = cast(f, value_of(scales_t, (k,), scales_t.dtype))
            out[a] = cast("int64", call("floor", _fl(x.shape[a]) * scale[a]))
    roi = {}
    if attrs.coordinate_transformation_mode == "tf_crop_and_resize":
        for a in range(r):
            roi[a] = (Const(0.0, "float32"), Const(1.0, "float32"))
        if n_roi:
            m = len(axes)
            for k, a in enumerate(axes):
                lo = cast("float32", value_of(roi_t, (k,), roi_t.dtype))
                hi = cast("float32", value_of(roi_t, (m + k,), roi_t.dtype))
                roi[a] = (lo, hi)
    cubic32 = x.dtype != "float64"
    cur = compute(x.shape, lambda *i: cast(f, x[i]), "dyn_resize_in")
    for a in range(2, r):
        shape = list(cur.shape)
        shape[a] = out[a]
        if attrs.antialias and I._METHODS[attrs.method] != "nearest":
            cur = _antialias_axis(attrs, cur, a, x.shape[a], shape, out[a], scale[a], roi.get(a))
            continue

        def body(*i, cur=cur, a=a):
            xc, extrap = _coord(
                attrs.coordinate_transformation_mode, i[a], x.shape[a], out[a], scale[a], roi.get(a)
            )
            acc = None
            for idx, w in _axis_taps(attrs, xc, x.shape[a], cubic32):
                src = list(i)
                src[a] = idx
                term = cur[tuple(src)] * w
                acc = term if acc is None else acc + term
            if extrap is not None:
                acc = select(extrap, Const(float(attrs.extrapolation_value), f), acc)
            return acc

        cur = compute(tuple(shape), body, f"dyn_resize_ax{a}", {"exact": True, "materialize": True})
    odt = out_type.dtype
    if E.is_float(odt):
        return compute(cur.shape, lambda *i: cast(odt, cur[i]), "dyn_resize")
    from ..ir import dtype as _dt

    info = _dt.iinfo(odt)

    def fin(*i):
        v = call("round", cur[i])
        v = E.min_(E.max_(v, Const(float(info.min), f)), Const(float(info.max), f))
        return cast(odt, v)

    return compute(cur.shape, fin, "dyn_resize")


def _antialias_axis(attrs, cur, a, d, shape, out_len, scale, roi):
    """One antialiased pass (downscaling widens the filter by 1 / scale, so the number of taps
    is a run-time value): weights normalised by their sum, like the reference's _weights."""
    f = "float64"
    cubic = I._METHODS[attrs.method] == "cubic"
    support = 2.0 if cubic else 1.0
    s = E.min_(scale, Const(1.0, f))
    start = cast("int64", call("floor", Const(-support, f) / s)) + 1
    ntaps = E.index(2) - start * 2

    def tap(y, k):
        xc, extrap = _coord(attrs.coordinate_transformation_mode, y, d, out_len, scale, roi)
        p = call("floor", xc)
        r = xc - p
        whole = E.eq(r, Const(0.0, f))
        p = cast("int64", select(whole, p - Const(1.0, f), p))
        r = select(whole, Const(1.0, f), r)
        o = start + k
        t = (cast(f, o) - r) * s
        if cubic:
            w = _keys_a(t, attrs.cubic_alpha)
        else:
            w = E.max_(Const(0.0, f), Const(1.0, f) - call("abs", t))
        idx = p + o
        if attrs.cubic_exclude:
            w = select(E.logical_and(idx >= 0, idx < d), w, Const(0.0, f))
        return E.max_(E.min_(idx, E.index(d - 1)), E.index(0)), w, extrap

    def total_body(y):
        k = T.reduce_axis(ntaps, "k")
        return T.sum(tap(y, k)[1], k)

    total = compute((out_len,), total_body, f"aa_total{a}")

    def body(*i):
        k = T.reduce_axis(ntaps, "k")
        idx, w, _ = tap(i[a], k)
        src = list(i)
        src[a] = idx
        return T.sum(cur[tuple(src)] * w, k)

    acc = compute(tuple(shape), body, f"aa_sum{a}", {"exact": True})

    def norm(*i):
        tot = total[(i[a],)]
        v = acc[i] / select(E.eq(tot, Const(0.0, f)), Const(1.0, f), tot)
        extrap = tap(i[a], E.index(0))[2]
        if extrap is not None:
            v = select(extrap, Const(float(attrs.extrapolation_value), f), v)
        return v

    return compute(tuple(shape), norm, f"aa_ax{a}", {"materialize": True})


def _dyn_affine_grid(inputs, attrs, out_type):
    from .tensor import value_of

    theta, size_t = inputs
    nsz = size_t.shape[0]
    nd = nsz - 2
    vals = [value_of(size_t, (k,)) for k in range(nsz)]
    sp = vals[2:]
    f = "float64"

    def base(a, i):
        d = cast(f, sp[a])
        v = Const(-1.0, f) + cast(f, i) * (Const(2.0, f) / (d - Const(1.0, f)))
        if not attrs.align_corners:
            v = v * (d - Const(1.0, f)) / d
        return select(sp[a] > 1, v, Const(0.0, f))

    def body(n, *rest):
        pos, j = rest[:nd], rest[nd]
        vec = [base(nd - 1 - k, pos[nd - 1 - k]) for k in range(nd)] + [Const(1.0, f)]
        acc = None
        for k, v in enumerate(vec):
            term = v * cast(f, theta[n, j, k])
            acc = term if acc is None else acc + term
        return cast(theta.dtype, acc)

    shape = (vals[0], *sp, nd)
    return compute(shape, body, "dyn_affine_grid", {"exact": True})
