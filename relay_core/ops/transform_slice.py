"""strided_slice with ONNX Slice semantics; the shape rules are shared with dyn.strided_slice."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import OpTypeError
from ..ir.types import Any, TensorType
from . import relations as R
from .factories import random_array
from .registry import OpDef, OpPattern, Rule, Sample, declare, register
from .transform_reshape import as_contiguous

# Ends at least this large mean "to the end of the axis" whatever its size (ONNX uses INT_MAX).
BIG = 2**31 - 1


def slice_axis(dim: int, b: int, e: int, s: int) -> tuple[slice, int]:
    """ONNX Slice on one axis of static size: (python slice, result length).

    Negative b / e count from the end; then, for s > 0, b and e clamp to [0, dim]; for s < 0, b
    clamps to [0, dim - 1] and e to [-1, dim - 1] (-1: before the first element).
    """
    if s == 0:
        raise OpTypeError("strided_slice: a stride cannot be 0")
    b = b + dim if b < 0 else b
    e = e + dim if e < 0 else e
    if s > 0:
        b, e = min(max(b, 0), dim), min(max(e, 0), dim)
        return slice(b, e, s), max(0, -(-(e - b) // s))
    if dim == 0:
        return slice(0, 0, 1), 0
    b, e = min(max(b, 0), dim - 1), min(max(e, -1), dim - 1)
    return slice(b, e if e >= 0 else None, s), max(0, -(-(b - e) // -s))


def _slice_len(dim, b, e, s):
    if isinstance(dim, int):
        return slice_axis(dim, b, e, s)[1]
    # Unknown size: only "the whole axis" (forwards or backwards) is known.
    if s == 1 and (b == 0 or b <= -BIG) and e >= BIG:
        return dim
    if s == -1 and (b == -1 or b >= BIG) and e <= -BIG:
        return dim
    return Any


@dataclass(frozen=True)
class StridedSliceAttrs:
    begin: tuple[int, ...] = ()
    end: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()  # missing strides are 1
    axes: tuple[int, ...] | None = None  # None: begin/end/strides apply to axes 0, 1, ...
    slice_mode: str = "end"  # "size": end holds sizes (-1: to the end); strides are ignored


def slice_plan(shape, begin, end, strides, axes, mode="end", op="strided_slice"):
    """Per sliced axis: (axis, begin, end, stride), ONNX-style, with defaults filled in."""
    nd = len(shape)
    if mode not in ("end", "size"):
        raise OpTypeError(f"{op}: slice_mode must be 'end' or 'size', got {mode!r}")
    n = len(axes) if axes is not None else max(len(begin), len(end))
    if axes is not None:
        axes = R.normalize_axes(axes, nd)
    elif n > nd:
        raise OpTypeError(f"{op}: {n} begin / end values for a tensor of rank {nd}")
    plan = []
    for k in range(n):
        ax = axes[k] if axes is not None else k
        s = 1 if mode == "size" else (strides[k] if k < len(strides) else 1)
        if s == 0:
            raise OpTypeError(f"{op}: a stride cannot be 0")
        b = begin[k] if k < len(begin) else (0 if s > 0 else BIG)
        e = end[k] if k < len(end) else (BIG if s > 0 else -BIG - 1)
        if mode == "size":
            d = shape[ax]
            if b < 0 and isinstance(d, int):
                b = max(b + d, 0)
            if e < 0:
                e = BIG
            elif b >= 0:
                e = b + e
            elif isinstance(d, int):
                e = b + e + d
            else:
                e = Any  # negative begin on an unknown size: unknown end
        plan.append((ax, b, e, s))
    return plan


def strided_slice_shape(shape, plan) -> tuple:
    out = list(shape)
    for ax, b, e, s in plan:
        out[ax] = Any if e is Any else _slice_len(shape[ax], b, e, s)
    return tuple(out)


def strided_slice_array(x: np.ndarray, plan) -> np.ndarray:
    idx = [slice(None)] * x.ndim
    for ax, b, e, s in plan:
        idx[ax] = slice_axis(x.shape[ax], b, e, s)[0]
    return as_contiguous(x[tuple(idx)])


def _ss_plan(shape, a):
    return slice_plan(shape, a.begin, a.end, a.strides, a.axes, a.slice_mode)


def _ss_rel(args, attrs):
    t = R.tensor(args[0])
    return TensorType(strided_slice_shape(t.shape, _ss_plan(t.shape, attrs)), t.dtype)


def _ss_samples(rng):
    x = random_array(rng, (5, 6, 7), "float32")
    cases = [
        {"begin": (1,), "end": (3,)},
        {"begin": (0, 1), "end": (5, -1), "strides": (2, 1)},
        {"begin": (-1,), "end": (-BIG - 1,), "strides": (-1,)},
        {"begin": (4,), "end": (0,), "strides": (-2,)},
        {"begin": (-100,), "end": (100,)},
        {"begin": (0,), "end": (BIG,), "axes": (2,)},
        {"begin": (10,), "end": (20,)},
        {"begin": (2, 0), "end": (2, 3), "axes": (-1, 0)},
        {"begin": (3,), "end": (1,)},
        {"begin": (0, 0, 0), "end": (1, 2, 3), "strides": (1, 2, 3)},
        {"begin": (1, -3), "end": (2, -1), "slice_mode": "size"},
        {"begin": (-2,), "end": (1,), "axes": (1,), "slice_mode": "size"},
        {"begin": (BIG,), "end": (-BIG - 1,), "strides": (-3,), "axes": (1,)},
        {"begin": (-1,), "end": (-9,), "strides": (-1,), "axes": (2,)},
    ]
    for kw in cases:
        yield Sample([x], kw)
    yield Sample([random_array(rng, (0, 3), "int32")], {"begin": (0, 1), "end": (1, 3)})
    yield Sample(
        [random_array(rng, (0, 3), "int32")], {"begin": (-1,), "end": (-5,), "strides": (-1,)}
    )
    yield Sample([random_array(rng, (1,), "bool")], {"begin": (0,), "end": (1,)})


register(
    OpDef(
        "strided_slice",
        _ss_rel,
        lambda xs, a: strided_slice_array(xs[0], _ss_plan(xs[0].shape, a)),
        OpPattern.INJECTIVE,
        StridedSliceAttrs,
        (1, 1),
        "ONNX Slice: negative begin / end count from the end, then clamp; negative strides walk "
        "backwards; ends >= 2**31 - 1 mean the end of the axis",
        samples=_ss_samples,
    )
)
declare(
    "strided_slice",
    lower=Rule("relay_core.te.lower_transform:_strided_slice"),
    grad=Rule("relay_core.ops.grads_tensor:gather_rule", "strided_slice", (0,)),
)


__all__ = ["BIG", "slice_axis", "slice_plan", "strided_slice_shape", "strided_slice_array"]
