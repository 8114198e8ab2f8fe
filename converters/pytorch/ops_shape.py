"""Views and layout ops: view / reshape, permute, expand, squeeze, cat, slice, select, split,
flip, repeat, diagonal, as_strided, copies and dtype conversions."""

from __future__ import annotations

import numpy as np

from relay_core.ir import Expr, ShapeVar

from .table import aten

BIG = 2**63 - 1


def _norm(axis: int, ndim: int) -> int:
    return axis + ndim if axis < 0 else axis


def _meta_dim(ctx, i: int):
    """The Relay dim of the node's output at `i` (ShapeVar / int / Any), from its metadata."""
    v = ctx.meta
    if v is None or not hasattr(v, "shape") or i >= len(v.shape):
        return None
    return ctx.importer.shape_dim(v.shape[i]) if not isinstance(v.shape[i], int) else v.shape[i]


def _input_meta_dim(ctx, i: int):
    """The Relay dim of the node's first input at `i`, from torch's metadata: torch knows two
    symbolic dims are equal even where an earlier conversion left the Relay type's dim `?`."""
    args = getattr(ctx.node, "args", None)
    v = getattr(args[0], "meta", {}).get("val") if args else None
    if v is None or not hasattr(v, "shape") or i >= len(v.shape):
        return None
    return ctx.importer.shape_dim(v.shape[i]) if not isinstance(v.shape[i], int) else v.shape[i]


def _same_dim(ctx, in_shape, i: int, d) -> bool:
    """Output dim `d` (a ShapeVar) is the input's dim at `i`."""
    if not isinstance(d, ShapeVar) or i >= len(in_shape):
        return False
    return in_shape[i] == d or _input_meta_dim(ctx, i) == d


def reshape_to(ctx, x: Expr, size) -> Expr:
    """Reshape `x` to torch `size` (ints, -1 and symbolic sizes)."""
    size = list(size)
    static = ctx.static_ints(size)
    if static is not None:
        return ctx.call("reshape", x, newshape=static, allowzero=0 in static)
    in_shape = ctx.shape_of(x)
    for i, v in enumerate(size):
        # a -1 whose size torch's metadata knows statically (beside a copied unknown dim, or
        # MaxViT's view(B, -1, heads, 3 * dh) with B a run-time product): that size
        m = _meta_dim(ctx, i) if not isinstance(v, Expr) and v == -1 else None
        if isinstance(m, int):
            size[i] = m
    dyn = [i for i, v in enumerate(size) if isinstance(v, Expr)]
    has_neg = any(v == -1 for v in size if not isinstance(v, Expr))
    if len(dyn) == 1 and not has_neg:
        size[dyn[0]] = -1
        st = tuple(size)
        return ctx.call("reshape", x, newshape=st, allowzero=0 in st)
    # Symbolic entries equal to the input dim at the same position copy it (0).
    if 0 not in [v for v in size if not isinstance(v, Expr)]:
        copied = list(size)
        for i in dyn:
            if _same_dim(ctx, in_shape, i, _meta_dim(ctx, i)):
                copied[i] = 0
        left = [i for i, v in enumerate(copied) if isinstance(v, Expr)]
        if not left or (len(left) == 1 and not has_neg):
            for i in left:
                copied[i] = -1
            return ctx.call("reshape", x, newshape=tuple(copied))
    return ctx.call("dyn.reshape", x, ctx.int_tensor(size), allowzero=True)


@aten("view.default", "_unsafe_view.default", "reshape.default", "view_copy.default")
def view(ctx, self, size):
    return reshape_to(ctx, self, size)


@aten("view.dtype")
def view_dtype(ctx, self, dtype):
    if ctx.dtype(self) == dtype:
        return self
    raise ctx.error(f"reinterpreting {ctx.dtype(self)} bits as {dtype} is not supported")


