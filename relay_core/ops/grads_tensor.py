"""Gradient rules of the tensor families: reductions, shape transforms, indexing, creation,
sorting, scans and their dyn.* twins (see grads.py for the rule signature).

Pure data-movement ops whose index arithmetic is intricate (slices, take, gather, tile,
repeat, reverse, trilu, ...) share one rule, `gather_adjoint`: run the same op on the
*element numbers* 1..N of the input to learn which input element each output element copies
(0: none), then scatter-add the output gradient into those places. It is exact for every
such op, works with dynamic shapes, and needs no per-op index algebra.
"""

from __future__ import annotations

from ..ir import dtype as dt
from ..ir.expr import Call, Constant, Expr, TupleGetItem, call, const
from ..ir.types import TensorType
from .grads import GradCtx, GradFn, add, div, mul, neg, sub
from .registry import attrs_to_dict


def _c(name, *args, **attrs) -> Expr:
    return call(name, *args, **attrs)


def _float(ctx: GradCtx, i: int) -> bool:
    t = ctx.arg_types[i]
    return isinstance(t, TensorType) and dt.is_float(t.dtype)


# -- helpers --------------------------------------------------------------------------------------
def reduced_axes(ndim: int, attrs) -> list[int]:
    axis = getattr(attrs, "axis", None)
    if axis is None:
        axes = list(range(ndim))
    else:
        axes = [a + ndim if a < 0 else a for a in (axis if isinstance(axis, tuple) else (axis,))]
    if getattr(attrs, "exclude", False):
        axes = [i for i in range(ndim) if i not in axes]
    return sorted(axes)


def unreduce(e: Expr, ctx: GradCtx, i: int = 0) -> Expr:
    """A reduction's output-shaped `e` broadcast back to the shape of input `i`."""
    if not getattr(ctx.attrs, "keepdims", False):
        for a in reduced_axes(ctx.ndim(i), ctx.attrs):
            e = _c("expand_dims", e, axis=a)
    return _c("broadcast_to_like", e, ctx.arg(i))


def _count_ratio(ctx: GradCtx) -> Expr:
    """size(output) / size(input) as a scalar of the input's dtype (1 / reduced count)."""
    d = ctx.dtype(0)
    return div(
        _c("cast", _c("ndarray_size", ctx.out), dtype=d),
        _c("cast", _c("ndarray_size", ctx.arg(0)), dtype=d),
    )


def gather_adjoint(c: Call, g: Expr, ctx: GradCtx, i: int = 0, data: tuple[int, ...] = (0,)):
    """Gradient w.r.t. input `i` of a data-movement op (see the module docstring).
    `data` lists the inputs that hold data (replaced by element numbers / zeros)."""

    def run(ids):
        args = list(c.args)
        for j in data:
            args[j] = ids if j == i else _c("cast", _c("zeros_like", c.args[j]), dtype="int64")
        return Call(c.op, tuple(args), c.attrs, c.type_args)

    return _scatter_ids(c.args[i], g, ctx.dtype(i), run)


def _scatter_ids(x: Expr, g: Expr, dtype: str, run) -> Expr:
    """Sum `g` into the elements of `x` that `run(element numbers of x)` says each element of
    `g` came from (number k is element k-1; 0 is no element)."""
    ids = _c("cast", _c("ones_like", x), dtype="int64")
    ids = _c("reshape_like", _c("cumsum", ids, axis=None), x)  # 1..N in x's shape
    flat = _c("reshape", run(ids), newshape=(-1,))
    buf = _c(
        "concatenate",
        Constant(_zeros1(dtype)),
        _c("reshape", _c("zeros_like", x), newshape=(-1,)),
        axis=0,
    )
    acc = _c(
        "scatter_elements", buf, flat, _c("reshape", g, newshape=(-1,)), axis=0, reduction="add"
    )
    body = TupleGetItem(_c("split", acc, indices_or_sections=(1,), axis=0), 1)
    return _c("reshape_like", body, x)


def _zeros1(dtype: str):
    import numpy as np

    return np.zeros((1,), dt.to_numpy(dtype))


