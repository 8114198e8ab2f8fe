"""Tensor ops: casts, constants, shapes, reshapes, concat / split, slicing, padding, tiling.

Shape-like inputs that are Constants select the static op (reshape, strided_slice, ...);
computed ones select its dyn.* twin, which DynamicToStatic turns static once FoldConstant has
made the input constant.
"""

from __future__ import annotations

import numpy as np

from relay_core.ir import dtype as dt

from .dtypes import relay_dtype
from .table import converter
from .util import cast, normalize_axis, scalar

INT64_MAX = 2**63 - 1


# -- casts and constants ---------------------------------------------------------------------
@converter("Cast", 1)
def Cast(ctx, x, *, to, saturate=1, round_mode="up"):
    dtype = relay_dtype(to, "Cast target")
    if ctx.dtype(x) == dtype:
        return x
    if dtype == "float8_e8m0fnu":
        x = _round_to_power_of_two(ctx, x, round_mode)
    elif round_mode != "up":
        raise ctx.error(f"round_mode={round_mode!r} applies to float8e8m0 only")
    return ctx.call("cast", x, dtype=dtype, saturate=bool(saturate))


def _round_to_power_of_two(ctx, x, round_mode):
    """float8e8m0 holds powers of two: round up / down / to nearest (ties up) first."""
    if round_mode not in ("up", "down", "nearest"):
        raise ctx.error(f"unknown round_mode {round_mode!r}")
    if round_mode == "nearest":
        return x  # the cast itself rounds to nearest
    # No zero in e8m0: anything below its smallest value 2^-127 saturates to it.
    xf = ctx.call("maximum", cast(ctx, x, "float32"), scalar(ctx, 2.0**-127, "float32"))
    e = ctx.call("log2", xf)
    e = ctx.call("ceil" if round_mode == "up" else "floor", e)
    p = ctx.call("exp2", e)
    return ctx.call("where", ctx.call("isfinite", p), p, xf)  # inf / nan pass through


@converter("CastLike", 15)
def CastLike(ctx, x, target, *, saturate=1, round_mode="up"):
    from .dtypes import onnx_dtype

    return Cast(ctx, x, to=onnx_dtype(ctx.dtype(target)), saturate=saturate, round_mode=round_mode)


@converter("Constant", 1)
def Constant(
    ctx,
    *,
    value=None,
    value_float=None,
    value_floats=None,
    value_int=None,
    value_ints=None,
    value_string=None,
    value_strings=None,
    sparse_value=None,
):
    if value is not None:
        return ctx.const(np.asarray(value))
    if sparse_value is not None:
        return ctx.const(np.asarray(sparse_value))
    if value_float is not None:
        return ctx.const(np.array(value_float, np.float32))
    if value_floats is not None:
        return ctx.const(np.array(value_floats, np.float32))
    if value_int is not None:
        return ctx.const(np.array(value_int, np.int64))
    if value_ints is not None:
        return ctx.const(np.array(value_ints, np.int64))
    if value_string is not None:
        return ctx.const(np.array(value_string, dtype=object))
    if value_strings is not None:
        return ctx.const(np.array(value_strings, dtype=object))
    raise ctx.error("Constant has no value attribute")


@converter("ConstantOfShape", 9)
def ConstantOfShape(ctx, shape, *, value=None):
    v = np.zeros((1,), np.float32) if value is None else np.asarray(value)
    fill = ctx.const(v.reshape(()))
    dtype = dt.from_numpy(v.dtype)
    dims = ctx.ints(shape, "shape") if ctx.value(shape) is not None else None
    if dims is not None:
        return ctx.call("full", fill, shape=tuple(dims), dtype=dtype)
    return ctx.call("dyn.full", fill, cast(ctx, shape, "int64"), dtype=dtype)


