"""Lowering of cast / clip / creation / quantization / einsum / scans / shape ops."""

from __future__ import annotations

import math

import numpy as np

from ..ir import dtype as _dt
from ..ops.misc import parse_einsum
from . import expr as E
from . import tensor as T
from .expr import Const, call, cast, select
from .lower_transform import ravel, reshape_to, unravel
from .lowering import broadcast_read
from .tensor import compute, reduce_axis


def _scalar_read(t):
    return t[(0,) * t.ndim]


def cast_value(v, dtype: str):
    """numpy astype semantics for the dtypes the backend stores."""
    return cast(dtype, v)


def _saturate(v, dtype: str):
    """Clamp to +-max of a float8 format (NaN stays NaN), as ONNX Cast's saturate."""
    big = float(_dt.finfo(dtype).max)
    f = "float64" if v.dtype == "float64" else "float32"
    v = cast(f, v)
    v = select(v > Const(big, f), Const(big, f), v)
    return select(v < Const(-big, f), Const(-big, f), v)


_SATURATING = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")


def _cast(inputs, attrs, out_type):
    x = inputs[0]
    dst = attrs.dtype

    def body(*i):
        v = x[i]
        if dst in _SATURATING and attrs.saturate and E.is_float(v.dtype):
            v = _saturate(v, dst)
        elif dst in _SATURATING and attrs.saturate and x.dtype != "bool":
            v = _saturate(cast("float32", v), dst)
        return cast_value(v, dst)

    return compute(x.shape, body, "cast")


def _cast_like(inputs, attrs, out_type):
    x = inputs[0]
    return compute(x.shape, lambda *i: cast_value(x[i], out_type.dtype), "cast_like")


def _clip_bound(dtype: str, v, lower: bool):
    if v is None:
        return None
    if _dt.is_int(dtype):
        info = _dt.iinfo(dtype)
        v = min(max(v, info.min), info.max)
        v = math.ceil(v) if lower else math.floor(v)
        return E.as_expr(int(v), dtype)
    with np.errstate(all="ignore"):
        v = float(np.asarray(v).astype(_dt.to_numpy(dtype)).astype(np.float64))
    return Const(v, dtype)


def _clip(inputs, attrs, out_type):
    x = inputs[0]
    lo = _clip_bound(x.dtype, attrs.a_min, True)
    hi = _clip_bound(x.dtype, attrs.a_max, False)

    def body(*i):
        v = x[i]
        if lo is not None:
            v = E.max_(v, lo)
        if hi is not None:
            v = E.min_(v, hi)
        return v

    return compute(x.shape, body, "clip")


def _full(inputs, attrs, out_type):
    fill = inputs[0]
    dtype = out_type.dtype
    return compute(tuple(out_type.shape), lambda *i: cast_value(_scalar_read(fill), dtype), "full")


def _full_like(inputs, attrs, out_type):
    x, fill = inputs
    return compute(x.shape, lambda *i: cast_value(_scalar_read(fill), x.dtype), "full_like")


def _filled(value, like: bool):
    def lower(inputs, attrs, out_type):
        dtype = out_type.dtype
        shape = inputs[0].shape if like else tuple(out_type.shape)
        c = Const(bool(value), "bool") if dtype == "bool" else E.as_expr(value, dtype)
        if not E.is_float(dtype) and dtype != "bool":
            c = Const(int(value), dtype)
        return compute(shape, lambda *i: c, "filled")

    return lower


def _one_hot(inputs, attrs, out_type):
    idx, on, off = inputs
    nd = idx.ndim
    a = attrs.axis + nd + 1 if attrs.axis < 0 else attrs.axis
    dtype = out_type.dtype

    def body(*i):
        src = i[:a] + i[a + 1 :]
        hit = E.eq(E.index(idx[src]), i[a])
        return select(
            hit, cast_value(_scalar_read(on), dtype), cast_value(_scalar_read(off), dtype)
        )

    return compute(tuple(out_type.shape), body, "one_hot")


