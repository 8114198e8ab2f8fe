"""Small helpers shared by the TF converter modules."""

from __future__ import annotations

import numpy as np

from relay_core.ir import Any
from relay_core.ir import dtype as dt


def ints(ctx, e, what: str) -> list[int]:
    """A static integer tensor (scalar or 1-D) as a list of ints."""
    v = ctx.value(e)
    if v is None:  # e.g. min(10, max(10, f(x))): known although x is not
        p = ctx.partial(e)
        if p is not None and all(isinstance(d, int) for d in p):
            return list(p)
    return [int(v) for v in np.asarray(ctx.require_value(e, what)).reshape(-1)]


def axes(ctx, e, ndim: int, what: str = "axis") -> tuple[int, ...]:
    """A static axis tensor as sorted, non-negative axes (duplicates removed)."""
    out = []
    for a in ints(ctx, e, what):
        if not -ndim <= a < max(ndim, 1):
            raise ctx.error(f"{what} {a} is out of range for a tensor of rank {ndim}")
        out.append(a % ndim if ndim else 0)
    return tuple(sorted(set(out)))


def scalar_like(ctx, value, x):
    """A scalar constant with the dtype of expression `x`."""
    return ctx.const(np.asarray(value, dtype=dt.to_numpy(ctx.dtype(x))))


def as_bool_scalar(ctx, c):
    """A TF predicate (bool or numeric, scalar or one element) as a bool scalar."""
    t = ctx.tensor_type(c)
    if t.dtype != "bool":
        c = ctx.call("not_equal", c, scalar_like(ctx, 0, c))
    if t.ndim:
        c = ctx.call("reshape", c, newshape=())
    return c


def refine(ctx, x, dims):
    """`x` (whose type may have Any dims) with the dims known in `dims` (ints or None) made
    static in its type, by a reshape that copies the unknown ones (0 = keep the input's dim)."""
    t = ctx.tensor_type(x)
    if len(dims) != t.ndim:
        return x
    if all(d is None or (isinstance(s, int) and s == d) for d, s in zip(dims, t.shape)):
        return x
    if None not in dims:
        return ctx.call("reshape", x, newshape=tuple(dims), allowzero=True)
    if 0 in dims:  # a literal 0 and copies cannot be mixed
        return x
    return ctx.call("reshape", x, newshape=tuple(0 if d is None else d for d in dims))


def shape_dims(ctx, e, symbolic: bool = False):
    """A shape tensor's elements: ints or None (unknown), or None when its length is unknown.
    With `symbolic`, run-time dims of known tensors stay `SymDim`s."""
    from .static import SymDim

    p = ctx.partial(e)
    if p is None:
        return None
    return [
        v
        if isinstance(v, SymDim) and symbolic
        else int(v)
        if isinstance(v, (int, np.integer))
        else None
        for v in p
    ]


def dim_or_any(d):
    return Any if d is None else d


def dynamic_shape(ctx, e):
    """A shape tensor as int64 (what the dyn.* ops take)."""
    return e if ctx.dtype(e) == "int64" else ctx.call("cast", e, dtype="int64")


def cast_to(ctx, x, dtype: str):
    return x if ctx.dtype(x) == dtype else ctx.call("cast", x, dtype=dtype)


def reduce_call(ctx, op: str, x, axis_e, keep_dims: bool):
    """A Relay reduction over a TF axis tensor; an empty axis list is the identity."""
    nd = ctx.ndim(x)
    ax = axes(ctx, axis_e, nd)
    return ctx.call(op, x, axis=ax, keepdims=bool(keep_dims))
