"""Linear quantization with ONNX QuantizeLinear / DequantizeLinear semantics.

Granularity follows the scale's shape: a scalar (or one element) is per-tensor, a 1-D scale is
per-axis along `axis`, and a scale of the input's rank with `block_size` > 0 is blocked (each
scale covers `block_size` consecutive elements along `axis`). The zero point has the scale's
shape and the quantized dtype.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import OpTypeError
from ..ir import dtype as dt
from ..ir.types import TensorType
from . import relations as R
from .factories import check_kind, random_array
from .misc import SATURATING_FLOAT8
from .registry import OpDef, OpPattern, Rule, Sample, declare, register

QUANT_INT_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "int4", "uint4", "int2", "uint2")
QUANT_FLOAT_DTYPES = tuple(sorted(SATURATING_FLOAT8)) + ("float4_e2m1fn",)
QUANT_DTYPES = frozenset(d for d in QUANT_INT_DTYPES + QUANT_FLOAT_DTYPES if d in dt.DTYPES)


@dataclass(frozen=True)
class QuantizeAttrs:
    axis: int = 1  # the per-axis / blocked axis
    block_size: int = 0  # > 0: blocked quantization
    out_dtype: str | None = None  # None: the zero point's dtype, else uint8
    saturate: bool = True  # float8 outputs: clamp out-of-range values to +-max


@dataclass(frozen=True)
class DequantizeAttrs:
    axis: int = 1
    block_size: int = 0
    out_dtype: str | None = None  # None: the scale's dtype


def _check_scale(x: TensorType, s: TensorType, zp: TensorType | None, attrs, op: str) -> None:
    """Shape rules of scale / zero point against the input (static dims only)."""
    if zp is not None:
        if zp.ndim != s.ndim:
            raise OpTypeError(
                f"{op}: zero point shape {zp.shape} differs from scale shape {s.shape}"
            )
        for a, b in zip(s.shape, zp.shape):
            R.dim_unify(a, b, f"{op}: scale and zero point dims")
    if attrs.block_size < 0:
        raise OpTypeError(f"{op}: block_size must be >= 0, got {attrs.block_size}")
    if s.ndim == 0 or (s.ndim == 1 and s.shape[0] == 1 and not attrs.block_size):
        return  # per-tensor
    ax = R.normalize_axis(attrs.axis, x.ndim, f"{op} axis")
    if not attrs.block_size:
        if s.ndim != 1:
            raise OpTypeError(
                f"{op}: a per-axis scale must be 1-D (or give block_size), got {s.shape}"
            )
        R.dim_unify(s.shape[0], x.shape[ax], f"{op}: scale length and input axis {ax}")
        return
    if s.ndim != x.ndim:
        raise OpTypeError(
            f"{op}: a blocked scale must have the input's rank {x.ndim}, got {s.shape}"
        )
    for i, (a, b) in enumerate(zip(s.shape, x.shape)):
        if i != ax:
            R.dim_unify(a, b, f"{op}: scale dim {i} and input dim")
        elif isinstance(a, int) and isinstance(b, int) and a != math.ceil(b / attrs.block_size):
            raise OpTypeError(
                f"{op}: blocked scale dim {a} does not match "
                f"ceil({b} / block_size {attrs.block_size})"
            )


def expand_param(v: np.ndarray, shape, axis: int, block_size: int) -> np.ndarray:
    """Scale / zero point broadcastable to `shape` (per-tensor, per-axis or blocked)."""
    v = np.asarray(v)
    if v.ndim == 0 or v.size == 1:
        return v.reshape(())
    axis = axis % len(shape)
    if not block_size:
        dims = [1] * len(shape)
        dims[axis] = v.size
        return v.reshape(dims)
    v = np.repeat(v, block_size, axis=axis)
    return np.take(v, np.arange(shape[axis]), axis=axis)


def _float(x: np.ndarray) -> np.ndarray:
    src = dt.from_numpy(x.dtype)
    return x.astype(dt.to_numpy(dt.compute_dtype(src))) if src not in dt.NATIVE_DTYPES else x


# -- quantize -------------------------------------------------------------------------------------
def _quant_out_dtype(zp_dtype, attrs, op="qnn.quantize"):
    out = attrs.out_dtype
    if out is not None:
        R.dtype_attr(out, op, "out_dtype")
        if zp_dtype is not None and zp_dtype != out:
            raise OpTypeError(
                f"{op}: out_dtype {out} differs from the zero point's dtype {zp_dtype}"
            )
    out = out or zp_dtype or "uint8"
    if out not in QUANT_DTYPES:
        raise OpTypeError(
            f"{op}: cannot quantize to {out}; use one of {', '.join(sorted(QUANT_DTYPES))}"
        )
    return out


def _quantize_rel(args, attrs):
    x, s = R.tensor(args[0], "data"), R.tensor(args[1], "scale")
    zp = R.tensor(args[2], "zero_point") if len(args) > 2 else None
    check_kind(x, "float", "qnn.quantize")
    check_kind(s, "float", "qnn.quantize", "scale")
    out = _quant_out_dtype(zp.dtype if zp is not None else None, attrs)
    _check_scale(x, s, zp, attrs, "qnn.quantize")
    return TensorType(x.shape, out)


def quantize_array(x, scale, zp, attrs) -> np.ndarray:
    """saturate(round_half_even(x / scale) + zero_point); NaN quantizes to the zero point."""
    out = attrs.out_dtype or (dt.from_numpy(zp.dtype) if zp is not None else "uint8")
    xf, sf = _float(np.asarray(x)), _float(np.asarray(scale))
    s = expand_param(sf, xf.shape, attrs.axis, attrs.block_size)
    z = (
        0
        if zp is None
        else expand_param(_float(np.asarray(zp)), xf.shape, attrs.axis, attrs.block_size)
    )
    with np.errstate(all="ignore"):
        q = xf / s  # numpy promotion of the two dtypes sets the precision
        if dt.is_int(out):
            info = dt.iinfo(out)
            zf = np.asarray(z, np.float64)
            r = np.rint(q).astype(np.float64) + zf
            r = np.clip(np.where(np.isnan(r), zf, r), info.min, info.max)
            return np.asarray(r).astype(dt.to_numpy(out))
        q = (q + np.asarray(z, np.float32)).astype(np.float32)
        if attrs.saturate and out in SATURATING_FLOAT8:
            big = float(dt.finfo(out).max)
            q = np.clip(q, -big, big)
        return np.asarray(q).astype(dt.to_numpy(out))


def _quantize(xs, attrs):
    return quantize_array(xs[0], xs[1], xs[2] if len(xs) > 2 else None, attrs)


def _quantize_samples(rng):
    x = random_array(rng, (2, 3, 4), "float32", (-40, 40))
    per_axis = np.array([0.5, 0.25, 2.0], np.float32)
    for out in ["int8", "uint8", "int16", "uint16", "int4", "uint4", "int32"]:
        zp = np.asarray(np.array(3 if out.startswith("u") else -1)).astype(dt.to_numpy(out))
        yield Sample([x, np.array(0.3, np.float32), zp], {})
        yield Sample([x, per_axis, np.full(3, zp, dt.to_numpy(out))], {"axis": 1})
    yield Sample([x, np.array(0.1, np.float32)], {})  # no zero point: uint8
    yield Sample([x, np.array([0.5], np.float32)], {"out_dtype": "int8"})
    blocked = rng.uniform(0.1, 1.0, size=(2, 3, 2)).astype(np.float32)
    yield Sample([x, blocked, np.zeros((2, 3, 2), np.int8)], {"axis": -1, "block_size": 2})
    yield Sample(
        [x, rng.uniform(0.1, 1, (1, 3, 4)).astype(np.float32)], {"axis": 0, "block_size": 3}
    )
    special = np.array([0.0, 2.5, 3.5, -2.5, 1e9, -1e9, np.inf, np.nan], np.float32)
    for out in sorted(SATURATING_FLOAT8) + ["float4_e2m1fn", "int8", "uint8"]:
        zp = np.zeros((), dt.to_numpy(out))
        yield Sample([special, np.array(1.0, np.float32), zp], {})
        yield Sample([special, np.array(1.0, np.float32), zp], {"saturate": False})
    yield Sample(
        [random_array(rng, (5,), "float16"), np.array(0.01, np.float16)], {"out_dtype": "int8"}
    )
    yield Sample([random_array(rng, (0, 3), "float64"), np.array([1.0, 2.0, 4.0])], {})


register(
    OpDef(
        "qnn.quantize",
        _quantize_rel,
        _quantize,
        OpPattern.BROADCAST,
        QuantizeAttrs,
        (2, 3),
        "qnn.quantize(data, scale[, zero_point]): saturate(round_half_even(data / scale) + "
        "zero_point) as ONNX QuantizeLinear (per-tensor, per-axis or blocked; integer, int4 and "
        "float8 outputs)",
        samples=_quantize_samples,
    )
)
declare(
    "qnn.quantize",
    lower=Rule("relay_core.te.lower_misc:_quantize"),
    grad=Rule("relay_core.ops.grads_tensor:_g_qnn_quantize"),
)


# -- dequantize -----------------------------------------------------------------------------------
def _dequantize_rel(args, attrs):
    x, s = R.tensor(args[0], "data"), R.tensor(args[1], "scale")
    zp = R.tensor(args[2], "zero_point") if len(args) > 2 else None
    check_kind(s, "float", "qnn.dequantize", "scale")
    if x.dtype not in QUANT_DTYPES:
        raise OpTypeError(f"qnn.dequantize: cannot dequantize {x.dtype}")
    if zp is not None and zp.dtype != x.dtype:
        raise OpTypeError(
            f"qnn.dequantize: zero point dtype {zp.dtype} differs from data {x.dtype}"
        )
    _check_scale(x, s, zp, attrs, "qnn.dequantize")
    out = R.dtype_attr(attrs.out_dtype, "qnn.dequantize") if attrs.out_dtype else s.dtype
    if not dt.is_float(out):
        raise OpTypeError(f"qnn.dequantize: out_dtype must be a float type, got {out}")
    return TensorType(x.shape, out)


def dequantize_array(x, scale, zp, attrs) -> np.ndarray:
    """(x - zero_point) * scale; integer differences are exact before the multiply."""
    x = np.asarray(x)
    out = attrs.out_dtype or dt.from_numpy(np.asarray(scale).dtype)
    sf = _float(np.asarray(scale))
    mul = np.float64 if np.float64 in (sf.dtype, dt.to_numpy(dt.compute_dtype(out))) else np.float32
    s = expand_param(sf, x.shape, attrs.axis, attrs.block_size).astype(mul)
    if x.dtype.kind in "iu" or dt.is_int(dt.from_numpy(x.dtype)):
        xi = _float(x).astype(np.int64)
        z = (
            0
            if zp is None
            else expand_param(
                _float(np.asarray(zp)).astype(np.int64), x.shape, attrs.axis, attrs.block_size
            )
        )
        d = (xi - z).astype(mul)
    else:
        z = (
            0
            if zp is None
            else expand_param(_float(np.asarray(zp)), x.shape, attrs.axis, attrs.block_size)
        )
        d = (_float(x).astype(np.float32) - np.asarray(z, np.float32)).astype(mul)
    with np.errstate(all="ignore"):
        return np.asarray(d * s).astype(dt.to_numpy(out))


def _dequantize_samples(rng):
    for src in ["int8", "uint8", "int16", "int32", "int4", "uint4"]:
        x = random_array(rng, (2, 3, 4), src, (-100, 100))
        zp = np.asarray(np.array(2)).astype(dt.to_numpy(src))
        yield Sample([x, np.array(0.3, np.float32), zp], {})
        yield Sample([x, np.array([0.5, 0.25, 2.0], np.float32), np.full(3, zp)], {"axis": 1})
        yield Sample(
            [x, rng.uniform(0.1, 1, (2, 3, 2)).astype(np.float32), np.full((2, 3, 2), zp)],
            {"axis": 2, "block_size": 2},
        )
    x8 = np.array([0.5, -448, 3, np.nan], np.float32)
    for src in sorted(SATURATING_FLOAT8) + ["float4_e2m1fn"]:
        yield Sample([x8.astype(dt.to_numpy(src)), np.array(2.0, np.float32)], {})
    yield Sample([np.array([1, 2], np.uint8), np.array(0.5, np.float16)], {})
    yield Sample([np.array([1, 2], np.uint8), np.array(0.5, np.float32)], {"out_dtype": "float16"})
    yield Sample([np.zeros((0, 2), np.int8), np.array([1.0, 2.0])], {})


register(
    OpDef(
        "qnn.dequantize",
        _dequantize_rel,
        lambda xs, a: dequantize_array(xs[0], xs[1], xs[2] if len(xs) > 2 else None, a),
        OpPattern.BROADCAST,
        DequantizeAttrs,
        (2, 3),
        "qnn.dequantize(data, scale[, zero_point]): (data - zero_point) * scale as ONNX "
        "DequantizeLinear; the result has the scale's dtype unless out_dtype is given",
        samples=_dequantize_samples,
    )
)
declare(
    "qnn.dequantize",
    lower=Rule("relay_core.te.lower_misc:_dequantize"),
    grad=Rule("relay_core.ops.grads_tensor:_dequantize"),
)

__all__ = ["QUANT_DTYPES", "expand_param", "quantize_array", "dequantize_array"]
