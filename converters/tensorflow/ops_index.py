"""Slicing and indexing: StridedSlice (every mask), Slice, Gather(V2), GatherNd, ScatterNd and
the TensorScatter* family."""

from __future__ import annotations

import numpy as np

from relay_core.ops.transform_slice import BIG

from .table import TF
from .util import dynamic_shape, ints, refine


def _bit(mask: int, i: int) -> bool:
    return bool((mask >> i) & 1)


def dense_spec(ndim, nspec, ellipsis_mask, new_axis_mask, shrink_axis_mask):
    """TF's sparse slice spec as a list of entries, in output order (shrunk dims included):
    ("new",) for an inserted axis, or ("dim", input_axis, spec_index | None, shrink)."""
    real = sum(1 for i in range(nspec) if not _bit(ellipsis_mask, i) and not _bit(new_axis_mask, i))
    entries, axis, seen_ellipsis = [], 0, False
    for i in range(nspec):
        if _bit(ellipsis_mask, i) and not seen_ellipsis:
            seen_ellipsis = True
            for _ in range(max(ndim - real, 0)):
                entries.append(("dim", axis, None, False))
                axis += 1
        elif _bit(new_axis_mask, i):
            entries.append(("new",))
        elif not _bit(ellipsis_mask, i):
            entries.append(("dim", axis, i, _bit(shrink_axis_mask, i)))
            axis += 1
    if axis > ndim:
        raise ValueError(f"the slice spec indexes {axis} axes of a rank-{ndim} tensor")
    while axis < ndim:
        entries.append(("dim", axis, None, False))
        axis += 1
    return entries


def _elements(ctx, e, n):
    """Elements of a 1-D int tensor: ints where known, None where not."""
    p = ctx.partial(e)
    if p is None or len(p) != n:
        return [None] * n
    return [None if v is None else int(v) for v in p]


@TF.register("StridedSlice")
def StridedSlice(
    ctx,
    x,
    begin,
    end,
    strides,
    begin_mask=0,
    end_mask=0,
    ellipsis_mask=0,
    new_axis_mask=0,
    shrink_axis_mask=0,
):
    shape = ctx.shape_of(x)
    nd = len(shape)
    st = ints(ctx, strides, "strides")
    n = len(st)
    try:
        spec = dense_spec(nd, n, ellipsis_mask, new_axis_mask, shrink_axis_mask)
    except ValueError as e:
        raise ctx.error(str(e)) from None
    bs, es = _elements(ctx, begin, n), _elements(ctx, end, n)
    static, dynamic, takes = [], [], []  # (axis, b, e, s) / (axis, spec index, s) / (axis, i)
    for entry in spec:
        if entry[0] != "dim" or entry[2] is None:
            continue
        _, ax, i, shrink = entry
        s = st[i]
        if s == 0:
            raise ctx.error("a stride of StridedSlice is 0")
        if shrink:
            b = bs[i]
            if b is None:
                takes.append((ax, i))
                continue
            d = shape[ax]
            if isinstance(d, int) and not -d <= b < d:
                raise ctx.error(f"index {b} is out of range for axis {ax} of size {d}")
            static.append((ax, b, b + 1 if b != -1 else BIG, 1))
            continue
        b = (0 if s > 0 else BIG) if _bit(begin_mask, i) else bs[i]
        e = (BIG if s > 0 else -BIG - 1) if _bit(end_mask, i) else es[i]
        if b is None or e is None:
            dynamic.append((ax, i, s))
        else:
            static.append((ax, b, e, s))
    y = x
    if static:
        static = [t for t in static if not (t[1] == 0 and t[2] >= BIG and t[3] == 1)]
    if static:
        y = ctx.call(
            "strided_slice",
            y,
            begin=tuple(t[1] for t in static),
            end=tuple(t[2] for t in static),
            strides=tuple(t[3] for t in static),
            axes=tuple(t[0] for t in static),
        )
    if dynamic:
        y = _dynamic_slice(ctx, y, begin, end, dynamic, begin_mask, end_mask)
    for ax, i in sorted(takes, reverse=True):
        idx = ctx.call("take", begin, ctx.const(np.asarray(i, np.int64)), axis=0)
        y = ctx.call("take", y, idx, axis=ax, mode="fast")
    shrunk = [e[1] for e in spec if e[0] == "dim" and e[3] and e[1] not in {a for a, _ in takes}]
    if shrunk:
        y = ctx.call("squeeze", y, axis=tuple(sorted(shrunk)))
    out_pos = 0
    for entry in spec:
        if entry[0] == "new":
            y = ctx.call("expand_dims", y, axis=out_pos)
            out_pos += 1
        elif not entry[3]:
            out_pos += 1
    return y