@aten("flatten.using_ints")
def flatten(ctx, self, start_dim=0, end_dim=-1):
    nd = ctx.ndim(self)
    if nd == 0:
        return ctx.call("reshape", self, newshape=(1,))
    s, e = _norm(start_dim, nd), _norm(end_dim, nd)
    if s == e:
        return self
    size = [ctx.dim_size(self, i) for i in range(s)] + [-1]
    size += [ctx.dim_size(self, i) for i in range(e + 1, nd)]
    return reshape_to(ctx, self, size)


@aten("unflatten.int")
def unflatten(ctx, self, dim, sizes):
    nd = ctx.ndim(self)
    dim = _norm(dim, nd)
    size = [ctx.dim_size(self, i) for i in range(dim)] + list(sizes)
    size += [ctx.dim_size(self, i) for i in range(dim + 1, nd)]
    return reshape_to(ctx, self, size)


@aten("permute.default", "permute_copy.default")
def permute(ctx, self, dims):
    nd = ctx.ndim(self)
    return ctx.call("transpose", self, axes=tuple(_norm(d, nd) for d in dims))


@aten("transpose.int", "transpose_copy.int", "swapaxes.default", "swapdims.default")
def transpose(ctx, self, dim0, dim1):
    nd = ctx.ndim(self)
    if nd < 2:
        return self
    axes = list(range(nd))
    a, b = _norm(dim0, nd), _norm(dim1, nd)
    axes[a], axes[b] = axes[b], axes[a]
    return ctx.call("transpose", self, axes=tuple(axes))


@aten("t.default", "t_copy.default", "numpy_T.default")
def t(ctx, self):
    nd = ctx.ndim(self)
    if nd < 2:
        return self
    return ctx.call("transpose", self, axes=tuple(range(nd - 1, -1, -1)))


@aten("movedim.int", "movedim.intlist", "moveaxis.int", "moveaxis.intlist")
def movedim(ctx, self, source, destination):
    nd = ctx.ndim(self)
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    src = [_norm(s, nd) for s in src]
    dst = [_norm(d, nd) for d in dst]
    order = [i for i in range(nd) if i not in src]
    out = [None] * nd
    for s, d in zip(src, dst):
        out[d] = s
    rest = iter(order)
    axes = tuple(o if o is not None else next(rest) for o in out)
    return ctx.call("transpose", self, axes=axes)


@aten("expand.default", "expand_copy.default", "broadcast_to.default")
def expand(ctx, self, size, implicit=False):
    x = ctx.expr(self)
    shape = ctx.shape_of(x)
    lead = len(size) - len(shape)
    target = []
    dynamic = False
    for i, v in enumerate(size):
        j = i - lead
        if not isinstance(v, Expr) and v == -1:
            target.append(1)  # bidirectional broadcast with 1 keeps the input dim
        elif isinstance(v, Expr):
            d = _meta_dim(ctx, i)
            if j >= 0 and isinstance(d, ShapeVar) and shape[j] == d:
                target.append(1)
            else:
                target.append(v)
                dynamic = True
        else:
            target.append(v)
    if dynamic:
        return ctx.call("dyn.broadcast_to", x, ctx.int_tensor(target))
    if tuple(target) == tuple(shape):
        return x
    return ctx.call("broadcast_to", x, shape=tuple(target))


@aten("expand_as.default")
def expand_as(ctx, self, other):
    return ctx.call("broadcast_to_like", self, other)


@aten("reshape_as.default", "view_as.default")
def reshape_as(ctx, self, other):
    return ctx.call("reshape_like", self, other)


@aten("broadcast_tensors.default")
def broadcast_tensors(ctx, tensors):
    out = []
    for i, a in enumerate(tensors):
        shape = ctx.out_shape(i)
        if shape is not None and None not in shape:
            out.append(ctx.call("broadcast_to", a, shape=shape) if ctx.shape_of(a) != shape else a)
            continue
        like = ctx.call("zeros_like", a)
        for o in tensors:
            if o is not a:
                like = ctx.call("add", like, ctx.call("zeros_like", ctx.cast(o, ctx.dtype(a))))
        out.append(ctx.call("broadcast_to_like", a, like))
    return tuple(out)


