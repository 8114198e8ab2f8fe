"""Gradient rules of the nn family: activations, softmax, dense / matmul, convolutions, pooling,
padding and the image resizes (see grads.py for the rule signature).

Convolutions follow the classic identities: the data gradient is the transposed convolution of
the output gradient with the same kernel; the kernel gradient is a convolution of the data with
the output gradient (batch and channels swapped, strides and dilation exchanged), grouped per
convolution group. Linear ops that act on each spatial axis separately (average and adaptive
pooling, resize) get their per-axis matrices by running the op's own reference on unit vectors at
compile time (static shapes), so the gradient is an exact `einsum` with those matrices.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import RelayError
from ..ir import dtype as dt
from ..ir.expr import Call, Constant, Expr, TupleGetItem, call
from . import nn_util as U
from .grads import GradCtx, GradFn, div, mul, sub
from .grads_tensor import _count_ratio, _float, gather_adjoint, nondiff
from .registry import attrs_to_dict, lookup


def _c(name, *args, **attrs) -> Expr:
    return call(name, *args, **attrs)


def _where(cond, a, b):
    return _c("where", cond, a, b)


def _zero(ctx, i=None):
    return ctx.scalar(0.0, i)


def _static(ctx: GradCtx, i: int | None, what: str) -> tuple[int, ...]:
    s = ctx.shape(i)
    if not all(isinstance(d, int) for d in s):
        name = ctx.call.op.name
        raise RelayError(f"gradient of {name}: {what} needs static shapes, got {s}")
    return tuple(s)


def _transpose(e: Expr, perm) -> Expr:
    perm = tuple(int(p) for p in perm)
    return e if perm == tuple(range(len(perm))) else _c("transpose", e, axes=perm)


def _to_canonical(e: Expr, axes) -> Expr:
    return _transpose(e, axes)


def _from_canonical(e: Expr, axes) -> Expr:
    return _transpose(e, np.argsort(axes))


# -- activations ----------------------------------------------------------------------------------
def act(name: str, fn) -> GradFn:
    """y = f(x) elementwise: grad = fn(x, y, g, ctx)."""

    def rule(c, g, ctx):
        return [fn(c.args[0], ctx.out, g, ctx)]

    return rule


def _sig(x):
    return _c("sigmoid", x)


_g_nn_relu = act(
    "nn.relu", lambda x, y, g, k: _where(_c("greater", x, _zero(k)), g, _c("zeros_like", g))
)
_g_nn_leaky_relu = act(
    "nn.leaky_relu",
    lambda x, y, g, k: _where(_c("greater_equal", x, _zero(k)), g, mul(g, k.scalar(k.attrs.alpha))),
)
_g_nn_elu = act(
    "nn.elu",
    lambda x, y, g, k: _where(
        _c("greater", x, _zero(k)), g, mul(g, add_(y, k.scalar(k.attrs.alpha)))
    ),
)
_g_nn_selu = act(
    "nn.selu",
    lambda x, y, g, k: _where(
        _c("greater", x, _zero(k)),
        mul(g, k.scalar(k.attrs.gamma)),
        mul(g, add_(y, k.scalar(k.attrs.alpha * k.attrs.gamma))),
    ),
)
_g_nn_celu = act(
    "nn.celu",
    lambda x, y, g, k: _where(
        _c("greater", x, _zero(k)), g, mul(g, _c("exp", div(x, k.scalar(k.attrs.alpha))))
    ),
)
_g_nn_silu = act(
    "nn.silu",
    lambda x, y, g, k: mul(
        g, mul(_sig(x), add_(k.scalar(1.0), mul(x, sub(k.scalar(1.0), _sig(x)))))
    ),
)
_g_nn_softsign = act(
    "nn.softsign", lambda x, y, g, k: div(g, _c("square", add_(k.scalar(1.0), _c("abs", x))))
)
_g_nn_thresholded_relu = act(
    "nn.thresholded_relu",
    lambda x, y, g, k: _where(_c("greater", x, k.scalar(k.attrs.alpha)), g, _c("zeros_like", g)),
)
_g_nn_hard_sigmoid = act(
    "nn.hard_sigmoid",
    lambda x, y, g, k: _where(
        _c("logical_and", _c("greater", y, _zero(k)), _c("less", y, k.scalar(1.0))),
        mul(g, k.scalar(k.attrs.alpha)),
        _c("zeros_like", g),
    ),
)
_g_nn_hard_swish = act(
    "nn.hard_swish",
    lambda x, y, g, k: mul(
        g,
        _where(
            _c("less", x, k.scalar(-3.0)),
            _c("zeros_like", x),
            _where(
                _c("greater", x, k.scalar(3.0)),
                _c("ones_like", x),
                add_(div(x, k.scalar(3.0)), k.scalar(0.5)),
            ),
        ),
    ),
)
_g_nn_shrink = act(
    "nn.shrink",
    lambda x, y, g, k: _where(
        _c(
            "logical_or",
            _c("less", x, k.scalar(-k.attrs.lambd)),
            _c("greater", x, k.scalar(k.attrs.lambd)),
        ),
        g,
        _c("zeros_like", g),
    ),
)


def add_(a, b):
    return _c("add", a, b)


def _gelu(x, y, g, k):
    if k.attrs.approximate == "tanh":
        c0 = math.sqrt(2 / math.pi)
        inner = mul(k.scalar(c0), add_(x, mul(k.scalar(0.044715), mul(x, mul(x, x)))))
        t = _c("tanh", inner)
        dinner = mul(k.scalar(c0), add_(k.scalar(1.0), mul(k.scalar(3 * 0.044715), mul(x, x))))
        d = add_(
            mul(k.scalar(0.5), add_(k.scalar(1.0), t)),
            mul(mul(k.scalar(0.5), x), mul(sub(k.scalar(1.0), mul(t, t)), dinner)),
        )
        return mul(g, d)
    cdf = mul(k.scalar(0.5), add_(k.scalar(1.0), _c("erf", mul(x, k.scalar(1 / math.sqrt(2))))))
    pdf = mul(k.scalar(1 / math.sqrt(2 * math.pi)), _c("exp", mul(k.scalar(-0.5), mul(x, x))))
    return mul(g, add_(cdf, mul(x, pdf)))


_g_nn_gelu = act("nn.gelu", _gelu)


def _softplus(x, y, g, k):
    bx = mul(x, k.scalar(k.attrs.beta))
    return _where(_c("greater", bx, k.scalar(k.attrs.threshold)), g, mul(g, _sig(bx)))


_g_nn_softplus = act("nn.softplus", _softplus)


def _mish(x, y, g, k):
    sp = _c("nn.softplus", x)
    t = _c("tanh", sp)
    return mul(g, add_(t, mul(mul(x, sub(k.scalar(1.0), mul(t, t))), _sig(x))))


_g_nn_mish = act("nn.mish", _mish)
nondiff("nn.hardmax")


def _prelu(c, g, ctx):
    x, alpha = c.args
    axis = ctx.attrs.axis
    nd = ctx.ndim(0)
    a = alpha
    if axis is not None and ctx.ndim(1) == 1 and nd - axis % nd - 1 > 0:
        a = _c("expand_dims", alpha, axis=1, num_newaxis=nd - axis % nd - 1)
    pos = _c("greater_equal", x, _zero(ctx))
    dx = _where(pos, g, mul(g, a))
    ga = _where(pos, _c("zeros_like", g), mul(g, x))
    if axis is not None and ctx.ndim(1) == 1:
        ax = axis % nd
        if ctx.shape(1) == (1,) and ctx.shape(0)[ax] != 1:
            da = _c("reshape_like", _c("sum", ga), alpha)
        else:
            da = _c("sum", ga, axis=(ax,), exclude=True)
    else:
        da = _c("collapse_sum_like", ga, alpha)
    return [dx, da]


def _softmax(c, g, ctx):
    y = ctx.out
    s = _c("sum", mul(g, y), axis=(ctx.attrs.axis,), keepdims=True)
    return [mul(y, sub(g, s))]


def _log_softmax(c, g, ctx):
    s = _c("sum", g, axis=(ctx.attrs.axis,), keepdims=True)
    return [sub(g, mul(_c("exp", ctx.out), s))]


# -- dense / matmul -------------------------------------------------------------------------------
def _dense(c, g, ctx):
    x, w = c.args
    if not (_float(ctx, 0) and _float(ctx, 1)):
        return [None, None]
    u, k = ctx.shape(1)
    dx = _c("nn.matmul", g, w)
    g2 = _c("reshape", g, newshape=(-1, u))
    x2 = _c("reshape", x, newshape=(-1, k))
    dw = _c("nn.matmul", g2, x2, transpose_a=True)
    return [dx, dw]


def _matmul_grads(c, g, ctx, name):
    a, b = c.args
    at = ctx.attrs.transpose_a and ctx.ndim(0) >= 2
    bt = ctx.attrs.transpose_b and ctx.ndim(1) >= 2
    if not (_float(ctx, 0) and _float(ctx, 1)):
        return [None, None]
    # numpy promotes a vector operand to a matrix and drops that axis from the result
    a1, b1 = ctx.ndim(0) == 1, ctx.ndim(1) == 1
    a2 = _c("expand_dims", a, axis=0) if a1 else a
    b2 = _c("expand_dims", b, axis=-1) if b1 else b
    if a1 and b1:
        g2 = _c("reshape", g, newshape=(1, 1))
    elif a1:
        g2 = _c("expand_dims", g, axis=ctx.ndim() - 1)
    elif b1:
        g2 = _c("expand_dims", g, axis=-1)
    else:
        g2 = g
    mm = "nn.matmul"
    if at:
        da = _c(mm, b2, g2, transpose_a=bt, transpose_b=True)
    else:
        da = _c(mm, g2, b2, transpose_b=not bt)
    if bt:
        db = _c(mm, g2, a2, transpose_a=True, transpose_b=at)
    else:
        db = _c(mm, a2, g2, transpose_a=not at)
    da = _c("reshape_like", _c("collapse_sum_like", da, a2), a)
    db = _c("reshape_like", _c("collapse_sum_like", db, b2), b)
    return [da, db]


_g_nn_matmul = lambda c, g, ctx: _matmul_grads(c, g, ctx, "nn.matmul")
_g_nn_batch_matmul = lambda c, g, ctx: _matmul_grads(c, g, ctx, "nn.batch_matmul")


def _bias_add(c, g, ctx):
    axis = ctx.attrs.axis % ctx.ndim(0)
    return [g, _c("reshape_like", _c("sum", g, axis=(axis,), exclude=True), c.args[1])]


# -- convolutions ---------------------------------------------------------------------------------
_CONV_T = {1: "nn.conv1d_transpose", 2: "nn.conv2d_transpose", 3: "nn.conv3d_transpose"}
_CONV = {1: "nn.conv1d", 2: "nn.conv2d", 3: "nn.conv3d"}


def conv_weight_grad(data, grad, dshape, gshape, kernel, strides, dilation, pads, groups, nd):
    """d kernel (O, C/groups, *kernel) of a canonical convolution of `data` (N, C, *S) whose
    output gradient is `grad` (N, O, *S')."""
    n, cin, *sp = dshape
    _, o, *osp = gshape
    cg, og = cin // groups, o // groups
    xt = _c("reshape", data, newshape=(n, groups, cg, *sp), allowzero=True)
    xt = _transpose(xt, (2, 1, 0, *range(3, 3 + nd)))
    xt = _c("reshape", xt, newshape=(cg, groups * n, *sp), allowzero=True)
    gt = _c("reshape", grad, newshape=(n, groups, og, *osp), allowzero=True)
    gt = _transpose(gt, (1, 2, 0, *range(3, 3 + nd)))
    gt = _c("reshape", gt, newshape=(o, n, *osp), allowzero=True)
    padding = tuple(p[0] for p in pads) + tuple(p[1] for p in pads)
    r = _c(_CONV[nd], xt, gt, strides=dilation, dilation=strides, padding=padding, groups=groups)
    r = _transpose(r, (1, 0, *range(2, 2 + nd)))  # (O, C/groups, *K')
    full = [
        (s + pb + pe - st * (m - 1) - 1) // d + 1
        for s, (pb, pe), st, m, d in zip(sp, pads, strides, osp, dilation)
    ]
    if list(full) != list(kernel):
        r = _c("strided_slice", r, begin=(0,) * (nd + 2), end=(o, cg, *kernel))
    return r


def _conv_setup(c, ctx, nd, transpose):
    a = ctx.attrs
    op = c.op.name
    dax = U.data_axes(a.data_layout, nd, op)
    first, second = ("I", "O") if transpose else ("O", "I")
    kax = U.kernel_axes(a.kernel_layout, nd, op, first, second)
    oax = U.data_axes(a.out_layout or a.data_layout, nd, op)
    xs = _static(ctx, 0, "the data")
    ws = _static(ctx, 1, "the kernel")
    ys = _static(ctx, None, "the output")
    xs = tuple(xs[i] for i in dax)
    ws = tuple(ws[i] for i in kax)
    ys = tuple(ys[i] for i in oax)
    strides = U.ntuple(a.strides, nd, "strides", op)
    dilation = U.ntuple(a.dilation, nd, "dilation", op)
    if transpose:
        b, e = U.explicit_padding(a.padding, nd, op)
        pads = list(zip(b, e))
    else:
        pads = U.resolve_pads(a.auto_pad, a.padding, xs[2:], ws[2:], strides, dilation, op)
    return dax, kax, oax, xs, ws, ys, strides, dilation, pads


def conv_rule(nd: int) -> GradFn:
    def rule(c, g, ctx):
        if not (_float(ctx, 0) and _float(ctx, 1)) or ctx.attrs.out_dtype not in ("", ctx.dtype(0)):
            return [None, None]
        dax, kax, oax, xs, ws, ys, s, d, pads = _conv_setup(c, ctx, nd, False)
        x, w = _to_canonical(c.args[0], dax), _to_canonical(c.args[1], kax)
        gc = _to_canonical(g, oax)
        k = ws[2:]
        opad = tuple(
            xs[2 + i] - ((ys[2 + i] - 1) * s[i] - pads[i][0] - pads[i][1] + d[i] * (k[i] - 1) + 1)
            for i in range(nd)
        )
        padding = tuple(p[0] for p in pads) + tuple(p[1] for p in pads)
        dx = _c(
            _CONV_T[nd],
            gc,
            w,
            strides=s,
            padding=padding,
            output_padding=opad,
            dilation=d,
            groups=ctx.attrs.groups,
        )
        dw = conv_weight_grad(x, gc, xs, ys, k, s, d, pads, ctx.attrs.groups, nd)
        return [_from_canonical(dx, dax), _from_canonical(dw, kax)]

    return rule


def conv_transpose_rule(nd: int) -> GradFn:
    def rule(c, g, ctx):
        if not (_float(ctx, 0) and _float(ctx, 1)) or ctx.attrs.out_dtype not in ("", ctx.dtype(0)):
            return [None, None]
        dax, kax, oax, xs, ws, ys, s, d, pads = _conv_setup(c, ctx, nd, True)
        x, w = _to_canonical(c.args[0], dax), _to_canonical(c.args[1], kax)
        gc = _to_canonical(g, oax)
        padding = tuple(p[0] for p in pads) + tuple(p[1] for p in pads)
        dx = _c(_CONV[nd], gc, w, strides=s, padding=padding, dilation=d, groups=ctx.attrs.groups)
        dw = conv_weight_grad(gc, x, ys, xs, ws[2:], s, d, pads, ctx.attrs.groups, nd)
        return [_from_canonical(dx, dax), _from_canonical(dw, kax)]

    return rule


# -- pooling --------------------------------------------------------------------------------------
def _scatter_flat(x: Expr, idx: Expr, g: Expr) -> Expr:
    """Sum `g` into a tensor shaped like `x` at flat positions `idx` (shaped like `g`)."""
    flat = _c("reshape", _c("zeros_like", x), newshape=(-1,))
    acc = _c(
        "scatter_elements",
        flat,
        _c("reshape", idx, newshape=(-1,)),
        _c("reshape", g, newshape=(-1,)),
        axis=0,
        reduction="add",
    )
    return _c("reshape_like", acc, x)


def _argmax_name(name: str) -> str:
    return name + "_with_argmax"


def max_pool_rule(nd: int) -> GradFn:
    name = f"nn.max_pool{nd}d"

    def rule(c, g, ctx):
        kw = attrs_to_dict(ctx.attrs)
        both = _c(_argmax_name(name), c.args[0], **kw)
        return [_scatter_flat(c.args[0], TupleGetItem(both, 1), g)]

    return rule


def max_pool_argmax_rule(nd: int) -> GradFn:
    name = f"nn.max_pool{nd}d"

    def rule_argmax(c, g, ctx):
        if ctx.attrs.storage_order != 0:
            kw = attrs_to_dict(ctx.attrs)
            kw["storage_order"] = 0
            idx = TupleGetItem(_c(_argmax_name(name), c.args[0], **kw), 1)
        else:
            idx = TupleGetItem(ctx.out, 1)
        return [_scatter_flat(c.args[0], idx, TupleGetItem(g, 0))]

    return rule_argmax


def _axis_matrices(c: Call, ctx: GradCtx, nd: int, layout: str) -> list[np.ndarray]:
    """Per spatial axis, the matrix A (out, in) of an op that is linear and acts on each
    spatial axis separately, from the op's reference run on unit vectors."""
    op = c.op.opdef
    ax = U.data_axes(layout, nd, op.name)
    xs = _static(ctx, 0, "the data")
    ys = _static(ctx, None, "the output")
    sp = [xs[i] for i in ax[2:]]
    osp = [ys[i] for i in ax[2:]]
    npd = dt.to_numpy(ctx.dtype(0))
    mats = []
    for j in range(nd):
        shape = [sp[j], 1] + [1] * nd
        shape[2 + j] = sp[j]
        basis = np.zeros(shape, npd)
        for s in range(sp[j]):
            basis[(s, 0) + tuple(s if i == j else 0 for i in range(nd))] = 1
        base = U.from_canonical(basis, ax)
        out = op.ref([base], c.attrs)
        zero = op.ref([np.zeros_like(base)], c.attrs)  # an affine op (extrapolation) offsets
        out = U.to_canonical(np.asarray(out, np.float64) - np.asarray(zero, np.float64), ax)
        idx = tuple(slice(None) if i == j else 0 for i in range(nd))
        a = out[(slice(None), 0) + idx]  # (in, out)
        if a.shape != (sp[j], osp[j]):
            raise RelayError(f"gradient of {op.name}: unexpected per-axis shape {a.shape}")
        mats.append(a.T.astype(npd))
    return mats


def separable_rule(name: str, nd: int, layout_attr: str = "layout") -> GradFn:
    """Gradient of a linear op acting on each spatial axis separately (resize, avg pooling)."""

    def rule(c, g, ctx):
        layout = getattr(ctx.attrs, layout_attr)
        mats = _axis_matrices(c, ctx, nd, layout)
        ax = U.data_axes(layout, nd, name)
        gc = _to_canonical(g, ax)
        letters = "hwd"[:nd]
        outs = "ijk"[:nd]
        eq = "nc" + outs + "," + ",".join(o + i for o, i in zip(outs, letters)) + "->nc" + letters
        mats_c = [Constant(m) for m in mats]
        dx = _c("einsum", gc, *mats_c, equation=eq)
        return [_from_canonical(dx, ax)] + [None] * (len(c.args) - 1)

    return rule


def global_avg_rule(nd: int) -> GradFn:
    def avg(c, g, ctx):
        return [mul(_c("broadcast_to_like", g, c.args[0]), _count_ratio(ctx))]

    return avg


def global_max_rule(nd: int) -> GradFn:
    def mx(c, g, ctx):
        x = c.args[0]
        ax = U.data_axes(ctx.attrs.layout, nd, c.op.name)
        mask = _c("cast", _c("equal", x, _c("broadcast_to_like", ctx.out, x)), dtype=ctx.dtype(0))
        cnt = _c("sum", mask, axis=tuple(ax[2:]), keepdims=True)
        return [div(mul(_c("broadcast_to_like", g, x), mask), _c("broadcast_to_like", cnt, x))]

    return mx


def global_lp_rule(nd: int) -> GradFn:
    def lp(c, g, ctx):
        x, y, p = c.args[0], ctx.out, ctx.attrs.p
        gy = _where(
            _c("equal", y, _zero(ctx)),
            _c("zeros_like", g),
            mul(g, _c("power", y, ctx.scalar(1.0 - p))),
        )
        return [mul(_c("broadcast_to_like", gy, x), _lp_inner(x, p, ctx))]

    return lp


def _lp_inner(x, p, ctx):
    """d |x|^p / dx / p = |x|^(p-1) sign(x)."""
    return mul(_c("power", _c("abs", x), ctx.scalar(p - 1.0, 0)), _c("sign", x))


def _op(name):
    from ..ir.expr import Op

    return Op.get(name)


def _pool_geometry(ctx: GradCtx, name: str, nd: int):
    """Canonical axes, channels, kernel, strides, dilation, (begin, end) pads that make a
    plain window sum produce exactly the op's output length (ceil_mode windows included),
    and the output padding that makes its adjoint produce the input length."""
    a = ctx.attrs
    ax = U.data_axes(a.layout, nd, name)
    xs = _static(ctx, 0, "the data")
    ys = _static(ctx, None, "the output")
    xs, ys = [xs[i] for i in ax], [ys[i] for i in ax]
    k = U.ntuple(a.pool_size, nd, "pool_size", name)
    st = U.ntuple(a.strides, nd, "strides", name)
    dl = U.ntuple(a.dilation, nd, "dilation", name)
    pads = U.resolve_pads(a.auto_pad, a.padding, xs[2:], k, st, dl, name)
    pb, pe, opad = [], [], []
    for i in range(nd):
        eff = dl[i] * (k[i] - 1) + 1
        b, e = pads[i]
        e = max(e, (ys[2 + i] - 1) * st[i] + eff - xs[2 + i] - b)
        pb.append(b)
        pe.append(e)
        opad.append(xs[2 + i] - ((ys[2 + i] - 1) * st[i] - b - e + eff))
    ones_k = Constant(np.ones((xs[1], 1, *k), dt.to_numpy(ctx.dtype(0))))
    conv = dict(strides=st, dilation=dl, padding=(*pb, *pe), groups=xs[1])
    return ax, ones_k, conv, tuple(opad)


def _window_sum(v: Expr, geom, nd: int) -> Expr:
    _, ones_k, conv, _ = geom
    return _c(_CONV[nd], v, ones_k, **conv)


def _window_sum_adjoint(g: Expr, geom, nd: int) -> Expr:
    _, ones_k, conv, opad = geom
    return _c(_CONV_T[nd], g, ones_k, output_padding=opad, **conv)


def avg_pool_rule(nd: int) -> GradFn:
    name = f"nn.avg_pool{nd}d"

    def rule(c, g, ctx):
        # avg = window_sum(x) / D, a window sum being a depthwise convolution with a kernel of
        # ones: d x = window_sum^T(g / D), with 1 / D = avg(ones) / window_sum(ones).
        geom = _pool_geometry(ctx, name, nd)
        ax = geom[0]
        one = _c("ones_like", _to_canonical(c.args[0], ax))
        wsum = _window_sum(one, geom, nd)
        avg1 = _to_canonical(Call(c.op, (_from_canonical(one, ax),), c.attrs), ax)
        inv = _where(_c("equal", wsum, _zero(ctx)), _c("zeros_like", wsum), div(avg1, wsum))
        dx = _window_sum_adjoint(mul(_to_canonical(g, ax), inv), geom, nd)
        return [_from_canonical(dx, ax)]

    return rule


def lp_pool_rule(nd: int) -> GradFn:
    name = f"nn.lp_pool{nd}d"

    def rule(c, g, ctx):
        # y = window_sum(|x|^p)^(1/p): d x = window_sum^T(g y^(1-p)) |x|^(p-1) sign(x).
        x, y, p = c.args[0], ctx.out, ctx.attrs.p
        geom = _pool_geometry(ctx, name, nd)
        ax = geom[0]
        gy = _where(
            _c("equal", y, _zero(ctx)),
            _c("zeros_like", g),
            mul(g, _c("power", y, ctx.scalar(1.0 - p))),
        )
        ds = _from_canonical(_window_sum_adjoint(_to_canonical(gy, ax), geom, nd), ax)
        return [mul(ds, _lp_inner(x, p, ctx))]

    return rule


def adaptive_max_rule(nd: int) -> GradFn:
    name = f"nn.adaptive_max_pool{nd}d"

    def rule(c, g, ctx):
        # Each output is the max of a window; the windows come from the adaptive average's
        # per-axis matrices (nonzero entries). The gradient goes to the maxima of each window.
        avg = Call(_op(f"nn.adaptive_avg_pool{nd}d"), c.args, c.attrs)
        mats = _axis_matrices(avg, ctx, nd, ctx.attrs.layout)
        ax = U.data_axes(ctx.attrs.layout, nd, name)
        x = _to_canonical(c.args[0], ax)
        y = _to_canonical(ctx.out, ax)
        gc = _to_canonical(g, ax)
        letters, outs = "hwd"[:nd], "ijk"[:nd]
        masks = [Constant((m != 0).astype(dt.to_numpy(ctx.dtype(0)))) for m in mats]
        # hit[n, c, out..., in...] = (x == y_window) within the window
        yb = _c(
            "einsum",
            y,
            *masks,
            equation="nc"
            + outs
            + ","
            + ",".join(o + i for o, i in zip(outs, letters))
            + "->nc"
            + outs
            + letters,
        )
        inside = _c(
            "einsum",
            *masks,
            equation=",".join(o + i for o, i in zip(outs, letters)) + "->" + outs + letters,
        )
        xb = _c("broadcast_to_like", _c("expand_dims", x, axis=2, num_newaxis=nd), yb)
        hit = mul(_c("cast", _c("equal", xb, yb), dtype=ctx.dtype(0)), inside)
        cnt = _c("sum", hit, axis=tuple(range(2 + nd, 2 + 2 * nd)), keepdims=True)
        share = div(hit, _c("maximum", cnt, ctx.scalar(1.0)))
        dx = _c(
            "einsum", gc, share, equation="nc" + outs + ",nc" + outs + letters + "->nc" + letters
        )
        return [_from_canonical(dx, ax)]

    return rule


def unpool_rule(nd: int) -> GradFn:
    def rule(c, g, ctx):
        x, ind = c.args
        idx = _c("broadcast_to_like", _c("cast", ind, dtype="int64"), x)
        flat = _c("reshape", g, newshape=(-1,))
        dx = _c("reshape_like", _c("take", flat, idx, axis=0), x)
        # Two inputs sent to one place: only the one written last lands there.
        ids = _c(
            "cast",
            _c(
                "reshape_like",
                _c("cumsum", _c("cast", _c("ones_like", x), dtype="int64"), axis=None),
                x,
            ),
            dtype=ctx.dtype(0),
        )
        landed = _c("reshape", Call(c.op, (ids, ind), c.attrs), newshape=(-1,))
        won = _c("equal", _c("reshape_like", _c("take", landed, idx, axis=0), x), ids)
        return [_where(won, dx, _c("zeros_like", dx)), None]

    return rule


# -- padding and layout moves ---------------------------------------------------------------------
def _pad(c, g, ctx):
    kw = attrs_to_dict(ctx.attrs)
    kw["pad_value"] = 0.0  # padded places must read as "no element" (0) in gather_adjoint
    run = Call(_op("nn.pad"), c.args, lookup("nn.pad").make_attrs(**kw))
    dx = gather_adjoint(run, g, ctx, 0, tuple(range(len(c.args))))
    out = [dx]
    if len(c.args) == 2:
        if ctx.attrs.pad_mode == "constant" and _float(ctx, 1):
            mask = Call(
                _op("nn.pad"),
                (_c("zeros_like", c.args[0]),),
                lookup("nn.pad").make_attrs(**dict(kw, pad_value=1.0)),
            )
            out.append(_c("reshape_like", _c("sum", mul(g, mask)), c.args[1]))
        else:
            out.append(ctx.zeros(1) if _float(ctx, 1) else None)
    return out


# depth_to_space, space_to_depth: a permutation of the elements
_g_depth_space = lambda c, g, ctx: [gather_adjoint(c, g, ctx, 0)]


def _affine_grid(c, g, ctx):
    # The grid is linear in theta: d theta[n, i, k] = sum_pos g[n, pos, i] * base[pos, k], with
    # base[pos, k] read off the op's reference for unit thetas.
    op = c.op.opdef
    n, rows, cols = _static(ctx, 0, "theta")
    npd = dt.to_numpy(ctx.dtype(0))
    base = []
    for k in range(cols):
        th = np.zeros((n, rows, cols), npd)
        th[:, 0, k] = 1
        base.append(np.asarray(op.ref([th], c.attrs))[0, ..., 0])
    b = Constant(np.stack(base, axis=-1).astype(npd))  # (*spatial, cols)
    nsp = b.data.ndim - 1
    sp = "hwd"[:nsp]
    return [_c("einsum", g, b, equation=f"n{sp}i,{sp}k->nik")]


__all__ = ["conv_weight_grad", "separable_rule"]
