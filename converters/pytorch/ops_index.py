"""Indexing: advanced indexing (index / index_put), gather / scatter, embedding, masks,
slice / select scatter, nonzero, pairwise distances."""

from __future__ import annotations

import numpy as np

from relay_core.ir import Expr

from .ops_shape import _norm
from .table import aten


def _index_tensors(ctx, x, indices):
    """torch index list -> (dims, int64 index tensors broadcast to one shape). Bool masks
    become the coordinates of their true entries (one tensor per masked dim)."""
    dims, tensors = [], []
    pos = 0
    for idx in indices:
        if idx is None:
            pos += 1
            continue
        idx = ctx.expr(idx)
        if ctx.dtype(idx) in ("bool", "uint8"):
            k = max(ctx.ndim(idx), 1)
            coords = ctx.call("argwhere", idx)  # (count, k)
            for j in range(k):
                col = ctx.call("take", coords, ctx.const(j, "int64"), axis=1)
                dims.append(pos + j)
                tensors.append(col)
            pos += k
            continue
        dims.append(pos)
        tensors.append(ctx.cast(idx, "int64"))
        pos += 1
    if len(tensors) > 1:
        shapes = [ctx.shape_of(t_) for t_ in tensors]
        if any(s != shapes[0] for s in shapes):
            like = tensors[0]
            for t_ in tensors[1:]:
                like = ctx.call("add", ctx.call("zeros_like", like), ctx.call("zeros_like", t_))
            tensors = [ctx.call("broadcast_to_like", t_, like) for t_ in tensors]
    return dims, tensors


def _front_perm(ctx, x, dims):
    nd = ctx.ndim(x)
    rest = [i for i in range(nd) if i not in dims]
    return dims + rest, rest


def index(ctx, x, indices):
    """x[indices] with torch's advanced-indexing rules."""
    x = ctx.expr(x)
    dims, tensors = _index_tensors(ctx, x, indices)
    if not tensors:
        return x
    perm, rest = _front_perm(ctx, x, dims)
    xt = x if perm == list(range(len(perm))) else ctx.call("transpose", x, axes=tuple(perm))
    coords = ctx.call("stack", *tensors, axis=0)
    out = ctx.call("gather_nd", xt, coords)
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    first = dims[0]
    if adjacent and first > 0:  # broadcast dims go where the indexed dims were
        nb = ctx.ndim(tensors[0])
        before = list(range(nb, nb + first))
        axes = before + list(range(nb)) + list(range(nb + first, ctx.ndim(out)))
        out = ctx.call("transpose", out, axes=tuple(axes))
    return out


@aten("index.Tensor", "_unsafe_index.Tensor")
def index_tensor(ctx, self, indices):
    return index(ctx, self, indices)


@aten("index_put.default", "_unsafe_index_put.default")
def index_put(ctx, self, indices, values, accumulate=False):
    x = ctx.expr(self)
    dims, tensors = _index_tensors(ctx, x, indices)
    perm, rest = _front_perm(ctx, x, dims)
    identity = perm == list(range(len(perm)))
    xt = x if identity else ctx.call("transpose", x, axes=tuple(perm))
    coords = ctx.call("stack", *tensors, axis=0)
    # values broadcast to the shape of x[indices], then laid out as (B..., rest...)
    picked = index(ctx, x, indices)
    v = ctx.call("broadcast_to_like", ctx.cast(ctx.expr(values), ctx.dtype(x)), picked)
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    if adjacent and dims[0] > 0:
        nb, first = ctx.ndim(tensors[0]), dims[0]
        axes = (
            list(range(first, first + nb))
            + list(range(first))
            + list(range(first + nb, ctx.ndim(v)))
        )
        v = ctx.call("transpose", v, axes=tuple(axes))
    out = ctx.call("scatter_nd", xt, coords, v, mode="add" if accumulate else "update")
    if identity:
        return out
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return ctx.call("transpose", out, axes=tuple(inv))


@aten("index_select.default")
def index_select(ctx, self, dim, index):
    nd = max(ctx.ndim(self), 1)
    idx = ctx.cast(ctx.expr(index), "int64")
    if ctx.ndim(self) == 0:
        return ctx.call("reshape", self, newshape=(1,))
    return ctx.call(
        "take", self, ctx.call("reshape", idx, newshape=(-1,)), axis=_norm(dim, nd), mode="strict"
    )


@aten("gather.default")
def gather(ctx, self, dim, index, sparse_grad=False):
    if ctx.ndim(self) == 0:
        return self
    # torch refuses negative indices here, unlike ONNX
    idx = ctx.cast(index, "int64")
    return ctx.call("gather", self, idx, axis=_norm(dim, ctx.ndim(self)), mode="strict")


@aten("take_along_dim.default")
def take_along_dim(ctx, self, indices, dim=None):
    if dim is None:
        flat = ctx.call("reshape", self, newshape=(-1,))
        return ctx.call(
            "gather", flat, ctx.call("reshape", ctx.cast(indices, "int64"), newshape=(-1,)), axis=0
        )
    return gather(ctx, self, dim, indices)


