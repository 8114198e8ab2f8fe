"""Helpers shared by the neural-network op modules: layouts, window geometry, compute dtypes.

Spatial ops (conv, pool, resize) compute in a canonical channel-first layout: data `N, C,
*spatial` and kernels `O, I, *spatial`, where spatial axes are in D, H, W order. Layout strings
name each axis with one letter ("NHWC", "HWIO"), so any permutation works.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import OpTypeError
from ..ir import dtype as dt
from ..ir.types import Any, TensorType
from . import relations as R

SPATIAL = {1: "W", 2: "HW", 3: "DHW"}
DATA_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}
CHANNEL_LAST = {1: "NWC", 2: "NHWC", 3: "NDHWC"}
KERNEL_LAYOUTS = {1: "OIW", 2: "OIHW", 3: "OIDHW"}
AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


# ---------------------------------------------------------------------------------------------
# Layouts.


def layout_axes(layout: str, nd: int, first: str, second: str, op: str, what: str) -> tuple:
    """Positions of `first`, `second` and the spatial letters (D, H, W order) in `layout`."""
    letters = first + second + SPATIAL[nd]
    if len(layout) != nd + 2 or sorted(layout) != sorted(letters):
        raise OpTypeError(
            f"{op}: unsupported {what} {layout!r}; expected a permutation of {letters!r} "
            f"such as {letters!r}"
        )
    return (layout.index(first), layout.index(second)) + tuple(layout.index(c) for c in SPATIAL[nd])


def data_axes(layout: str, nd: int, op: str, what: str = "layout") -> tuple:
    """(batch, channel, *spatial) axis positions of a data layout such as NCHW / NHWC."""
    return layout_axes(layout, nd, "N", "C", op, what)


def kernel_axes(layout: str, nd: int, op: str, first: str = "O", second: str = "I") -> tuple:
    """(out-channel, in-channel, *spatial) axis positions of a kernel layout (OIHW, HWIO, ...)."""
    return layout_axes(layout, nd, first, second, op, "kernel_layout")


def to_canonical(x: np.ndarray, axes: tuple) -> np.ndarray:
    return x if axes == tuple(range(x.ndim)) else x.transpose(axes)


def from_canonical(x: np.ndarray, axes: tuple) -> np.ndarray:
    if axes == tuple(range(x.ndim)):
        return x
    return x.transpose(np.argsort(axes))


def place(dims_canonical: tuple, axes: tuple) -> tuple:
    """Dims listed in canonical order, put at the layout's positions."""
    out = [None] * len(axes)
    for d, a in zip(dims_canonical, axes):
        out[a] = d
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Attribute normalisation.


def ntuple(v, nd: int, name: str, op: str) -> tuple:
    """A per-spatial-axis attribute: a single value is repeated for every axis."""
    v = tuple(v) if isinstance(v, (tuple, list)) else (v,)
    if len(v) == 1:
        v = v * nd
    if len(v) != nd:
        raise OpTypeError(f"{op}: {name} needs {nd} values (one per spatial axis), got {v}")
    return v


def explicit_padding(padding, nd: int, op: str) -> tuple[tuple, tuple]:
    """(begins, ends) from 1, nd (symmetric) or 2*nd (all begins, then all ends) values."""
    p = tuple(padding) if isinstance(padding, (tuple, list)) else (padding,)
    if len(p) == 1:
        b = e = p * nd
    elif len(p) == 2 * nd:
        b, e = p[:nd], p[nd:]
    elif len(p) == nd:
        b = e = p
    else:
        raise OpTypeError(f"{op}: padding needs 1, {nd} or {2 * nd} values, got {len(p)}: {p}")
    if any(v < 0 for v in p):
        raise OpTypeError(f"{op}: padding must not be negative, got {p}")
    return tuple(b), tuple(e)


def check_choice(value: str, choices, name: str, op: str) -> None:
    if value not in choices:
        raise OpTypeError(
            f"{op}: {name} must be one of {', '.join(map(repr, choices))}, got {value!r}"
        )


def check_positive(vals: tuple, name: str, op: str) -> None:
    if any(v < 1 for v in vals):
        raise OpTypeError(f"{op}: {name} must be positive, got {vals}")


# ---------------------------------------------------------------------------------------------
# Window geometry (conv and pooling).