def _dynamic_slice(ctx, x, begin, end, dynamic, begin_mask, end_mask):
    """dyn.strided_slice over the axes whose bounds are known only at run time."""
    t = ctx.dtype(begin)
    b_parts, e_parts, s_parts, axes = [], [], [], []
    for ax, i, s in dynamic:
        idx = ctx.const(np.asarray([i], np.int64))
        b = (
            ctx.const(np.asarray([0 if s > 0 else BIG], t))
            if _bit(begin_mask, i)
            else ctx.call("take", begin, idx, axis=0)
        )
        e = (
            ctx.const(np.asarray([BIG if s > 0 else -BIG - 1], t))
            if _bit(end_mask, i)
            else ctx.call("take", end, idx, axis=0)
        )
        b_parts.append(b)
        e_parts.append(e)
        s_parts.append(s)
        axes.append(ax)
    cat = lambda ps: ps[0] if len(ps) == 1 else ctx.call("concatenate", *ps, axis=0)
    known = [d if isinstance(d, int) else None for d in ctx.shape_of(x)]
    for ax in axes:
        known[ax] = None
    y = ctx.call(
        "dyn.strided_slice",
        x,
        dynamic_shape(ctx, cat(b_parts)),
        dynamic_shape(ctx, cat(e_parts)),
        ctx.const(np.asarray(s_parts, np.int64)),
        ctx.const(np.asarray(axes, np.int64)),
    )
    return refine(ctx, y, known)


@TF.register("Slice")
def Slice(ctx, x, begin, size):
    nd = ctx.ndim(x)
    b, s = ctx.value(begin), ctx.value(size)
    if b is not None and s is not None:
        return ctx.call(
            "strided_slice",
            x,
            begin=tuple(int(v) for v in b),
            end=tuple(int(v) for v in s),
            slice_mode="size",
        )
    y = ctx.call(
        "dyn.strided_slice",
        x,
        dynamic_shape(ctx, begin),
        dynamic_shape(ctx, size),
        slice_mode="size",
    )
    sizes = ctx.partial(size) or (None,) * nd
    shape = ctx.shape_of(x)
    known = [
        v
        if v is not None and v >= 0
        else (
            shape[i]
            if v == -1 and b is not None and int(b[i]) == 0 and isinstance(shape[i], int)
            else None
        )
        for i, v in enumerate(sizes)
    ]
    return refine(ctx, y, known)


# -- gathers --------------------------------------------------------------------------------------
@TF.register("GatherV2")
def GatherV2(ctx, params, indices, axis, batch_dims=0):
    nd = ctx.ndim(params)
    a = ints(ctx, axis, "axis")[0] % nd
    bd = batch_dims % ctx.ndim(indices) if batch_dims < 0 else batch_dims
    # TF's CPU kernel refuses any index outside [0, n), negatives included
    return ctx.call("take", params, indices, axis=a, batch_dims=bd, mode="strict")


@TF.register("Gather")
def Gather(ctx, params, indices):
    return ctx.call("take", params, indices, axis=0, mode="strict")


def _index_first(ctx, indices):
    """TF indices (..., M) as TVM's (M, ...)."""
    nd = ctx.ndim(indices)
    return ctx.call("transpose", indices, axes=(nd - 1,) + tuple(range(nd - 1)))


@TF.register("GatherNd")
def GatherNd(ctx, params, indices, batch_dims=0):
    m = ctx.shape_of(indices)[-1]
    return ctx.call(
        "gather_nd",
        params,
        _index_first(ctx, indices),
        batch_dims=batch_dims,
        index_rank=m if isinstance(m, int) else None,
        index_mode="strict",  # TF refuses negative indices
    )


@TF.register("ScatterNd")
def ScatterNd(ctx, indices, updates, shape):
    dims = ints(ctx, shape, "shape")
    data = ctx.call("zeros", shape=tuple(dims), dtype=ctx.dtype(updates))
    return ctx.call(
        "scatter_nd", data, _index_first(ctx, indices), updates, mode="add", index_mode="strict"
    )


def _tensor_scatter(mode: str):
    def convert(ctx, tensor, indices, updates):
        idx = _index_first(ctx, indices)
        return ctx.call("scatter_nd", tensor, idx, updates, mode=mode, index_mode="strict")

    return convert


for _tf_op, _mode in {
    "TensorScatterUpdate": "update",
    "TensorScatterAdd": "add",
    "TensorScatterMax": "max",
    "TensorScatterMin": "min",
}.items():
    _fn = _tensor_scatter(_mode)
    _fn.__name__ = _fn.__qualname__ = _tf_op
    TF.register(_tf_op)(_fn)


@TF.register("TensorScatterSub")
def TensorScatterSub(ctx, tensor, indices, updates):
    neg = ctx.call("negative", updates)
    idx = _index_first(ctx, indices)
    return ctx.call("scatter_nd", tensor, idx, neg, mode="add", index_mode="strict")