def _shape_of(inputs, attrs, out_type):
    x = inputs[0]
    dtype = out_type.dtype

    def body(i):
        v = E.as_expr(0, dtype)
        for k in range(x.ndim - 1, -1, -1):
            v = select(E.eq(i, k), cast(dtype, E.index(x.shape[k])), v)
        return v

    return compute((x.ndim,), body, "shape_of")


def _ndarray_size(inputs, attrs, out_type):
    x = inputs[0]
    n = T.size(x.shape)
    return compute((), lambda: cast(out_type.dtype, E.index(n)), "ndarray_size")


# -- quantization ---------------------------------------------------------------------------------
def _param_read(p, idx, axis: int, block: int):
    """Scale / zero point for element `idx` (per-tensor, per-axis or blocked)."""
    size = T.size(p.shape)
    if isinstance(size, int) and size == 1:
        return p[(0,) * p.ndim]
    ax = axis % len(idx)
    if not block:
        return p[(idx[ax],)]
    src = list(idx)
    src[ax] = E.floordiv(idx[ax], block)
    return p[tuple(src)]


def _quantize(inputs, attrs, out_type):
    x, s = inputs[0], inputs[1]
    zp = inputs[2] if len(inputs) > 2 else None
    out = out_type.dtype
    if not _dt.is_int(out):
        return _quantize_float(x, s, zp, attrs, out)
    # numpy promotion of data and scale sets the division's precision
    q_dt = np.result_type(_dt.to_numpy(x.dtype), _dt.to_numpy(s.dtype)).name
    info = _dt.iinfo(out)

    def body(*i):
        xv = cast(q_dt, x[i])
        sv = cast(q_dt, _param_read(s, i, attrs.axis, attrs.block_size))
        q = cast("float64", call("round", xv / sv))
        z = (
            cast("float64", _param_read(zp, i, attrs.axis, attrs.block_size))
            if zp is not None
            else E.as_expr(0.0, "float64")
        )
        r = q + z
        r = select(call("isnan", r, dtype="bool"), z, r)
        r = E.min_(
            E.max_(r, E.as_expr(float(info.min), "float64")), E.as_expr(float(info.max), "float64")
        )
        return cast(out, r)

    return compute(x.shape, body, "quantize")


def _quantize_float(x, s, zp, attrs, out):
    """Quantization to a float8 / float4 format: x / scale + zero point, saturated."""
    q_dt = np.result_type(_dt.to_numpy(x.dtype), _dt.to_numpy(s.dtype)).name

    def body(*i):
        xv = cast(q_dt, x[i])
        sv = cast(q_dt, _param_read(s, i, attrs.axis, attrs.block_size))
        q = cast("float32", xv / sv)
        if zp is not None:
            q = q + cast("float32", _param_read(zp, i, attrs.axis, attrs.block_size))
        if attrs.saturate and out in _SATURATING:
            q = _saturate(q, out)
        return cast(out, q)

    return compute(x.shape, body, "quantize")


def _dequantize(inputs, attrs, out_type):
    x, s = inputs[0], inputs[1]
    zp = inputs[2] if len(inputs) > 2 else None
    out = out_type.dtype
    if not _dt.is_int(x.dtype):
        return _dequantize_float(x, s, zp, attrs, out)
    s_c = "float32" if s.dtype in ("float16", "bfloat16") else s.dtype
    out_c = "float32" if out in ("float16", "bfloat16") else out
    mul = "float64" if "float64" in (s_c, out_c) else "float32"

    def body(*i):
        xi = cast("int64", x[i])
        z = (
            cast("int64", _param_read(zp, i, attrs.axis, attrs.block_size))
            if zp is not None
            else E.index(0)
        )
        d = cast(mul, xi - z)
        sv = cast(mul, _param_read(s, i, attrs.axis, attrs.block_size))
        return cast(out, d * sv)

    return compute(x.shape, body, "dequantize")