@converter("EyeLike", 9)
def EyeLike(ctx, x, *, dtype=None, k=0):
    out_dtype = ctx.dtype(x) if dtype is None else relay_dtype(dtype)
    rows, cols = ctx.static_shape(x, "EyeLike input")
    r = ctx.call(
        "expand_dims",
        ctx.call(
            "arange", scalar(ctx, 0, "int64"), scalar(ctx, rows, "int64"), scalar(ctx, 1, "int64")
        ),
        axis=1,
    )
    c = ctx.call(
        "arange", scalar(ctx, 0, "int64"), scalar(ctx, cols, "int64"), scalar(ctx, 1, "int64")
    )
    eye = ctx.call("equal", ctx.call("add", r, scalar(ctx, k, "int64")), c)
    return ctx.call("cast", eye, dtype=out_dtype)


@converter("Range", 11)
def Range(ctx, start, limit, delta):
    return ctx.call("arange", start, limit, delta)


# -- shapes --------------------------------------------------------------------------------------
@converter("Shape", 1)
def Shape(ctx, x, *, start=0, end=None):
    rank = ctx.ndim(x)
    lo = max(0, min(rank, start + rank if start < 0 else start))
    hi = rank if end is None else max(0, min(rank, end + rank if end < 0 else end))
    dims = ctx.shape_of(x)[lo:hi]
    if all(isinstance(d, int) for d in dims):  # static: the shape computations after it fold
        return ctx.const(np.array(dims, np.int64).reshape(-1))
    s = ctx.call("shape_of", x, dtype="int64")
    if lo == 0 and hi == rank:
        return s
    return ctx.call("strided_slice", s, begin=(lo,), end=(max(lo, hi),), strides=(1,))


@converter("Size", 1)
def Size(ctx, x):
    return ctx.call("ndarray_size", x, dtype="int64")


@converter("Reshape", 1)
def Reshape_1(ctx, x, *, shape):
    return ctx.call("reshape", x, newshape=tuple(shape))


@converter("Reshape", 5)
def Reshape(ctx, x, shape, *, allowzero=0):
    v = ctx.value(shape)
    if v is not None:
        return ctx.call(
            "reshape", x, newshape=tuple(int(d) for d in v.reshape(-1)), allowzero=bool(allowzero)
        )
    return ctx.call("dyn.reshape", x, cast(ctx, shape, "int64"), allowzero=bool(allowzero))


@converter("Flatten", 1)
def Flatten(ctx, x, *, axis=1):
    rank = ctx.ndim(x)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis <= rank:
        raise ctx.error(f"axis {axis} is out of range for rank {rank}")
    shape = ctx.shape_of(x)
    lead, trail = shape[:axis], shape[axis:]
    if all(isinstance(d, int) for d in lead):
        n = int(np.prod(lead, dtype=np.int64))
        if n == 0:
            return ctx.call("reshape", x, newshape=(0, int(np.prod(trail))), allowzero=True)
        return ctx.call("reshape", x, newshape=(n, -1))
    if all(isinstance(d, int) for d in trail):
        return ctx.call("reshape", x, newshape=(-1, int(np.prod(trail, dtype=np.int64))))
    s = ctx.call("shape_of", x, dtype="int64")
    parts = [
        ctx.call(
            "prod",
            ctx.call("strided_slice", s, begin=(lo,), end=(hi,), strides=(1,)),
            axis=(0,),
            keepdims=True,
        )
        for lo, hi in ((0, axis), (axis, rank))
    ]
    return ctx.call("dyn.reshape", x, ctx.call("concatenate", *parts, axis=0))


def _axes_input(ctx, axes, what="axes"):
    return None if axes is None else ctx.ints(axes, what)


@converter("Squeeze", 1)
def Squeeze_1(ctx, x, *, axes=None):
    return _squeeze(ctx, x, axes)


@converter("Squeeze", 13)
def Squeeze(ctx, x, axes=None):
    if axes is not None and ctx.value(axes) is None:
        return ctx.call("dyn.squeeze", x, cast(ctx, axes, "int64"))
    return _squeeze(ctx, x, _axes_input(ctx, axes))


def _squeeze(ctx, x, axes):
    if axes is None:
        return ctx.call("squeeze", x)
    rank = ctx.ndim(x)
    return ctx.call("squeeze", x, axis=tuple(normalize_axis(ctx, a, rank) for a in axes))


