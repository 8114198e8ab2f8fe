"""Constants, identities, shapes and shape transforms: Reshape, Transpose, Concat, Pack, Split,
Fill, Range, Tile, BroadcastTo, Pad, ..."""

from __future__ import annotations

import numpy as np

from relay_core.ir import dtype as dt

from .static import SymDim
from .table import TF
from .util import cast_to, dynamic_shape, ints, refine, shape_dims


# -- constants and identities ---------------------------------------------------------------------
@TF.register("Const")
def Const(ctx, value=None, dtype="float32"):
    if value is None:
        raise ctx.error("a Const node without a value")
    if dtype == "string":
        return ctx.const(np.asarray(value, dtype=object))
    return ctx.const(np.asarray(value), dtype)


def _identity(ctx, x, *rest):
    return x


for _name in (
    "Identity",
    "StopGradient",
    "PreventGradient",
    "Snapshot",
    "CheckNumerics",
    "EnsureShape",
    "PlaceholderWithDefault",
):
    TF.register(_name)(_identity)


@TF.register("IdentityN")
def IdentityN(ctx, *xs):
    return list(xs)


# -- shapes ---------------------------------------------------------------------------------------
@TF.register("Shape")
def Shape(ctx, x, out_type="int32"):
    return ctx.call("shape_of", x, dtype=out_type)


@TF.register("ShapeN")
def ShapeN(ctx, *xs, out_type="int32"):
    return [ctx.call("shape_of", x, dtype=out_type) for x in xs]


@TF.register("Size")
def Size(ctx, x, out_type="int32"):
    return ctx.call("ndarray_size", x, dtype=out_type)


@TF.register("Rank")
def Rank(ctx, x):
    return ctx.const(np.asarray(ctx.ndim(x), np.int32))


@TF.register("Reshape")
def Reshape(ctx, x, shape):
    raw = shape_dims(ctx, shape, symbolic=True)
    if raw is None:
        raise ctx.error("the length of the new shape must be known before run time")
    zero = any(d == 0 for d in raw if isinstance(d, int))  # a literal 0: no copies possible
    # A run-time dim of x itself at the same position becomes reshape's 0 (copy the dim).
    dims = [
        (0 if not zero and d.expr is x and d.axis == i else None) if isinstance(d, SymDim) else d
        for i, d in enumerate(raw)
    ]
    unknown = [i for i, d in enumerate(dims) if d is None]
    if not unknown:
        return ctx.call("reshape", x, newshape=tuple(dims), allowzero=zero)
    if len(unknown) == 1 and -1 not in dims:
        dims[unknown[0]] = -1
        return ctx.call("reshape", x, newshape=tuple(dims), allowzero=zero)
    out = ctx.call("dyn.reshape", x, dynamic_shape(ctx, shape), allowzero=True)
    return refine(ctx, out, [None if d is None or d <= 0 else d for d in dims])


@TF.register("Transpose")
def Transpose(ctx, x, perm):
    return ctx.call("transpose", x, axes=tuple(ints(ctx, perm, "perm")))


@TF.register("ConjugateTranspose")
def ConjugateTranspose(ctx, x, perm):
    return Transpose(ctx, x, perm)


@TF.register("ExpandDims")
def ExpandDims(ctx, x, axis):
    a = ints(ctx, axis, "axis")[0]
    nd = ctx.ndim(x)
    return ctx.call("expand_dims", x, axis=a if a >= 0 else a + nd + 1)


@TF.register("Squeeze")
def Squeeze(ctx, x, squeeze_dims=()):
    nd = ctx.ndim(x)
    if not squeeze_dims:
        shape = ctx.shape_of(x)
        if any(not isinstance(d, int) for d in shape):
            raise ctx.error("Squeeze without squeeze_dims needs a static shape")
        return ctx.call("squeeze", x, axis=tuple(i for i, d in enumerate(shape) if d == 1))
    return ctx.call("squeeze", x, axis=tuple(sorted(a % nd for a in squeeze_dims)))