def _dequantize_float(x, s, zp, attrs, out):
    s_c = "float32" if s.dtype in ("float16", "bfloat16") else s.dtype
    out_c = "float32" if out in ("float16", "bfloat16") else out
    mul = "float64" if "float64" in (s_c, out_c) else "float32"

    def body(*i):
        d = cast("float32", x[i])
        if zp is not None:
            d = d - cast("float32", _param_read(zp, i, attrs.axis, attrs.block_size))
        sv = cast(mul, _param_read(s, i, attrs.axis, attrs.block_size))
        return cast(out, cast(mul, d) * sv)

    return compute(x.shape, body, "dequantize")


# -- einsum ---------------------------------------------------------------------------------------
def _einsum(inputs, attrs, out_type):
    labels, out_labels, ell = parse_einsum(attrs.equation, [t.ndim for t in inputs])
    dtype = inputs[0].dtype
    acc = "float32" if dtype in ("float16", "bfloat16") else dtype
    extent: dict[str, object] = {}
    ell_shapes = []
    for t, lab in zip(inputs, labels):
        shape = list(t.shape)
        if "*" in lab:
            i = lab.index("*")
            k = t.ndim - (len(lab) - 1)
            ell_shapes.append(tuple(shape[i : i + k]))
            shape = shape[:i] + shape[i + k :]
            lab = lab.replace("*", "")
        for c, d in zip(lab, shape):
            old = extent.get(c)
            if (
                old is None
                or (isinstance(old, int) and old == 1)
                or (not isinstance(old, int) and isinstance(d, int) and d != 1)
            ):
                extent[c] = d  # a static extent wins over a run-time one
    from .lowering import broadcast_shape, out_shape

    ell_shape = broadcast_shape(*ell_shapes) if ell_shapes else ()
    computed = []
    for c in out_labels:
        computed.extend(ell_shape if c == "*" else (extent[c],))
    oshape = out_shape(out_type, tuple(computed))
    contracted = sorted({c for lab in labels for c in lab if c != "*" and c not in out_labels})

    def body(*o):
        env, pos = {}, 0
        ell_idx = ()
        for c in out_labels:
            if c == "*":
                ell_idx = o[pos : pos + len(ell_shape)]
                pos += len(ell_shape)
            else:
                env[c] = o[pos]
                pos += 1
        rv = [reduce_axis(extent[c], c) for c in contracted]
        env.update(zip(contracted, rv))
        prod = None
        for t, lab in zip(inputs, labels):
            idx = []
            for c in lab:
                if c == "*":
                    k = t.ndim - (len(lab) - 1)
                    # right-aligned broadcast of this input's ellipsis dims
                    mine = t.shape[len(idx) : len(idx) + k]
                    sub = ell_idx[len(ell_idx) - k :] if k else ()
                    idx.extend(
                        0 if (isinstance(d, int) and d == 1) else j for d, j in zip(mine, sub)
                    )
                else:
                    idx.append(env[c])
            v = cast(acc, t[tuple(idx)])
            prod = v if prod is None else prod * v
        return T.sum(prod, rv) if rv else prod

    s = compute(oshape, body, "einsum_acc")
    if s.dtype == dtype:
        return s
    return compute(oshape, lambda *i: cast(dtype, s[i]), "einsum")


# -- cumulative sums / products -------------------------------------------------------------------
def _scan(kind: str):
    def lower(inputs, attrs, out_type):
        x = inputs[0]
        out_dt = out_type.dtype
        acc = "float32" if out_dt in ("float16", "bfloat16") else out_dt
        if attrs.axis is None:
            x = reshape_to(x, (T.size(x.shape),), "scan_flat")
            axis = 0
        else:
            axis = attrs.axis % x.ndim
        n = x.shape[axis]

        def body(*i):
            k = reduce_axis(n, "s")
            src = list(i)
            src[axis] = k
            j = i[axis]
            if attrs.reverse:
                cond = k > j if attrs.exclusive else k >= j
            else:
                cond = k < j if attrs.exclusive else k <= j
            v = cast(acc, x[tuple(src)])
            return getattr(T, kind)(v, k, where=cond)

        s = compute(x.shape, body, f"{kind}_acc")
        return compute(x.shape, lambda *i: cast(out_dt, s[i]), kind)

    return lower


__all__ = ["cast_value", "ravel", "unravel", "broadcast_read"]