def gather_rule(name: str, data: tuple[int, ...] = (0,)) -> GradFn:
    def rule(c, g, ctx):
        return [
            gather_adjoint(c, g, ctx, i, data) if i in data and _float(ctx, i) else None
            for i in range(len(c.args))
        ]

    return rule


def nondiff(name: str) -> GradFn:
    """No gradient flows through this op (quantization, index generation): zero gradients."""

    def rule(c, g, ctx):
        return [ctx.zeros(i) if _float(ctx, i) else None for i in range(len(c.args))]

    return rule


# -- reductions -----------------------------------------------------------------------------------
def reduce_rule(name: str, fn) -> GradFn:
    def rule(c, g, ctx):
        return [fn(c.args[0], ctx.out, g, ctx)] + [None] * (len(c.args) - 1)

    return rule


_g_sum = reduce_rule("sum", lambda x, y, g, k: unreduce(g, k))
_g_mean = reduce_rule("mean", lambda x, y, g, k: mul(unreduce(g, k), _count_ratio(k)))
_g_prod = reduce_rule("prod", lambda x, y, g, k: div(unreduce(mul(g, y), k), x))
_g_logsumexp = reduce_rule(
    "logsumexp", lambda x, y, g, k: mul(unreduce(g, k), _c("exp", sub(x, unreduce(y, k))))
)
_g_l1_norm = reduce_rule("l1_norm", lambda x, y, g, k: mul(unreduce(g, k), _c("sign", x)))
_g_l2_norm = reduce_rule("l2_norm", lambda x, y, g, k: mul(unreduce(g, k), div(x, unreduce(y, k))))
_g_log_sum = reduce_rule("log_sum", lambda x, y, g, k: unreduce(mul(g, _c("exp", neg(y))), k))
_g_sum_square = reduce_rule(
    "sum_square", lambda x, y, g, k: mul(unreduce(g, k), mul(k.scalar(2.0, 0), x))
)


def _extreme(x, y, g, k):
    # Ties share the gradient equally.
    mask = _c("cast", _c("equal", x, unreduce(y, k)), dtype=k.dtype(0))
    a = k.attrs
    cnt = _c("sum", mask, axis=a.axis, keepdims=True, exclude=a.exclude)
    return div(mul(unreduce(g, k), mask), _c("broadcast_to_like", cnt, x))


_g_max = reduce_rule("max", _extreme)
_g_min = reduce_rule("min", _extreme)


def _variance_grad(c, g, ctx, gy):
    x = c.args[0]
    a = ctx.attrs
    corr = 1.0 if a.unbiased else a.correction
    d = ctx.dtype(0)
    n = _c("cast", div(_c("ndarray_size", x), _c("ndarray_size", ctx.out)), dtype=d)
    denom = sub(n, const(corr, d))
    if len(c.args) == 2:
        m = _c("broadcast_to_like", c.args[1], x)
    else:
        m = unreduce(_c("mean", x, axis=a.axis, keepdims=a.keepdims, exclude=a.exclude), ctx)
    dx = div(mul(mul(const(2.0, d), unreduce(gy, ctx)), sub(x, m)), denom)
    out = [dx]
    if len(c.args) == 2:
        out.append(_c("collapse_sum_like", neg(dx), c.args[1]))
    return out


def _variance(c, g, ctx):
    return _variance_grad(c, g, ctx, g)


def _std(c, g, ctx):
    # d std = d var / (2 std); where std is 0 (a single element) nothing moves it.
    y = ctx.out
    zero = _c("equal", y, ctx.scalar(0.0))
    safe = _c("where", zero, _c("ones_like", y), y)
    gv = _c("where", zero, _c("zeros_like", g), div(g, mul(ctx.scalar(2.0), safe)))
    return _variance_grad(c, g, ctx, gv)


# -- scans ----------------------------------------------------------------------------------------
def _cumsum(c, g, ctx):
    a = ctx.attrs
    if a.dtype not in (None, ctx.dtype(0)):
        return [None]
    r = _c("cumsum", g, axis=a.axis, exclusive=a.exclusive, reverse=not a.reverse)
    return [_c("reshape_like", r, c.args[0])]