# -- joining and splitting ------------------------------------------------------------------------
@TF.register("ConcatV2")
def ConcatV2(ctx, *args):
    *xs, axis = args
    a = ints(ctx, axis, "axis")[0]
    nd = ctx.ndim(xs[0])
    return ctx.call("concatenate", *xs, axis=a % nd)


@TF.register("Concat")
def Concat(ctx, axis, *xs):
    return ConcatV2(ctx, *xs, axis)


@TF.register("Pack")
def Pack(ctx, *xs, axis=0):
    nd = ctx.ndim(xs[0]) + 1
    return ctx.call("stack", *xs, axis=axis % nd)


@TF.register("Unpack")
def Unpack(ctx, x, num=1, axis=0):
    nd = ctx.ndim(x)
    a = axis % nd
    parts = ctx.call("split", x, indices_or_sections=num, axis=a)
    return [ctx.call("squeeze", ctx.item(parts, i), axis=(a,)) for i in range(num)]


@TF.register("Split")
def Split(ctx, split_dim, x, num_split=1):
    a = ints(ctx, split_dim, "split_dim")[0] % ctx.ndim(x)
    parts = ctx.call("split", x, indices_or_sections=num_split, axis=a)
    return [ctx.item(parts, i) for i in range(num_split)]


@TF.register("SplitV")
def SplitV(ctx, x, size_splits, split_dim, num_split=1):
    a = ints(ctx, split_dim, "split_dim")[0] % ctx.ndim(x)
    sizes = ints(ctx, size_splits, "size_splits")
    if -1 in sizes:
        k = sizes.index(-1)
        if k != len(sizes) - 1:
            dim = ctx.shape_of(x)[a]
            if not isinstance(dim, int):
                raise ctx.error("SplitV with a -1 size before the last needs a static axis")
            sizes[k] = dim - (sum(sizes) + 1)
    points = tuple(int(v) for v in np.cumsum(sizes[:-1]))
    if len(sizes) == 1:
        return [x]
    parts = ctx.call("split", x, indices_or_sections=points, axis=a)
    return [ctx.item(parts, i) for i in range(len(sizes))]


# -- creation -------------------------------------------------------------------------------------
@TF.register("Fill")
def Fill(ctx, dims, value):
    shape = shape_dims(ctx, dims)
    if shape is not None and None not in shape:
        return ctx.call("full", value, shape=tuple(shape))
    out = ctx.call("dyn.full", value, dynamic_shape(ctx, dims))
    return refine(ctx, out, shape) if shape is not None else out


@TF.register("ZerosLike")
def ZerosLike(ctx, x):
    return ctx.call("zeros_like", x)


@TF.register("OnesLike")
def OnesLike(ctx, x):
    return ctx.call("ones_like", x)


@TF.register("Range")
def Range(ctx, start, limit, delta, Tidx="int32"):
    start, limit, delta = (cast_to(ctx, v, Tidx) for v in (start, limit, delta))
    out = ctx.call("arange", start, limit, delta, dtype=Tidx)
    vals = [ctx.value(v) for v in (start, limit, delta)]
    if all(v is not None for v in vals):
        n = len(np.arange(*(v.item() for v in vals)))
        out = refine(ctx, out, [n])
    return out


@TF.register("LinSpace")
def LinSpace(ctx, start, stop, num):
    n = ints(ctx, num, "num")[0]
    dtype = ctx.dtype(start)
    if n == 1:
        return ctx.call("reshape", start, newshape=(1,))
    step = ctx.call(
        "divide",
        ctx.call("subtract", stop, start),
        ctx.const(np.asarray(n - 1, dt.to_numpy(dtype))),
    )
    idx = ctx.const(np.arange(n).astype(dt.to_numpy(dtype)))
    out = ctx.call("add", start, ctx.call("multiply", idx, step))
    # TF makes the last element exactly `stop`.
    last = ctx.const(np.arange(n) == n - 1)
    return ctx.call("where", last, stop, out)


@TF.register("Tile")
def Tile(ctx, x, multiples):
    reps = ctx.value(multiples)
    if reps is not None:
        return ctx.call("tile", x, reps=tuple(int(r) for r in reps.reshape(-1)))
    return ctx.call("dyn.tile", x, dynamic_shape(ctx, multiples))