@aten(
    "squeeze.dim",
    "squeeze.dims",
    "squeeze.default",
    "squeeze_copy.dim",
    "squeeze_copy.dims",
    "squeeze_copy.default",
)
def squeeze(ctx, self, dim=None):
    nd = ctx.ndim(self)
    if nd == 0:
        return self
    dims = range(nd) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    dims = [_norm(d, nd) for d in dims]
    shape = ctx.shape_of(self)
    axes = [d for d in dims if shape[d] == 1]
    unknown = [d for d in dims if not isinstance(shape[d], int)]
    out_meta = ctx.meta
    if unknown and out_meta is not None and hasattr(out_meta, "shape"):
        removed = nd - len(out_meta.shape) - len(axes)
        if removed == len(unknown):  # the metadata says these symbolic dims are 1
            axes = sorted(axes + unknown)
    if not axes:
        return self
    return ctx.call("squeeze", self, axis=tuple(axes))


@aten("unsqueeze.default", "unsqueeze_copy.default")
def unsqueeze(ctx, self, dim):
    nd = ctx.ndim(self)
    return ctx.call("expand_dims", self, axis=_norm(dim, nd + 1), num_newaxis=1)


@aten("cat.default", "concat.default", "concatenate.default")
def cat(ctx, tensors, dim=0):
    ts = [ctx.expr(t_) for t_ in tensors]
    # torch skips legacy empty 1-D tensors next to tensors of higher rank
    nd = max(ctx.ndim(t_) for t_ in ts)
    ts = [t_ for t_ in ts if not (ctx.ndim(t_) == 1 and ctx.shape_of(t_)[0] == 0 and nd > 1)]
    d = ctx.out_dtype() or ctx.promote(*ts)
    ts = [ctx.cast(t_, d) for t_ in ts]
    if len(ts) == 1:
        return ts[0]
    return ctx.call("concatenate", *ts, axis=_norm(dim, nd))


@aten("stack.default")
def stack(ctx, tensors, dim=0):
    ts = [ctx.expr(t_) for t_ in tensors]
    d = ctx.out_dtype() or ctx.promote(*ts)
    nd = ctx.ndim(ts[0])
    return ctx.call("stack", *[ctx.cast(t_, d) for t_ in ts], axis=_norm(dim, nd + 1))


def slice_axis(ctx, x, dim, start, end, step=1):
    nd = ctx.ndim(x)
    dim = _norm(dim, nd)
    start = 0 if start is None else start
    end = BIG if end is None else end
    if isinstance(start, Expr) or isinstance(end, Expr) or isinstance(step, Expr):
        return ctx.call(
            "dyn.strided_slice",
            x,
            ctx.int_tensor([start]),
            ctx.int_tensor([end]),
            ctx.int_tensor([step]),
            axes=(dim,),
        )
    if start == 0 and end >= BIG and step == 1:
        return x
    end = min(end, 2**62)
    return ctx.call("strided_slice", x, begin=(start,), end=(end,), strides=(step,), axes=(dim,))


@aten("slice.Tensor", "slice_copy.Tensor")
def slice_(ctx, self, dim=0, start=None, end=None, step=1):
    return slice_axis(ctx, self, dim, start, end, step)


@aten("narrow.default")
def narrow(ctx, self, dim, start, length):
    end = (
        length + start
        if not isinstance(start, Expr) and not isinstance(length, Expr)
        else ctx.call("add", ctx.expr(start, "int64"), ctx.expr(length, "int64"))
    )
    return slice_axis(ctx, self, dim, start, end, 1)


@aten("select.int", "select_copy.int")
def select(ctx, self, dim, index):
    nd = ctx.ndim(self)
    idx = ctx.expr(index, "int64")
    return ctx.call("take", self, idx, axis=_norm(dim, nd), mode="wrap")


def _split_points(sizes) -> tuple[int, ...]:
    return tuple(int(v) for v in np.cumsum(sizes)[:-1])