def same_pads(n: int, k: int, s: int, d: int, lower: bool) -> tuple[int, int]:
    """ONNX / TF "SAME" padding: output ceil(n / s); the odd pixel goes at the end (UPPER)."""
    out = -(-n // s)
    total = max(0, (out - 1) * s + d * (k - 1) + 1 - n)
    small = total // 2
    return (total - small, small) if lower else (small, total - small)


def resolve_pads(auto_pad: str, padding, in_dims, kernel, strides, dilation, op: str):
    """Per-axis (begin, end) pads; None for an axis whose SAME padding is not known yet."""
    nd = len(in_dims)
    check_choice(auto_pad, AUTO_PADS, "auto_pad", op)
    if auto_pad == "NOTSET":
        b, e = explicit_padding(padding, nd, op)
        return list(zip(b, e))
    if auto_pad == "VALID":
        return [(0, 0)] * nd
    out = []
    for n, k, s, d in zip(in_dims, kernel, strides, dilation):
        if R.is_int(n) and R.is_int(k):
            out.append(same_pads(n, k, s, d, auto_pad == "SAME_LOWER"))
        else:
            out.append(None)
    return out


def window_out_dim(n, k, s: int, d: int, pad, ceil_mode: bool, auto_pad: str, op: str, axis: int):
    """Output length of a sliding window along one axis (Any when unknown)."""
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        return -(-n // s) if R.is_int(n) else Any
    if not (R.is_int(n) and R.is_int(k)) or pad is None:
        return Any
    pb, pe = pad
    eff = d * (k - 1) + 1
    span = n + pb + pe - eff
    if span < 0 and not (ceil_mode and span > -s):  # ceil mode: one window past the end
        raise OpTypeError(
            f"{op}: window of size {eff} (kernel {k}, dilation {d}) does not fit spatial axis "
            f"{axis} of size {n} with padding ({pb}, {pe})"
        )
    if ceil_mode:
        out = -(-span // s) + 1
        if (out - 1) * s >= n + pb:  # the last window must start inside the input or left pad
            out -= 1
        return out
    return span // s + 1


def fit_window(n, k: int, d: int, pad, out) -> int:
    """The window length that matters along one axis: a single ceil-mode window longer than
    the padded input (HF EfficientNet pools 7x7 with a 2560x2560 window, ceil_mode) reads its
    taps past the end from the overhang, which neither adds nor counts: they are dropped."""
    if out != 1 or not R.is_int(n) or pad is None:
        return k
    limit = n + pad[0] + pad[1]
    return min(k, -(-limit // d))


def windows(xp: np.ndarray, kernel, strides, dilation, out) -> np.ndarray:
    """A read-only view (..., *out, *kernel) of the sliding windows over xp's trailing axes."""
    nd = len(kernel)
    st = xp.strides[-nd:]
    shape = xp.shape[:-nd] + tuple(out) + tuple(kernel)
    strides_ = (
        xp.strides[:-nd]
        + tuple(a * s for a, s in zip(st, strides))
        + tuple(a * d for a, d in zip(st, dilation))
    )
    return np.lib.stride_tricks.as_strided(xp, shape, strides_, writeable=False)


def pad_spatial(x: np.ndarray, pads, value=0) -> np.ndarray:
    """Pad the trailing len(pads) axes by (begin, end) pairs."""
    if all(b == 0 and e == 0 for b, e in pads):
        return x
    width = [(0, 0)] * (x.ndim - len(pads)) + [tuple(p) for p in pads]
    return np.pad(x, width, constant_values=value)


# ---------------------------------------------------------------------------------------------
# Dtypes.


def compute_float(dtype: str) -> np.dtype:
    """The numpy dtype float math runs in: float32 for float16 / bfloat16 / float8, else itself."""
    return np.dtype(np.float64) if dtype == "float64" else np.dtype(np.float32)


def to_float(x: np.ndarray) -> np.ndarray:
    cd = compute_float(dt.from_numpy(x.dtype))
    return x if x.dtype == cd else x.astype(cd)


def to_f64(x: np.ndarray) -> np.ndarray:
    """Sums run in float64 (complex128) and round once: the result does not depend on the
    order numpy's SIMD loops add in."""
    if x.dtype.kind == "c":
        return x.astype(np.complex128, copy=False)
    return x.astype(np.float64, copy=False)


def accumulate_dtype(*dtypes: str) -> np.dtype:
    """Dtype for sums of products: exact for integers (float64 holds 8/16-bit products);
    float64 for floats too, rounded once at the end. A float32 BLAS product sums each output
    in an order that depends on its position and on the CPU's kernel (rows at a tile's edge
    differ), so equal dot products could come out unequal; in float64 they round alike."""
    if any(d.startswith("complex") for d in dtypes):
        return np.dtype(np.complex128)
    if all(dt.is_float(d) for d in dtypes):
        return np.dtype(np.float64)
    if all(dt.bits(d) <= 16 for d in dtypes):
        return np.dtype(np.float64)
    return np.dtype(np.int64)


def cast_result(y: np.ndarray, dtype: str) -> np.ndarray:
    """Cast an accumulated result to the op's dtype (float accumulators round for int outputs)."""
    target = dt.to_numpy(dtype)
    if dt.is_int(dtype) and y.dtype.kind == "f":
        y = np.rint(y).astype(np.int64)
    return y.astype(target, copy=False)


def check_mixed_dtypes(a: TensorType, b: TensorType, op: str, what=("data", "weight")) -> None:
    """Float operands share one dtype; integer operands may mix (uint8 x int8 as ONNX allows)."""
    if dt.is_float(a.dtype) and a.dtype == b.dtype:
        return
    if dt.is_int(a.dtype) and dt.is_int(b.dtype):
        return
    raise OpTypeError(
        f"{op}: {what[0]} ({a.dtype}) and {what[1]} ({b.dtype}) must be floats of one dtype "
        "or both integers"
    )


def result_dtype(data_dtype: str, out_dtype: str, op: str) -> str:
    if not out_dtype:
        return data_dtype
    try:
        dt.check_dtype(out_dtype)
    except ValueError as e:
        raise OpTypeError(f"{op}: out_dtype: {e}") from None
    return out_dtype


def prod_int(vals) -> int:
    return math.prod(int(v) for v in vals)


def n_first(layout_attr: str, out_attr: str):
    """`OpDef.batch_axis0` of window ops: axis 0 is the batch when the data layout and the
    output layout both start with N."""

    def pred(attrs) -> bool:
        lay = getattr(attrs, layout_attr)
        return lay[0] == "N" and (getattr(attrs, out_attr) or lay)[0] == "N"

    return pred