@TF.register("BroadcastTo")
def BroadcastTo(ctx, x, shape):
    dims = shape_dims(ctx, shape)
    if dims is not None and None not in dims:
        return ctx.call("broadcast_to", x, shape=tuple(dims))
    out = ctx.call("dyn.broadcast_to", x, dynamic_shape(ctx, shape))
    return refine(ctx, out, dims) if dims is not None else out


@TF.register("BroadcastArgs")
def BroadcastArgs(ctx, s0, s1):
    a, b = ctx.require_value(s0, "s0"), ctx.require_value(s1, "s1")
    out = np.broadcast_shapes(tuple(int(v) for v in a), tuple(int(v) for v in b))
    return ctx.const(np.asarray(out, a.dtype))


@TF.register("InvertPermutation")
def InvertPermutation(ctx, x):
    p = ctx.require_value(x, "x")
    return ctx.const(np.argsort(p).astype(p.dtype))


# -- padding --------------------------------------------------------------------------------------
def _pad_width(ctx, paddings):
    p = np.asarray(ctx.require_value(paddings, "paddings")).reshape(-1, 2)
    return tuple((int(a), int(b)) for a, b in p)


@TF.register("Pad")
def Pad(ctx, x, paddings):
    return ctx.call("nn.pad", x, pad_width=_pad_width(ctx, paddings))


@TF.register("PadV2")
def PadV2(ctx, x, paddings, value):
    return ctx.call("nn.pad", x, value, pad_width=_pad_width(ctx, paddings))


@TF.register("MirrorPad")
def MirrorPad(ctx, x, paddings, mode="REFLECT"):
    mode = {"REFLECT": "reflect", "SYMMETRIC": "symmetric"}.get(mode.upper())
    if mode is None:
        raise ctx.error("MirrorPad mode must be REFLECT or SYMMETRIC")
    return ctx.call("nn.pad", x, pad_width=_pad_width(ctx, paddings), pad_mode=mode)


# -- misc -----------------------------------------------------------------------------------------
@TF.register("ReverseV2")
def ReverseV2(ctx, x, axis):
    nd = ctx.ndim(x)
    for a in sorted({v % nd for v in ints(ctx, axis, "axis")}):
        x = ctx.call("reverse", x, axis=a)
    return x


@TF.register("Reverse")
def Reverse(ctx, x, dims):
    flags = ctx.require_value(dims, "dims").reshape(-1)
    for a, f in enumerate(flags):
        if f:
            x = ctx.call("reverse", x, axis=a)
    return x


@TF.register("ReverseSequence")
def ReverseSequence(ctx, x, seq_lengths, seq_dim=0, batch_dim=0):
    return ctx.call("reverse_sequence", x, seq_lengths, seq_axis=seq_dim, batch_axis=batch_dim)


@TF.register("OneHot")
def OneHot(ctx, indices, depth, on_value, off_value, axis=-1):
    d = ints(ctx, depth, "depth")[0]
    dtype = ctx.dtype(on_value)
    return ctx.call("one_hot", indices, on_value, off_value, depth=d, axis=axis, dtype=dtype)


@TF.register("Where")
def Where(ctx, x):
    if ctx.dtype(x) != "bool":
        x = ctx.call("not_equal", x, ctx.const(np.zeros((), dt.to_numpy(ctx.dtype(x)))))
    return ctx.call("argwhere", x)


@TF.register("MatrixBandPart")
def MatrixBandPart(ctx, x, num_lower, num_upper):
    lo, hi = ints(ctx, num_lower, "num_lower")[0], ints(ctx, num_upper, "num_upper")[0]
    out = x
    if lo >= 0:
        out = ctx.call("trilu", out, k=-lo, upper=True)
    if hi >= 0:
        out = ctx.call("trilu", out, k=hi, upper=False)
    return out


@TF.register("Einsum")
def Einsum(ctx, *xs, equation=""):
    return ctx.call("einsum", *xs, equation=equation)


@TF.register("Unique")
def Unique(ctx, x, out_idx="int32"):
    out = ctx.call("unique", x, sorted=False)
    return [ctx.item(out, 0), cast_to(ctx, ctx.item(out, 2), out_idx)]