@converter("Unsqueeze", 1)
def Unsqueeze_1(ctx, x, *, axes):
    return _unsqueeze(ctx, x, axes)


@converter("Unsqueeze", 13)
def Unsqueeze(ctx, x, axes):
    if ctx.value(axes) is None:
        return ctx.call("dyn.unsqueeze", x, cast(ctx, axes, "int64"))
    return _unsqueeze(ctx, x, ctx.ints(axes, "axes"))


def _unsqueeze(ctx, x, axes):
    out_rank = ctx.ndim(x) + len(axes)
    norm = sorted(normalize_axis(ctx, a, out_rank) for a in axes)
    if len(set(norm)) != len(norm):
        raise ctx.error(f"repeated axes {axes}")
    for a in norm:  # increasing order: each insert lands where the output wants it
        x = ctx.call("expand_dims", x, axis=a)
    return x


@converter("Transpose", 1)
def Transpose(ctx, x, *, perm=None):
    return ctx.call("transpose", x, axes=None if perm is None else tuple(perm))


@converter("Concat", 1)
def Concat(ctx, *xs, axis=1):
    rank = ctx.ndim(xs[0])
    return ctx.call("concatenate", *xs, axis=normalize_axis(ctx, axis, rank))


def _split(ctx, x, sizes, axis):
    rank = ctx.ndim(x)
    axis = normalize_axis(ctx, axis, rank)
    if sizes is not None and not isinstance(sizes, list):  # a computed sizes tensor
        n = ctx.num_outputs
        out = ctx.call("dyn.split", x, cast(ctx, sizes, "int64"), axis=axis, num_outputs=n)
        return [ctx.item(out, i) for i in range(n)]
    if sizes is None:
        n = ctx.num_outputs
        dim = ctx.shape_of(x)[axis]
        if isinstance(dim, int) and dim % n:
            # opset 18: the last chunk is smaller; ceil-sized chunks
            size = -(-dim // n)
            sizes = [size] * (n - 1) + [dim - size * (n - 1)]
        else:
            out = ctx.call("split", x, indices_or_sections=n, axis=axis)
            return [ctx.item(out, i) for i in range(n)]
    idx = list(np.cumsum(sizes)[:-1])
    out = ctx.call("split", x, indices_or_sections=tuple(int(i) for i in idx), axis=axis)
    return [ctx.item(out, i) for i in range(len(sizes))]


def _sizes(ctx, split):
    """Split sizes as a list when constant, else the tensor itself."""
    if split is None or ctx.value(split) is None:
        return split
    return ctx.ints(split, "split")


@converter("Split", 1)
def Split_1(ctx, x, split=None, *, axis=0):
    return _split(ctx, x, _sizes(ctx, split), axis)


@converter("Split", 2)
def Split_2(ctx, x, *, axis=0, split=None):
    return _split(ctx, x, split, axis)


@converter("Split", 13)
def Split_13(ctx, x, split=None, *, axis=0):
    return _split(ctx, x, _sizes(ctx, split), axis)


@converter("Split", 18)
def Split(ctx, x, split=None, *, axis=0, num_outputs=None):
    if split is None and num_outputs is not None and num_outputs != ctx.num_outputs:
        raise ctx.error(f"num_outputs={num_outputs} but the node has {ctx.num_outputs} outputs")
    return _split(ctx, x, _sizes(ctx, split), axis)


# -- slicing and indexing ----------------------------------------------------------------------
@converter("Slice", 1)
def Slice_1(ctx, x, *, starts, ends, axes=None):
    return _slice(ctx, x, starts, ends, axes, None)


@converter("Slice", 10)
def Slice(ctx, x, starts, ends, axes=None, steps=None):
    vals = [ctx.value(e) for e in (starts, ends, axes, steps)]
    if all(v is not None or e is None for v, e in zip(vals, (starts, ends, axes, steps))):
        lists = [None if v is None else [int(i) for i in v.reshape(-1)] for v in vals]
        return _slice(ctx, x, *lists)

    def vec(e):  # torch's exporter slices by a loop counter: scalar starts / ends (1-D in ONNX)
        e = cast(ctx, e, "int64")
        return ctx.call("reshape", e, newshape=(1,)) if ctx.ndim(e) == 0 else e

    starts, ends = vec(starts), vec(ends)
    steps = None if steps is None else vec(steps)
    axes = None if axes is None else vec(axes)
    args = [starts, ends]
    rank = ctx.ndim(x)
    attrs = {}
    if steps is not None or axes is not None:
        n = ctx.shape_of(starts)[0]
        if steps is None:
            steps = ctx.call("ones_like", starts)
        args.append(steps)
        if vals[2] is not None:  # static axes: the type keeps the other axes' dims
            attrs["axes"] = tuple(normalize_axis(ctx, int(a), rank) for a in vals[2].reshape(-1))
        elif axes is not None:
            args.append(axes)
        elif not isinstance(n, int) or n != rank:
            args.append(ctx.const(np.arange(n, dtype=np.int64)))
    return ctx.call("dyn.strided_slice", x, *args, **attrs)


def _slice(ctx, x, starts, ends, axes, steps):
    rank = ctx.ndim(x)
    if axes is None:
        axes = list(range(len(starts)))
    axes = [normalize_axis(ctx, a, rank) for a in axes]
    if steps is None:
        steps = [1] * len(starts)
    if any(s == 0 for s in steps):
        raise ctx.error("Slice steps cannot be 0")
    clamp = lambda v: max(min(v, INT64_MAX), -INT64_MAX)  # noqa: E731
    return ctx.call(
        "strided_slice",
        x,
        begin=tuple(clamp(s) for s in starts),
        end=tuple(clamp(e) for e in ends),
        strides=tuple(steps),
        axes=tuple(axes),
    )


@converter("Gather", 1)
def Gather(ctx, x, indices, *, axis=0):
    axis = normalize_axis(ctx, axis, ctx.ndim(x))
    return ctx.call("take", x, indices, axis=axis, mode="fast")


@converter("GatherElements", 11)
def GatherElements(ctx, x, indices, *, axis=0):
    axis = normalize_axis(ctx, axis, ctx.ndim(x))
    # negative indices count from the end in gather itself; outside [-n, n) is an error
    return ctx.call("gather", x, indices, axis=axis)


def _indices_first(ctx, indices):
    """ONNX index tuples sit on the last axis; TVM's gather_nd / scatter_nd want them first."""
    r = ctx.ndim(indices)
    return ctx.call("transpose", indices, axes=(r - 1, *range(r - 1)))


def _nd_indices(ctx, x, indices, batch_dims=0):
    """Indices for gather_nd / scatter_nd: int64, tuples first (negatives count from the end
    and out-of-range ones are errors in the ops themselves)."""
    indices = cast(ctx, indices, "int64")
    return _indices_first(ctx, indices), ctx.shape_of(indices)[-1]


@converter("GatherND", 11)
def GatherND(ctx, x, indices, *, batch_dims=0):
    idx, m = _nd_indices(ctx, x, indices, batch_dims)
    return ctx.call(
        "gather_nd", x, idx, batch_dims=batch_dims, index_rank=m if isinstance(m, int) else None
    )


@converter("ScatterND", 11)
def ScatterND(ctx, x, indices, updates, *, reduction="none"):
    idx, _ = _nd_indices(ctx, x, indices)
    mode = "update" if reduction == "none" else reduction
    return ctx.call("scatter_nd", x, idx, updates, mode=mode)


@converter("ScatterElements", 11)
def ScatterElements(ctx, x, indices, updates, *, axis=0, reduction="none"):
    axis = normalize_axis(ctx, axis, ctx.ndim(x))
    mode = "update" if reduction == "none" else reduction
    return ctx.call(
        "scatter_elements",
        x,
        indices,  # negatives from the end, out of range an error: in scatter_elements
        updates,
        axis=axis,
        reduction=mode,
    )


@converter("Scatter", 9)
def Scatter(ctx, x, indices, updates, *, axis=0):
    return ScatterElements(ctx, x, indices, updates, axis=axis)


@converter("Compress", 9)
def Compress(ctx, x, condition, *, axis=None):
    idx = ctx.call("reshape", ctx.call("nonzero", cast(ctx, condition, "bool")), newshape=(-1,))
    if axis is None:
        return ctx.call("take", ctx.call("reshape", x, newshape=(-1,)), idx, axis=0)
    axis = normalize_axis(ctx, axis, ctx.ndim(x))
    return ctx.call("take", x, idx, axis=axis)


@converter("NonZero", 9)
def NonZero(ctx, x):
    return ctx.call("nonzero", x)


@converter("Where", 9)
def Where(ctx, cond, x, y):
    return ctx.call("where", cond, x, y)


# -- broadcasting and tiling ------------------------------------------------------------------
@converter("Expand", 8)
def Expand(ctx, x, shape):
    dims = ctx.value(shape)
    if dims is not None:
        return ctx.call("broadcast_to", x, shape=tuple(int(d) for d in dims.reshape(-1)))
    return ctx.call("dyn.broadcast_to", x, cast(ctx, shape, "int64"))


@converter("Tile", 6)
def Tile(ctx, x, repeats):
    reps = ctx.value(repeats)
    if reps is not None:
        return ctx.call("tile", x, reps=tuple(int(r) for r in reps.reshape(-1)))
    return ctx.call("dyn.tile", x, cast(ctx, repeats, "int64"))


@converter("Pad", 2)
def Pad_2(ctx, x, *, pads, mode="constant", value=0.0):
    return _pad(ctx, x, list(pads), mode, scalar(ctx, value, ctx.dtype(x)), None)


@converter("Pad", 11)
def Pad(ctx, x, pads, constant_value=None, axes=None, *, mode="constant"):
    value = constant_value if constant_value is not None else scalar(ctx, 0, ctx.dtype(x))
    if ctx.shape_of(value) != ():
        value = ctx.call("reshape", value, newshape=())
    if ctx.value(pads) is None or (axes is not None and ctx.value(axes) is None):
        pads = cast(ctx, pads, "int64")
        if axes is not None:
            pads = _full_pads(ctx, pads, axes, ctx.ndim(x))
        return ctx.call("dyn.nn.pad", x, pads, value, pad_mode=mode)
    p = ctx.ints(pads, "pads")
    return _pad(ctx, x, p, mode, value, ctx.ints(axes, "axes") if axes is not None else None)


def _full_pads(ctx, pads, axes, rank):
    """A computed pads tensor for `axes` (a tensor) spread over every axis (0 elsewhere)."""
    axes = cast(ctx, axes, "int64")
    r = scalar(ctx, rank, "int64")
    axes = ctx.call(
        "where", ctx.call("less", axes, scalar(ctx, 0, "int64")), ctx.call("add", axes, r), axes
    )
    index = ctx.call("concatenate", axes, ctx.call("add", axes, r), axis=0)
    zeros = ctx.const(np.zeros(2 * rank, np.int64))
    return ctx.call("scatter_elements", zeros, index, pads, axis=0)


def _pad(ctx, x, pads, mode, value, axes):
    rank = ctx.ndim(x)
    if axes is None:
        axes = list(range(rank))
    axes = [normalize_axis(ctx, a, rank) for a in axes]
    n = len(axes)
    if len(pads) != 2 * n:
        raise ctx.error(f"pads has {len(pads)} values, needs {2 * n}")
    width = [[0, 0] for _ in range(rank)]
    for i, a in enumerate(axes):
        width[a] = [pads[i], pads[i + n]]
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise ctx.error(f"unknown pad mode {mode!r}")
    return ctx.call("nn.pad", x, value, pad_width=tuple(tuple(w) for w in width), pad_mode=mode)


# -- misc tensor ops ---------------------------------------------------------------------------
@converter("OneHot", 9)
def OneHot(ctx, indices, depth, values, *, axis=-1):
    off = ctx.call("take", values, scalar(ctx, 0, "int64"), axis=0)
    on = ctx.call("take", values, scalar(ctx, 1, "int64"), axis=0)
    dtype = ctx.dtype(values)
    # Indices and depth may be floats; indices in [-depth, 0) count from the end.
    indices = cast(ctx, indices, "int64")
    d = ctx.value(depth)
    if d is not None:
        n = int(d.reshape(-1)[0])
        neg = ctx.call("less", indices, scalar(ctx, 0, "int64"))
        indices = ctx.call("where", neg, ctx.call("add", indices, scalar(ctx, n, "int64")), indices)
        return ctx.call("one_hot", indices, on, off, depth=n, axis=axis, dtype=dtype)
    depth = cast(ctx, depth, "int64")
    if ctx.shape_of(depth) != ():
        depth = ctx.call("reshape", depth, newshape=())
    neg = ctx.call("less", indices, scalar(ctx, 0, "int64"))
    indices = ctx.call("where", neg, ctx.call("add", indices, depth), indices)
    return ctx.call("dyn.one_hot", indices, on, off, depth, axis=axis, dtype=dtype)


@converter("TopK", 1)
def TopK_1(ctx, x, *, k, axis=-1):
    return _topk(ctx, x, k, axis, 1)


@converter("TopK", 10)
def TopK(ctx, x, k, *, axis=-1, largest=1, sorted=1):  # noqa: A002 - the ONNX name
    kv = ctx.value(k)
    if kv is not None:
        return _topk(ctx, x, int(kv.reshape(-1)[0]), axis, largest)
    kk = ctx.call("reshape", cast(ctx, k, "int64"), newshape=())
    out = ctx.call("dyn.topk", x, kk, axis=axis, is_ascend=not largest, dtype="int64")
    return [ctx.item(out, 0), ctx.item(out, 1)]


def _topk(ctx, x, k, axis, largest):
    out = ctx.call("topk", x, k=k, axis=axis, is_ascend=not largest, dtype="int64")
    return [ctx.item(out, 0), ctx.item(out, 1)]


@converter("Unique", 11)
def Unique(ctx, x, *, axis=None, sorted=1):  # noqa: A002 - the ONNX name
    if axis is not None:
        axis = normalize_axis(ctx, axis, ctx.ndim(x))
    out = ctx.call("unique", x, axis=axis, sorted=bool(sorted))
    return [ctx.item(out, i) for i in range(4)]


@converter("Trilu", 14)
def Trilu(ctx, x, k=None, *, upper=1):
    if k is None:
        return ctx.call("trilu", x, k=0, upper=bool(upper))
    kv = ctx.value(k)
    if kv is not None:
        return ctx.call("trilu", x, k=int(kv.reshape(-1)[0]), upper=bool(upper))
    return ctx.call("dyn.trilu", x, cast(ctx, k, "int64"), upper=bool(upper))


def _cum(name):
    def conv(ctx, x, axis, *, exclusive=0, reverse=0):
        a = ctx.value(axis)
        if a is None:
            return ctx.call(
                f"dyn.{name}", x, axis, exclusive=bool(exclusive), reverse=bool(reverse)
            )
        ax = normalize_axis(ctx, int(a.reshape(-1)[0]), ctx.ndim(x))
        return ctx.call(name, x, axis=ax, exclusive=bool(exclusive), reverse=bool(reverse))

    return conv


converter("CumSum", 11)(_cum("cumsum"))
converter("CumProd", 26)(_cum("cumprod"))


@converter("Einsum", 12)
def Einsum(ctx, *xs, equation):
    return ctx.call("einsum", *xs, equation=equation.replace(" ", ""))


@converter("ReverseSequence", 10)
def ReverseSequence(ctx, x, sequence_lens, *, batch_axis=1, time_axis=0):
    return ctx.call("reverse_sequence", x, sequence_lens, seq_axis=time_axis, batch_axis=batch_axis)


@converter("DepthToSpace", 1)
def DepthToSpace(ctx, x, *, blocksize, mode="DCR"):
    return ctx.call("nn.depth_to_space", x, block_size=blocksize, mode=mode)


@converter("SpaceToDepth", 1)
def SpaceToDepth(ctx, x, *, blocksize, mode="DCR"):
    return ctx.call("nn.space_to_depth", x, block_size=blocksize, mode=mode)
