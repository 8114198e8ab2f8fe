"""Bit-level views of a tensor in another dtype.

- bitcast: the bytes of each element as another dtype, splitting or joining the last axis when
  the widths differ (TF Bitcast; Keras uses it for signbit);
- reinterpret: the same bits read as a dtype of the same bit width (ONNX BitCast), sub-byte
  and bool types included.

Both lower to a byte copy that the backend may alias (backend/lower_loops.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import OpTypeError
from ..ir import dtype as dt
from ..ir.types import TensorType
from . import relations as R
from .factories import random_array
from .registry import OpDef, OpPattern, Rule, Sample, declare, register


@dataclass(frozen=True)
class BitcastAttrs:
    dtype: str = "int32"


def bitcast_shape(shape: tuple, src: str, dst: str, op: str = "bitcast") -> tuple:
    """TF Bitcast's shape rule: equal sizes keep the shape; a wider source gains a last dim of
    size ratio; a narrower source must end in a dim of size ratio, which goes."""
    a, b = dt.itemsize(src), dt.itemsize(dst)
    if a == b:
        return tuple(shape)
    if a > b:
        if a % b:
            raise OpTypeError(f"{op}: cannot bitcast {src} to {dst}")
        return tuple(shape) + (a // b,)
    if b % a or not shape:
        raise OpTypeError(f"{op}: cannot bitcast {src} to {dst} (sizes {a} and {b})")
    last = shape[-1]
    if isinstance(last, int) and last != b // a:
        raise OpTypeError(
            f"{op}: bitcasting {src} to {dst} needs a last dim of {b // a}, got {last}"
        )
    return tuple(shape[:-1])


def _bitcast_rel(args, attrs):
    t = R.tensor(args[0])
    dst = R.dtype_attr(attrs.dtype, "bitcast")
    for d in (t.dtype, dst):
        if d in ("bool", "string") or dt.bits(d) % 8:
            raise OpTypeError(f"bitcast: {d} has no byte representation to reinterpret")
    return TensorType(bitcast_shape(t.shape, t.dtype, dst), dst)


def _bitcast_ref(xs, attrs):
    x = np.ascontiguousarray(xs[0])
    src = dt.from_numpy(x.dtype)
    shape = bitcast_shape(x.shape, src, attrs.dtype)
    return x.view(dt.to_numpy(attrs.dtype)).reshape(shape)


def _bitcast_samples(rng):
    yield Sample([random_array(rng, (3, 4), "float32")], {"dtype": "int32"})
    yield Sample([np.array([0.0, -0.0, 1.5, -2.0], np.float32)], {"dtype": "uint32"})
    yield Sample([random_array(rng, (5,), "int32", (-100, 100))], {"dtype": "float32"})
    yield Sample([random_array(rng, (2, 3), "float64")], {"dtype": "int64"})
    yield Sample([random_array(rng, (2,), "float32")], {"dtype": "uint8"})  # adds a dim of 4
    yield Sample([random_array(rng, (3, 2), "int16")], {"dtype": "int32"})  # drops the 2
    yield Sample([random_array(rng, (0, 4), "float16")], {"dtype": "int16"})


register(
    OpDef(
        "bitcast",
        _bitcast_rel,
        _bitcast_ref,
        OpPattern.INJECTIVE,
        BitcastAttrs,
        (1, 1),
        "reinterpret the bytes of each element as `dtype` (TF Bitcast): equal sizes keep the "
        "shape, a wider source gains a last dim of the size ratio, a narrower one loses it",
        samples=_bitcast_samples,
    )
)
declare("bitcast", lower=Rule("relay_core.backend.lower_loops:_byte_copy"), view=True)


# -- reinterpret -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReinterpretAttrs:
    dtype: str = "float32"


def _reinterpret_rel(args, attrs):
    t = R.tensor(args[0])
    R.dtype_attr(attrs.dtype, "reinterpret")
    if "string" in (t.dtype, attrs.dtype) or dt.bits(t.dtype) != dt.bits(attrs.dtype):
        raise OpTypeError(
            f"reinterpret needs types of one bit width, got {t.dtype} and {attrs.dtype}"
        )
    return TensorType(t.shape, attrs.dtype)


def _reinterpret_samples(rng):
    yield Sample([random_array(rng, (2, 3), "float32")], {"dtype": "int32"})
    yield Sample([random_array(rng, (4,), "int16")], {"dtype": "float16"})
    yield Sample([random_array(rng, (3,), "uint8")], {"dtype": "int8"})
    yield Sample([random_array(rng, (2, 2), "int32")], {"dtype": "float32"})


register(
    OpDef(
        "reinterpret",
        _reinterpret_rel,
        lambda xs, a: xs[0].view(dt.to_numpy(a.dtype)).copy(),
        OpPattern.ELEMWISE,
        ReinterpretAttrs,
        (1, 1),
        "the same bits read as another dtype of the same width (ONNX BitCast)",
        samples=_reinterpret_samples,
    )
)
declare("reinterpret", lower=Rule("relay_core.backend.lower_loops:_byte_copy"), view=True)