def _cumprod(c, g, ctx):
    a = ctx.attrs
    if a.dtype not in (None, ctx.dtype(0)):
        return [None]
    r = _c("cumsum", mul(g, ctx.out), axis=a.axis, exclusive=a.exclusive, reverse=not a.reverse)
    return [div(_c("reshape_like", r, c.args[0]), c.args[0])]


# -- elementwise-like ----------------------------------------------------------------------------
def _cast(c, g, ctx):
    return [_c("cast", g, dtype=ctx.dtype(0)) if _float(ctx, 0) else None]


def _cast_like(c, g, ctx):
    return [_c("cast", g, dtype=ctx.dtype(0)) if _float(ctx, 0) else None, None]


def _clip(c, g, ctx):
    x, a = c.args[0], ctx.attrs
    keep = None
    if a.a_min is not None:
        keep = _c("greater_equal", x, ctx.scalar(a.a_min, 0))
    if a.a_max is not None:
        hi = _c("less_equal", x, ctx.scalar(a.a_max, 0))
        keep = hi if keep is None else _c("logical_and", keep, hi)
    return [g if keep is None else _c("where", keep, g, _c("zeros_like", g))]


def _where(c, g, ctx):
    cond = c.args[0]
    z = _c("zeros_like", g)
    return [
        None,
        ctx.reduce_to(_c("where", cond, g, z), 1) if _float(ctx, 1) else None,
        ctx.reduce_to(_c("where", cond, z, g), 2) if _float(ctx, 2) else None,
    ]


_g_qnn_quantize = nondiff("qnn.quantize")


def _arange(c, g, ctx):
    # out[i] = start + i * step: d start = sum(g), d step = sum(g * i); the stop only moves
    # the (integer) length.
    start, _stop, step = c.args
    i = div(sub(ctx.out, _c("cast", start, dtype=ctx.dtype())), _c("cast", step, dtype=ctx.dtype()))
    return [
        _c("cast", _c("sum", g), dtype=ctx.dtype(0)) if _float(ctx, 0) else None,
        ctx.zeros(1) if _float(ctx, 1) else None,
        _c("cast", _c("sum", mul(g, i)), dtype=ctx.dtype(2)) if _float(ctx, 2) else None,
    ]


def _dequantize(c, g, ctx):
    # out = (x - zero_point) * expand(scale): linear in the scale. The scale's gradient sums
    # g * (x - zero_point) over the elements each scale entry covers, found like
    # gather_adjoint does (dequantize the element numbers of the scale).
    x, s = c.args[0], c.args[1]
    kw = attrs_to_dict(ctx.attrs)
    if not _float(ctx, 1):
        return [None] * len(c.args)
    sd = ctx.dtype(1)
    rest = [_c("zeros_like", a) for a in c.args[2:]]
    d = Call(c.op, (x, _c("ones_like", s), *c.args[2:]), c.attrs)  # x - zero_point
    ones_x = (
        _c("cast", _c("ones_like", _c("cast", x, dtype="int32")), dtype=ctx.dtype(0))
        if not dt.is_float(ctx.dtype(0))
        else _c("ones_like", x)
    )

    def run(ids):
        kw2 = dict(kw, out_dtype="float64")
        return _c(
            "cast",
            _c("qnn.dequantize", ones_x, _c("cast", ids, dtype="float64"), *rest, **kw2),
            dtype="int64",
        )

    gs = _scatter_ids(s, mul(g, _c("cast", d, dtype=ctx.dtype())), sd, run)
    return [None, _c("cast", gs, dtype=sd)] + [None] * (len(c.args) - 2)


def _fill_grad(g, ctx, i):
    # The fill value may have another dtype than the result.
    if not _float(ctx, i):
        return None
    s = _c("sum", g)
    if ctx.dtype(i) != ctx.dtype():
        s = _c("cast", s, dtype=ctx.dtype(i))
    return _c("broadcast_to_like", s, ctx.arg(i))


