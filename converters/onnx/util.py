"""Small expression builders shared by the ONNX converter families."""

from __future__ import annotations

import numpy as np

from relay_core.ir import Expr
from relay_core.ir import dtype as dt


def binary_op(ctx, name: str, a: Expr, b: Expr) -> Expr:
    """A broadcasting binary op (ONNX multidirectional broadcasting is numpy's)."""
    return ctx.call(name, a, b)


def cast(ctx, x: Expr, dtype: str) -> Expr:
    """`x` as `dtype` (no op when it already is)."""
    if ctx.dtype(x) == dtype:
        return x
    return ctx.call("cast", x, dtype=dtype)


def cast_like_value(ctx, value, like: Expr) -> Expr:
    """A constant of `like`'s dtype."""
    return ctx.const(np.asarray(value).astype(dt.to_numpy(ctx.dtype(like))))


def scalar_like(ctx, value, like: Expr) -> Expr:
    """A scalar constant of `like`'s dtype."""
    return ctx.const(np.array(value).astype(dt.to_numpy(ctx.dtype(like))))


def scalar(ctx, value, dtype: str) -> Expr:
    return ctx.const(np.array(value).astype(dt.to_numpy(dtype)))


def normalize_axis(ctx, axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < max(rank, 1):
        raise ctx.error(f"{what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis
