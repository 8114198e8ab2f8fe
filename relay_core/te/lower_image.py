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
from .expr import Const, call, cast, select
from .lowering import register_lower
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
        oshape = tuple(out_type.shape)
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


for _nd in (1, 2, 3):
    register_lower(f"image.resize{_nd}d")(_resize(_nd))


# -- affine_grid / grid_sample ---------------------------------------------------------------------
@register_lower("image.affine_grid")
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


def _reflect(x, lo: float, hi: float):
    """Fold a float64 coordinate into [lo, hi] by reflections at the borders."""
    f = "float64"
    span = hi - lo
    if span <= 0:
        return Const(0.0, f)
    below = x < Const(lo, f)
    above = x > Const(hi, f)
    dx = select(below, Const(lo, f) - x, x - Const(hi, f))
    n = call("floor", dx / Const(span, f))
    r = dx - n * Const(span, f)
    even = E.eq(call("fmod", n, Const(2.0, f)), Const(0.0, f))
    lo_c, hi_c = Const(lo, f), Const(hi, f)
    return select(
        below, select(even, lo_c + r, hi_c - r), select(above, select(even, hi_c - r, lo_c + r), x)
    )


def _keys(t):
    """Keys' cubic kernel, a = -0.75 (float64)."""
    f = "float64"
    a = Const(-0.75, f)
    t = call("abs", t)
    near = ((a + Const(2.0, f)) * t - (a + Const(3.0, f))) * t * t + Const(1.0, f)
    far = ((a * t - Const(5.0, f) * a) * t + Const(8.0, f) * a) * t - Const(4.0, f) * a
    return select(t <= Const(1.0, f), near, select(t < Const(2.0, f), far, Const(0.0, f)))


@register_lower("image.grid_sample")
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
            d = sp[a]
            if attrs.align_corners:
                c = (g + Const(1.0, f)) / Const(2.0, f) * Const(float(d - 1), f)
                lo, hi = 0.0, d - 1.0
            else:
                c = ((g + Const(1.0, f)) * Const(float(d), f) - Const(1.0, f)) / Const(2.0, f)
                lo, hi = -0.5, d - 0.5
            if method == "nearest":
                c = call("round", c)
            outside = E.logical_or(c < Const(lo, f), c > Const(hi, f))
            if mode == "border" and method != "cubic":
                c = select(outside, E.min_(E.max_(c, Const(0.0, f)), Const(float(d - 1), f)), c)
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
        acc = None
        for combo in itertools.product(*taps):
            w = Const(1.0, f)
            idx = []
            for a, (i, wi) in enumerate(combo):
                ci, valid = pixel(i, a, los, his)
                w = w * (wi if valid is None else select(valid, wi, Const(0.0, f)))
                idx.append(ci)
            term = cast(f, x[(n, c, *idx)]) * w
            acc = term if acc is None else acc + term
        return cast(x.dtype, acc)

    return compute(tuple(out_type.shape), body, "grid_sample")