def _full(c, g, ctx):
    return [_fill_grad(g, ctx, 0)]


def _dyn_full(c, g, ctx):
    return [_fill_grad(g, ctx, 0), None]


def _full_like(c, g, ctx):
    return [ctx.zeros(0) if _float(ctx, 0) else None, _fill_grad(g, ctx, 1)]


def _one_hot_grad(c, g, ctx, mask):
    on = _c("collapse_sum_like", _c("sum", mul(g, mask)), c.args[1])
    off = _c("collapse_sum_like", _c("sum", sub(g, mul(g, mask))), c.args[2])
    return [None, on, off] + [None] * (len(c.args) - 3)


def _one_hot(c, g, ctx):
    d = ctx.dtype()
    one, zero = const(1, d), const(0, d)
    return _one_hot_grad(c, g, ctx, _c("one_hot", c.args[0], one, zero, **attrs_to_dict(ctx.attrs)))


def _dyn_one_hot(c, g, ctx):
    d = ctx.dtype()
    one, zero = const(1, d), const(0, d)
    mask = _c("dyn.one_hot", c.args[0], one, zero, c.args[3], **attrs_to_dict(ctx.attrs))
    return _one_hot_grad(c, g, ctx, mask)


# -- shape transforms ----------------------------------------------------------------------------
def _like_input(name: str) -> GradFn:
    def rule(c, g, ctx):
        return [_c("reshape_like", g, c.args[0])] + [None] * (len(c.args) - 1)

    return rule


# broadcast_to, broadcast_to_like, dyn.broadcast_to: the adjoint of a broadcast
_g_broadcast = lambda c, g, ctx: (
    [_c("collapse_sum_like", g, c.args[0])] + [None] * (len(c.args) - 1)
)


def _collapse(c, g, ctx):
    return [_c("broadcast_to_like", g, c.args[0]), None]


def _transpose(c, g, ctx):
    n = ctx.ndim(0)
    axes = ctx.attrs.axes
    perm = list(reversed(range(n))) if not axes else [a + n if a < 0 else a for a in axes]
    inv = [0] * n
    for i, p in enumerate(perm):
        inv[p] = i
    return [_c("transpose", g, axes=tuple(inv))]


def _concatenate(c, g, ctx):
    axis = ctx.attrs.axis
    nd = ctx.ndim(0)
    axis = axis + nd if axis < 0 else axis
    sizes = [ctx.shape(i)[axis] for i in range(len(c.args))]
    if not all(isinstance(s, int) for s in sizes):
        data = tuple(range(len(c.args)))
        return [
            gather_adjoint(c, g, ctx, i, data) if _float(ctx, i) else None
            for i in range(len(c.args))
        ]
    if len(c.args) == 1:
        return [g]
    points, acc = [], 0
    for s in sizes[:-1]:
        acc += s
        points.append(acc)
    parts = _c("split", g, indices_or_sections=tuple(points), axis=axis)
    return [TupleGetItem(parts, i) for i in range(len(c.args))]


def _split(c, g, ctx):
    n = len(ctx.out_type.fields)
    return [_c("concatenate", *[TupleGetItem(g, i) for i in range(n)], axis=ctx.attrs.axis)]


def _stack(c, g, ctx):
    axis = ctx.attrs.axis
    return [_c("take", g, const(i, "int64"), axis=axis) for i in range(len(c.args))]


def _meshgrid(c, g, ctx):
    n = len(c.args)
    out = []
    nd = len(ctx.out_type.fields[0].shape)
    for i in range(n):
        own = i
        if ctx.attrs.indexing == "xy" and n > 1 and i < 2:
            own = 1 - i
        axes = tuple(a for a in range(nd) if a != own)
        s = _c("sum", TupleGetItem(g, i), axis=axes) if axes else TupleGetItem(g, i)
        out.append(_c("reshape_like", s, c.args[i]))
    return out


# -- indexing -------------------------------------------------------------------------------------