def _fit_src(ctx, src, index):
    """torch uses only the index-shaped corner of src."""
    s_shape, i_shape = ctx.shape_of(src), ctx.shape_of(index)
    if s_shape == i_shape:
        return src
    return ctx.call(
        "strided_slice",
        src,
        begin=(0,) * len(i_shape),
        end=tuple(d if isinstance(d, int) else 2**31 - 1 for d in i_shape),
    )


_REDUCTIONS = {
    "sum": "add",
    "add": "add",
    "prod": "mul",
    "multiply": "mul",
    "amax": "max",
    "amin": "min",
}


def _scatter(ctx, self, dim, index, src, reduction="update"):
    x = ctx.expr(self)
    nd = ctx.ndim(x)
    if nd == 0:
        return ctx.cast(ctx.expr(src), ctx.dtype(x)) if reduction == "update" else x
    idx = ctx.cast(ctx.expr(index), "int64")
    if isinstance(src, Expr):
        s = _fit_src(ctx, ctx.cast(src, ctx.dtype(x)), idx)
    else:
        s = ctx.call("full_like", ctx.cast(idx, ctx.dtype(x)), ctx.expr(src, ctx.dtype(x)))
    # torch refuses negative indices here (unlike x[idx])
    return ctx.call(
        "scatter_elements", x, idx, s, axis=_norm(dim, nd), reduction=reduction, index_mode="strict"
    )


@aten("scatter.src", "scatter.value")
def scatter(ctx, self, dim, index, src=None, value=None):
    return _scatter(ctx, self, dim, index, src if src is not None else value)


@aten("scatter.reduce", "scatter.value_reduce")
def scatter_reduce_legacy(ctx, self, dim, index, src, *, reduce):
    return _scatter(ctx, self, dim, index, src, _REDUCTIONS[reduce])


@aten("scatter_add.default")
def scatter_add(ctx, self, dim, index, src):
    return _scatter(ctx, self, dim, index, src, "add")


@aten("scatter_reduce.two")
def scatter_reduce(ctx, self, dim, index, src, reduce, *, include_self=True):
    x = ctx.expr(self)
    d = ctx.dtype(x)
    if reduce == "mean":
        total = scatter_reduce(ctx, x, dim, index, src, "sum", include_self=include_self)
        ones = ctx.call("ones_like", x)
        counts = _scatter(
            ctx,
            ones if include_self else ctx.call("zeros_like", x),
            dim,
            index,
            ctx.call("ones_like", ctx.cast(index, d)),
            "add",
        )
        counts = ctx.call("maximum", counts, ctx.call("ones_like", counts))
        if d.startswith("float") or d.startswith("bfloat"):
            return ctx.call("divide", total, counts)
        return ctx.call("floor_divide", total, counts)
    red = _REDUCTIONS[reduce]
    if not include_self:  # first put src values in place, then reduce src into them
        if red in ("add", "mul"):
            neutral = ctx.expr(0 if red == "add" else 1, d)
            x = _scatter(
                ctx, x, dim, index, ctx.call("full_like", ctx.cast(ctx.expr(index), d), neutral)
            )
        else:
            x = _scatter(ctx, x, dim, index, src)
    return _scatter(ctx, x, dim, index, src, red)


