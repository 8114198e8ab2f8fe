"""Ops that gradient rules need and no framework op provides: collapse_sum_like."""

from __future__ import annotations

import numpy as np

from ..errors import OpTypeError
from ..ir.types import TensorType
from . import relations as R
from .factories import random_array
from .registry import OpDef, OpPattern, Rule, Sample, declare, register


def collapse_sum_array(x: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum `x` down to `shape`: the inverse of broadcasting `shape` to `x.shape`."""
    lead = x.ndim - len(shape)
    if lead < 0:
        raise ValueError(f"cannot collapse shape {x.shape} to the longer {shape}")
    axes = list(range(lead))
    for i, d in enumerate(shape):
        if d == 1 and x.shape[lead + i] != 1:
            axes.append(lead + i)
    out = x.sum(axis=tuple(axes), keepdims=True) if axes else x
    return np.array(out.reshape(shape), dtype=x.dtype)


def _collapse_rel(args, attrs):
    t, like = R.tensor(args[0]), R.tensor(args[1], "collapse_type")
    if like.ndim > t.ndim:
        raise OpTypeError(
            f"collapse_sum_like: the target rank {like.ndim} exceeds the input rank {t.ndim}"
        )
    # The target must broadcast to the input.
    R.broadcast_shapes(t.shape, like.shape)
    return TensorType(like.shape, t.dtype)


def _collapse_samples(rng):
    for shape, like in [
        ((3, 4), (4,)),
        ((2, 3, 4), (3, 1)),
        ((5,), (5,)),
        ((2, 3), ()),
        ((2, 1, 3), (1, 1, 3)),
        ((0, 3), (3,)),
    ]:
        for dtype in ("float32", "float64", "int32"):
            yield Sample([random_array(rng, shape, dtype), random_array(rng, like, "float32")])


register(
    OpDef(
        "collapse_sum_like",
        _collapse_rel,
        lambda xs, a: collapse_sum_array(xs[0], xs[1].shape),
        OpPattern.COMM_REDUCE,
        None,
        (2, 2),
        "sum data down to the shape of the second argument (the adjoint of broadcasting)",
        samples=_collapse_samples,
    )
)
declare(
    "collapse_sum_like",
    lower=Rule("relay_core.te.lower_reduce:_collapse_sum_like"),
    grad=Rule("relay_core.ops.grads_tensor:_collapse"),
)