def _scatter_elements(c, g, ctx):
    a = ctx.attrs
    data, idx, upd = c.args
    if a.reduction in ("mul", "min", "max"):
        return _combining_scatter(
            c,
            g,
            ctx,
            a.reduction,
            lambda d, u, r: _c("scatter_elements", d, idx, u, axis=a.axis, reduction=r),
            lambda v: _c("gather", v, idx, axis=a.axis),
        )
    gu = _c("gather", g, idx, axis=a.axis)
    if a.reduction == "add":
        return [g, None, gu]
    keep = _c("scatter_elements", _c("ones_like", data), idx, _c("zeros_like", upd), axis=a.axis)
    # With repeated indices only the update written last lands: find it by scattering the
    # updates' element numbers and reading them back.
    ids = _iota_like(upd)
    won = _c(
        "gather",
        _c(
            "scatter_elements",
            _c("cast", _c("zeros_like", data), dtype="int64"),
            idx,
            ids,
            axis=a.axis,
        ),
        idx,
        axis=a.axis,
    )
    return [mul(g, keep), None, _c("where", _c("equal", won, ids), gu, _c("zeros_like", gu))]


def _scatter_nd(c, g, ctx):
    data, idx, upd = c.args
    mode = ctx.attrs.mode
    if mode in ("mul", "min", "max"):
        return _combining_scatter(
            c,
            g,
            ctx,
            mode,
            lambda d, u, r: _c("scatter_nd", d, idx, u, mode=r),
            lambda v: _c("gather_nd", v, idx),
        )
    gu = _c("gather_nd", g, idx)
    if mode == "add":
        return [g, None, gu]
    keep = _c("scatter_nd", _c("ones_like", data), idx, _c("zeros_like", upd), mode="update")
    ids = _iota_like(upd)
    won = _c(
        "gather_nd",
        _c(
            "scatter_nd", _c("cast", _c("zeros_like", data), dtype="int64"), idx, ids, mode="update"
        ),
        idx,
    )
    return [mul(g, keep), None, _c("where", _c("equal", won, ids), gu, _c("zeros_like", gu))]


def _combining_scatter(c, g, ctx, how, scatter, gather):
    """Scatters that combine with what is there. mul: out = data * P with P the product of the
    updates landing at each place (d update_j divides by update_j). max / min: the gradient
    goes to whichever value won (data, or the updates equal to the result)."""
    data, _, upd = c.args
    out = ctx.out
    z = _c("zeros_like", g)
    if how == "mul":
        prod = scatter(_c("ones_like", data), upd, "mul")
        return [mul(g, prod), None, div(gather(mul(g, out)), upd)]
    gd = _c("where", _c("equal", out, data), g, z)
    gu = gather(g)
    return [gd, None, _c("where", _c("equal", gather(out), upd), gu, _c("zeros_like", gu))]


def _iota_like(x: Expr) -> Expr:
    ids = _c("cast", _c("ones_like", x), dtype="int64")
    return _c("reshape_like", _c("cumsum", ids, axis=None), x)


def _scatter_back(x: Expr, idx: Expr, gv: Expr, axis: int) -> Expr:
    return _c("scatter_elements", _c("zeros_like", x), idx, gv, axis=axis, reduction="add")


def _unique(c, g, ctx):
    # The values are take(x, first_indices, axis): the adjoint of that take.
    from ..ir.expr import Op

    first = TupleGetItem(ctx.out, 1)
    take = Call(Op.get("take"), (c.args[0], first), _take_attrs(ctx.attrs.axis))
    return [gather_adjoint(take, TupleGetItem(g, 0), ctx, 0)]


def _take_attrs(axis):
    from .registry import lookup

    return lookup("take").make_attrs(axis=axis)


def _sort(c, g, ctx):
    a = ctx.attrs
    idx = _c("argsort", c.args[0], axis=a.axis, is_ascend=a.is_ascend, dtype="int64")
    return [_scatter_back(c.args[0], idx, g, a.axis)]


def _topk_grad(c, g, ctx, recompute):
    a = ctx.attrs
    if a.ret_type == "both":
        gv, idx = TupleGetItem(g, 0), TupleGetItem(ctx.out, 1)
    else:
        gv, idx = g, recompute()
    return [_scatter_back(c.args[0], idx, gv, a.axis)] + [None] * (len(c.args) - 1)


def _topk(c, g, ctx):
    kw = attrs_to_dict(ctx.attrs)
    kw["ret_type"] = "indices"
    return _topk_grad(c, g, ctx, lambda: _c("topk", c.args[0], **kw))


def _dyn_topk(c, g, ctx):
    kw = attrs_to_dict(ctx.attrs)
    kw["ret_type"] = "indices"
    return _topk_grad(c, g, ctx, lambda: _c("dyn.topk", c.args[0], c.args[1], **kw))


# -- einsum ---------------------------------------------------------------------------------------
def _expand_ellipsis(labels, out, ranks):
    """Replace "*" (an ellipsis) by explicit letters, right-aligned across operands."""
    used = set("".join(labels) + out)
    free = [ch for ch in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if ch not in used]
    ell = max((r - (len(lab) - 1) for lab, r in zip(labels, ranks) if "*" in lab), default=0)
    names = "".join(free[:ell])
    new = []
    for lab, r in zip(labels, ranks):
        if "*" in lab:
            k = r - (len(lab) - 1)
            lab = lab.replace("*", names[ell - k :])
        new.append(lab)
    return new, out.replace("*", names), free[ell:]


def _einsum(c, g, ctx):
    import numpy as np

    from ..errors import RelayError
    from .misc import parse_einsum  # noqa: I001

    ranks = [ctx.ndim(i) for i in range(len(c.args))]
    labels, out, _ = parse_einsum(ctx.attrs.equation, ranks)
    labels, out, spare = _expand_ellipsis(labels, out, ranks)
    sizes: dict[str, object] = {}
    for i, lab in enumerate(labels):
        for ch, d in zip(lab, ctx.shape(i)):
            if ch not in sizes or sizes[ch] == 1:
                sizes[ch] = d
    # A size-1 dim broadcast against a longer one (in an ellipsis) becomes a label of its own:
    # the forward result is the same, and its gradient is then summed over the broadcast.
    for i, lab in enumerate(labels):
        new = ""
        for ch, d in zip(lab, ctx.shape(i)):
            if d == 1 and sizes[ch] != 1:
                new += spare.pop(0)
            else:
                new += ch
        labels[i] = new
    grads = []
    for i, lab in enumerate(labels):
        if not _float(ctx, i):
            grads.append(None)
            continue
        uniq = "".join(dict.fromkeys(lab))
        others = [out] + [labels[j] for j in range(len(labels)) if j != i]
        avail = set("".join(others))
        kept = "".join(ch for ch in uniq if ch in avail)
        ops = [g] + [c.args[j] for j in range(len(labels)) if j != i]
        r = _c("einsum", *ops, equation=",".join(others) + "->" + kept)
        if kept != uniq:  # labels only this operand has were summed: broadcast back
            for pos, ch in enumerate(uniq):
                if ch not in avail:
                    r = _c("expand_dims", r, axis=pos)
            like = c.args[i] if uniq == lab else _c("einsum", c.args[i], equation=lab + "->" + uniq)
            r = _c("broadcast_to_like", r, like)
        if uniq != lab:  # a repeated label reads a diagonal: write onto it
            seen, target, eyes, names = set(), "", [], [uniq]
            for ch in lab:
                if ch in seen:
                    n = sizes[ch]
                    if not isinstance(n, int):
                        raise RelayError(
                            f"einsum gradient: the diagonal in {ctx.attrs.equation!r} needs a "
                            "static size"
                        )
                    fresh = spare.pop(0)
                    eyes.append(Constant(np.eye(n, dtype=dt.to_numpy(ctx.dtype(i)))))
                    names.append(ch + fresh)
                    target += fresh
                else:
                    seen.add(ch)
                    target += ch
            r = _c("einsum", r, *eyes, equation=",".join(names) + "->" + target)
        grads.append(r)
    return grads


__all__ = ["gather_adjoint", "unreduce", "reduced_axes", "nondiff", "add", "neg", "GradCtx"]