@aten("embedding.default")
def embedding(ctx, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return ctx.call("take", weight, ctx.cast(indices, "int64"), axis=0, mode="strict")


@aten("masked_fill.Scalar", "masked_fill.Tensor")
def masked_fill(ctx, self, mask, value):
    x = ctx.expr(self)
    return ctx.call("where", ctx.expr(mask), ctx.expr(value, ctx.dtype(x)), x)


@aten("masked_scatter.default")
def masked_scatter(ctx, self, mask, source):
    x = ctx.expr(self)
    m = ctx.call("broadcast_to_like", ctx.expr(mask), x)
    shape = ctx.shape_of(x)
    flat_m = ctx.call("reshape", m, newshape=(-1,))
    flat_x = ctx.call("reshape", x, newshape=(-1,))
    pos = ctx.call(
        "subtract", ctx.call("cumsum", ctx.cast(flat_m, "int64"), axis=0), ctx.const(1, "int64")
    )
    pos = ctx.call("maximum", pos, ctx.const(0, "int64"))
    src = ctx.call("reshape", ctx.cast(ctx.expr(source), ctx.dtype(x)), newshape=(-1,))
    picked = ctx.call("take", src, pos, axis=0, mode="clip")
    out = ctx.call("where", flat_m, picked, flat_x)
    return (
        ctx.call("reshape_like", out, x)
        if not all(isinstance(d, int) for d in shape)
        else ctx.call("reshape", out, newshape=shape)
    )


@aten("masked_select.default")
def masked_select(ctx, self, mask):
    x = ctx.expr(self)
    m = ctx.call("broadcast_to_like", ctx.expr(mask), x)
    return index(ctx, ctx.call("broadcast_to_like", x, m), [m])


@aten("nonzero.default")
def nonzero(ctx, self):
    return ctx.call("argwhere", self)


@aten("slice_scatter.default")
def slice_scatter(ctx, self, src, dim=0, start=None, end=None, step=1):
    x = ctx.expr(self)
    nd = ctx.ndim(x)
    dim = _norm(dim, nd)
    n = ctx.dim_size(x, dim)
    if isinstance(n, Expr) or any(isinstance(v, Expr) for v in (start, end, step)):
        raise ctx.error("slice_scatter needs static sizes and bounds")
    positions = np.arange(n, dtype=np.int64)[slice(start, end, step)]
    src = ctx.cast(ctx.expr(src), ctx.dtype(x))
    shape = [1] * nd
    shape[dim] = len(positions)
    idx = ctx.const(positions.reshape(shape))
    idx = ctx.call("broadcast_to_like", idx, src)
    return ctx.call("scatter_elements", x, idx, src, axis=dim)


@aten("select_scatter.default")
def select_scatter(ctx, self, src, dim, index):
    nd = ctx.ndim(self)
    dim = _norm(dim, nd)
    n = ctx.dim_size(self, dim)
    index = index + n if isinstance(n, int) and index < 0 else index
    src = ctx.call("expand_dims", ctx.expr(src), axis=dim)
    return slice_scatter(ctx, self, src, dim, index, index + 1, 1)


@aten("index_fill.int_Scalar", "index_fill.int_Tensor")
def index_fill(ctx, self, dim, index, value):
    x = ctx.expr(self)
    nd = ctx.ndim(x)
    dim = _norm(dim, nd)
    n = ctx.dim_size(x, dim)
    shape = [1] * nd
    shape[dim] = n
    pos = ctx.call("reshape", ctx.iota(n), newshape=shape)
    idx = ctx.call("reshape", ctx.cast(ctx.expr(index), "int64"), newshape=(-1,))
    n_exp = ctx.expr(n, "int64")
    idx = ctx.call("floor_mod", idx, n_exp)
    hit = ctx.call("any", ctx.call("equal", ctx.call("expand_dims", pos, axis=nd), idx), axis=(nd,))
    return ctx.call("where", hit, ctx.expr(value, ctx.dtype(x)), x)


@aten("index_add.default")
def index_add(ctx, self, dim, index, source, *, alpha=1):
    x = ctx.expr(self)
    nd = ctx.ndim(x)
    dim = _norm(dim, nd)
    src = ctx.cast(ctx.expr(source), ctx.dtype(x))
    if alpha != 1:
        src = ctx.call("multiply", src, ctx.expr(alpha, ctx.dtype(x)))
    shape = [1] * nd
    shape[dim] = -1
    idx = ctx.call("reshape", ctx.cast(ctx.expr(index), "int64"), newshape=tuple(shape))
    idx = ctx.call("broadcast_to_like", idx, src)
    return ctx.call("scatter_elements", x, idx, src, axis=dim, reduction="add", index_mode="strict")


@aten("index_copy.default")
def index_copy(ctx, self, dim, index, source):
    x = ctx.expr(self)
    nd = ctx.ndim(x)
    dim = _norm(dim, nd)
    shape = [1] * nd
    shape[dim] = -1
    src = ctx.cast(ctx.expr(source), ctx.dtype(x))
    idx = ctx.call("reshape", ctx.cast(ctx.expr(index), "int64"), newshape=tuple(shape))
    idx = ctx.call("broadcast_to_like", idx, src)
    return ctx.call("scatter_elements", x, idx, src, axis=dim, index_mode="strict")


# -- distances ------------------------------------------------------------------------------------


def _pnorm_last(ctx, diff, p, keep=False):
    d = ctx.dtype(diff)
    a = ctx.call("abs", diff)
    if p == 2:
        return ctx.call("sqrt", ctx.call("sum", ctx.call("multiply", a, a), axis=(-1,)))
    if p == 1:
        return ctx.call("sum", a, axis=(-1,))
    if p == float("inf"):
        return ctx.call("max", a, axis=(-1,))
    if p == 0:
        return ctx.call("sum", ctx.cast(ctx.call("not_equal", a, ctx.expr(0.0, d)), d), axis=(-1,))
    s = ctx.call("sum", ctx.call("power", a, ctx.expr(float(p), d)), axis=(-1,))
    return ctx.call("power", s, ctx.expr(1.0 / p, d))


@aten("_cdist_forward.default", "cdist.default")
def cdist(ctx, x1, x2, p=2.0, compute_mode=None):
    a = ctx.call("expand_dims", x1, axis=ctx.ndim(x1) - 1)  # (..., P, 1, M)
    b = ctx.call("expand_dims", x2, axis=ctx.ndim(x2) - 2)  # (..., 1, R, M)
    return _pnorm_last(ctx, ctx.call("subtract", a, b), p)


@aten("_pdist_forward.default", "pdist.default")
def pdist(ctx, self, p=2.0):
    n = ctx.dim_size(self, 0)
    if isinstance(n, Expr):
        raise ctx.error("pdist of a symbolic number of rows is not supported")
    full = cdist(ctx, self, self, p)
    iu, ju = np.triu_indices(n, k=1)
    flat = ctx.call("reshape", full, newshape=(-1,))
    return ctx.call("take", flat, ctx.const((iu * n + ju).astype(np.int64)), axis=0)
