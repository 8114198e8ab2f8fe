"""Joining and splitting tensors along an axis: concatenate, stack, split."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import EvalError, OpTypeError
from ..ir.types import Any, TensorType, TupleType
from . import relations as R
from .factories import random_array
from .registry import OpDef, OpPattern, Rule, Sample, declare, register
from .transform_reshape import as_contiguous, expand_dims_shape


@dataclass(frozen=True)
class AxisAttrs:
    axis: int = 0


def _concat_rel(args, attrs):
    ts = [R.tensor(a, f"input {i}") for i, a in enumerate(args)]
    dtype = R.same_dtype(ts, "concatenate inputs")
    nd = ts[0].ndim
    if nd == 0 or any(t.ndim != nd for t in ts):
        raise OpTypeError(f"concatenate needs inputs of one rank >= 1, got {[t.ndim for t in ts]}")
    ax = R.normalize_axis(attrs.axis, nd)
    shape = list(ts[0].shape)
    for t in ts[1:]:
        for i, d in enumerate(t.shape):
            if i == ax:
                shape[i] = R.dim_add(shape[i], d)
            else:
                shape[i] = R.dim_unify(shape[i], d, f"concatenate: dims {i} of the inputs")
    return TensorType(tuple(shape), dtype)


def _concat_samples(rng):
    for dtype in ["float32", "int64", "bool"]:
        for shapes, axis in [
            ([(7,)], 0),
            ([(3,), (4,)], 0),
            ([(2, 3), (2, 1), (2, 5)], -1),
            ([(0, 3), (2, 3)], 0),
            ([(1, 2, 3), (4, 2, 3)], 0),
            ([(2, 3), (2, 0)], 1),
        ]:
            yield Sample([random_array(rng, s, dtype) for s in shapes], {"axis": axis})


register(
    OpDef(
        "concatenate",
        _concat_rel,
        lambda xs, a: np.concatenate(xs, axis=a.axis),
        OpPattern.INJECTIVE,
        AxisAttrs,
        (1, None),
        "concatenate(*xs, axis): join tensors of one rank along an existing axis",
        samples=_concat_samples,
    )
)
declare(
    "concatenate",
    lower=Rule("relay_core.te.lower_transform:_concatenate"),
    grad=Rule("relay_core.ops.grads_tensor:_concatenate"),
)


def _stack_rel(args, attrs):
    ts = [R.tensor(a, f"input {i}") for i, a in enumerate(args)]
    dtype = R.same_dtype(ts, "stack inputs")
    nd = ts[0].ndim
    if any(t.ndim != nd for t in ts):
        raise OpTypeError(f"stack needs inputs of one rank, got {[t.ndim for t in ts]}")
    shape = list(ts[0].shape)
    for t in ts[1:]:
        shape = [R.dim_unify(a, b, "stack: input dims") for a, b in zip(shape, t.shape)]
    shape = list(expand_dims_shape(tuple(shape), attrs.axis))
    ax = attrs.axis + nd + 1 if attrs.axis < 0 else attrs.axis
    shape[ax] = len(ts)
    return TensorType(tuple(shape), dtype)


def _stack_samples(rng):
    for dtype in ["float32", "int32"]:
        for shapes, axis in [
            ([()], 0),
            ([(), ()], -1),
            ([(3,), (3,)], 1),
            ([(2, 3)] * 3, 0),
            ([(2, 3)] * 2, -1),
            ([(0, 2), (0, 2)], 1),
        ]:
            yield Sample([random_array(rng, s, dtype) for s in shapes], {"axis": axis})


register(
    OpDef(
        "stack",
        _stack_rel,
        lambda xs, a: np.stack(xs, axis=a.axis),
        OpPattern.INJECTIVE,
        AxisAttrs,
        (1, None),
        "stack(*xs, axis): join tensors of one shape along a new axis",
        samples=_stack_samples,
    )
)
declare(
    "stack",
    lower=Rule("relay_core.te.lower_transform:_stack"),
    grad=Rule("relay_core.ops.grads_tensor:_stack"),
)


@dataclass(frozen=True)
class SplitAttrs:
    indices_or_sections: int | tuple[int, ...] = 1  # equal sections, or split points
    axis: int = 0


def split_sizes(dim, ios, op="split") -> list:
    """Section sizes along an axis of size `dim` (int sections must divide it)."""
    if isinstance(ios, int):
        if ios < 1:
            raise OpTypeError(f"{op}: the number of sections must be >= 1, got {ios}")
        if isinstance(dim, int):
            if dim % ios:
                raise OpTypeError(f"{op}: axis of size {dim} does not split into {ios} equal parts")
            return [dim // ios] * ios
        return [R.dim_div(dim, ios)] * ios  # 2*n in two: n each
    idx = list(ios)
    if any(i < 0 for i in idx) or any(b < a for a, b in zip(idx, idx[1:])):
        raise OpTypeError(f"{op}: split indices must be non-negative and non-decreasing, got {idx}")
    if isinstance(dim, int) and idx and idx[-1] > dim:
        raise OpTypeError(f"{op}: split index {idx[-1]} is beyond the axis size {dim}")
    bounds = [0] + idx
    sizes = [b - a for a, b in zip(bounds, bounds[1:])]
    # The last part runs to the end of the axis.
    sizes.append(dim - bounds[-1] if isinstance(dim, int) else (dim if bounds[-1] == 0 else Any))
    return sizes


def _split_rel(args, attrs):
    t = R.tensor(args[0])
    ax = R.normalize_axis(attrs.axis, t.ndim)
    if t.ndim == 0:
        raise OpTypeError("split needs a tensor of rank >= 1")
    out = []
    for size in split_sizes(t.shape[ax], attrs.indices_or_sections):
        shape = list(t.shape)
        shape[ax] = size
        out.append(TensorType(tuple(shape), t.dtype))
    return TupleType(tuple(out))


def _split_ref(xs, attrs):
    x = xs[0]
    ax = attrs.axis % x.ndim
    sizes = split_sizes(x.shape[ax], attrs.indices_or_sections)
    if isinstance(attrs.indices_or_sections, tuple) and sum(sizes) != x.shape[ax]:
        raise EvalError(f"split indices {attrs.indices_or_sections} exceed axis size {x.shape[ax]}")
    return tuple(as_contiguous(p) for p in np.split(x, np.cumsum(sizes)[:-1], axis=ax))


def _split_samples(rng):
    for shape, ios, axis in [
        ((6,), 3, 0),
        ((7,), 1, 0),
        ((3, 4), (1,), 0),
        ((3, 4), (1, 3), -1),
        ((3, 4), (0, 0, 4), 1),
        ((2, 6, 1), 2, 1),
        ((0, 4), 2, 1),
        ((0, 4), (0,), 0),
        ((5,), (), 0),
    ]:
        yield Sample(
            [random_array(rng, shape, "float32")], {"indices_or_sections": ios, "axis": axis}
        )


register(
    OpDef(
        "split",
        _split_rel,
        _split_ref,
        OpPattern.INJECTIVE,
        SplitAttrs,
        (1, 1),
        "split into equal sections (int) or at the given indices (tuple); returns a tuple",
        samples=_split_samples,
    )
)
declare(
    "split",
    lower=Rule("relay_core.te.lower_transform:_split"),
    grad=Rule("relay_core.ops.grads_tensor:_split"),
)


__all__ = ["split_sizes"]