@aten("split_with_sizes.default", "split_with_sizes_copy.default", "split.sizes")
def split_with_sizes(ctx, self, split_sizes, dim=0):
    nd = ctx.ndim(self)
    sizes = ctx.static_ints(split_sizes)
    if sizes is None:
        raise ctx.error("split sizes must be static")
    if len(sizes) == 1:
        return (self,)
    out = ctx.call("split", self, indices_or_sections=_split_points(sizes), axis=_norm(dim, nd))
    return tuple(ctx.item(out, i) for i in range(len(sizes)))


@aten("split.Tensor", "split_copy.Tensor")
def split(ctx, self, split_size, dim=0):
    if isinstance(split_size, (list, tuple)):
        return split_with_sizes(ctx, self, split_size, dim)
    n = ctx.dim_size(self, dim)
    if isinstance(n, Expr):
        raise ctx.error("split of a symbolic-size axis is not supported")
    sizes = [split_size] * (n // split_size) + ([n % split_size] if n % split_size else [])
    return split_with_sizes(ctx, self, sizes or [0], dim)


@aten("chunk.default")
def chunk(ctx, self, chunks, dim=0):
    n = ctx.dim_size(self, dim)
    size = -(-n // chunks)
    return split(ctx, self, size, dim)


@aten("unbind.int", "unbind_copy.int")
def unbind(ctx, self, dim=0):
    nd = ctx.ndim(self)
    dim = _norm(dim, nd)
    n = ctx.dim_size(self, dim)
    if isinstance(n, Expr):
        n = len(ctx.meta)
    if n == 1:
        return (ctx.call("squeeze", self, axis=(dim,)),)
    parts = ctx.call("split", self, indices_or_sections=n, axis=dim)
    return tuple(ctx.call("squeeze", ctx.item(parts, i), axis=(dim,)) for i in range(n))


@aten("flip.default")
def flip(ctx, self, dims):
    nd = ctx.ndim(self)
    x = self
    for d in dims:
        x = ctx.call("reverse", x, axis=_norm(d, nd))
    return x


@aten("roll.default")
def roll(ctx, self, shifts, dims=()):
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    x = self
    if not dims:  # roll of the flattened tensor
        shape = ctx.shape_of(x)
        flat = ctx.call("reshape", x, newshape=(-1,))
        return ctx.call("reshape", roll(ctx, flat, shifts, [0]), newshape=shape)
    for s, d in zip(shifts, dims):
        n = ctx.dim_size(x, d)
        if isinstance(n, Expr):
            raise ctx.error("roll along a symbolic-size axis is not supported")
        if n == 0:
            continue
        s %= n
        if s == 0:
            continue
        a = slice_axis(ctx, x, d, n - s, n)
        b = slice_axis(ctx, x, d, 0, n - s)
        x = ctx.call("concatenate", a, b, axis=_norm(d, ctx.ndim(x)))
    return x


@aten("repeat.default")
def repeat(ctx, self, repeats):
    reps = ctx.static_ints(repeats)
    x = ctx.expr(self)
    nd = ctx.ndim(x)
    if reps is None:  # a count read off the batch (SigLIP's probe.repeat(batch, 1, 1))
        if len(repeats) > nd:
            x = ctx.call("expand_dims", x, axis=0, num_newaxis=len(repeats) - nd)
        return ctx.call("dyn.tile", x, ctx.int_tensor(list(repeats)))
    if len(reps) > nd:
        x = ctx.call("expand_dims", x, axis=0, num_newaxis=len(reps) - nd)
    if all(r == 1 for r in reps):
        return x
    return ctx.call("tile", x, reps=reps)


@aten("tile.default")
def tile(ctx, self, dims):
    nd = ctx.ndim(self)
    dims = list(dims)
    if len(dims) < nd:
        dims = [1] * (nd - len(dims)) + dims
    return repeat(ctx, self, dims)


@aten("repeat_interleave.self_int")
def repeat_interleave(ctx, self, repeats, dim=None, output_size=None):
    x = self
    if dim is None:
        x, dim = ctx.call("reshape", x, newshape=(-1,)), 0
    return ctx.call("repeat", x, repeats=repeats, axis=_norm(dim, ctx.ndim(x)))


# -- copies and conversions -----------------------------------------------------------------------


@aten(
    "clone.default",
    "alias.default",
    "alias_copy.default",
    "detach.default",
    "detach_copy.default",
    "detach_.default",
    "lift_fresh_copy.default",
    "contiguous.default",
)
def identity(ctx, self, *args, **kwargs):
    return self


@aten("copy.default")
def copy(ctx, self, src, non_blocking=False):
    """The value of `self` after `self.copy_(src)`: src broadcast to self's shape and dtype."""
    s = ctx.cast(ctx.expr(src), ctx.dtype(self))
    if ctx.shape_of(s) == ctx.shape_of(self):
        return s
    return ctx.call("broadcast_to_like", s, self)


def _to(ctx, self, dtype):
    d = dtype or ctx.out_dtype()
    return ctx.expr(self) if d is None else ctx.cast(ctx.expr(self), d)


@aten("_to_copy.default", "to.dtype_layout")
def to_copy(
    ctx,
    self,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=None,
    non_blocking=False,
    copy=False,
    memory_format=None,
):
    return _to(ctx, self, dtype)


@aten("to.dtype")
def to_dtype(ctx, self, dtype, non_blocking=False, copy=False, memory_format=None):
    return _to(ctx, self, dtype)


@aten("to.device")
def to_device(ctx, self, device, dtype, non_blocking=False, copy=False, memory_format=None):
    return _to(ctx, self, dtype)


@aten("to.other")
def to_other(ctx, self, other, non_blocking=False, copy=False, memory_format=None):
    return _to(ctx, self, ctx.dtype(other))


@aten("type_as.default")
def type_as(ctx, self, other):
    return ctx.cast(self, ctx.dtype(other))


@aten("diagonal.default", "diagonal_copy.default")
def diagonal(ctx, self, offset=0, dim1=0, dim2=1):
    nd = ctx.ndim(self)
    d1, d2 = _norm(dim1, nd), _norm(dim2, nd)
    shape = ctx.shape_of(self)
    n1, n2 = shape[d1], shape[d2]
    if not isinstance(n1, int) or not isinstance(n2, int):
        raise ctx.error("diagonal of symbolic-size axes is not supported")
    rest = [i for i in range(nd) if i not in (d1, d2)]
    x = ctx.call("transpose", self, axes=tuple(rest + [d1, d2]))
    x = (
        ctx.call("reshape", x, newshape=tuple([0] * len(rest)) + (n1 * n2,))
        if rest
        else ctx.call("reshape", x, newshape=(n1 * n2,))
    )
    if offset >= 0:
        length = max(0, min(n1, n2 - offset))
        idx = [i * n2 + i + offset for i in range(length)]
    else:
        length = max(0, min(n1 + offset, n2))
        idx = [(i - offset) * n2 + i for i in range(length)]
    return ctx.call("take", x, ctx.const(np.asarray(idx, np.int64)), axis=len(rest))


@aten("as_strided.default", "as_strided_copy.default")
def as_strided(ctx, self, size, stride, storage_offset=None):
    """Elements of the (contiguous) storage of `self` at the given strides."""
    size = ctx.static_ints(size)
    stride = ctx.static_ints(stride)
    if size is None or stride is None or isinstance(storage_offset, Expr):
        raise ctx.error("as_strided needs static sizes and strides")
    idx = np.full(size, storage_offset or 0, dtype=np.int64)
    for ax, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[ax] = n
        idx = idx + (np.arange(n, dtype=np.int64) * s).reshape(shape)
    flat = ctx.call("reshape", self, newshape=(-1,))
    return ctx.call("take", flat, ctx.const(idx), axis=0)
