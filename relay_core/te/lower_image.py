"""Lowering of image.resize{1,2,3}d (ONNX Resize).

Resizing is separable: one pass per resized axis, each output element a weighted sum of a few
input elements along that axis. The taps and weights per output position depend only on the
(static) geometry, so they are computed at compile time with the reference's own coordinate
and weight rules and compiled into the kernel as small tables; the passes inline into one loop
nest. Arithmetic is float64, like the reference.
"""

from __future__ import annotations

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
