"""Backward (gradient) ops of core ATen, as they appear in joint forward-backward graphs:
convolution, pooling, normalisation and embedding gradients, built from forward Relay ops."""

from __future__ import annotations

import math

import numpy as np

from relay_core.ir import Expr

from .ops_nn import _LAYOUTS, _tuple
from .table import aten


def _static(ctx, shape, what):
    if not all(isinstance(d, int) for d in shape):
        raise ctx.error(f"{what} needs static sizes, got {shape}")
    return tuple(shape)


# -- convolution ----------------------------------------------------------------------------------


def _conv(ctx, x, w, nd, stride, padding, dilation, groups=1):
    return ctx.call(
        f"nn.conv{nd}d",
        x,
        w,
        strides=stride,
        padding=padding,
        dilation=dilation,
        groups=groups,
        data_layout=_LAYOUTS[nd][0],
        kernel_layout=_LAYOUTS[nd][1],
    )


def _swap01(ctx, x):
    axes = (1, 0) + tuple(range(2, ctx.ndim(x)))
    return ctx.call("transpose", x, axes=axes)


def _weight_grad(ctx, data, grad, nd, stride, padding, dilation, groups, ksize, cin, cout):
    """d(conv)/d(weight) as a convolution over the batch axis, one per group:
    result[o, i, k] = sum_{n, y} grad[n, o, y] * data_padded[n, i, y * stride + k * dilation]."""
    gi, go = cin // groups, cout // groups
    parts = []
    for j in range(groups):
        d = (
            data
            if groups == 1
            else ctx.call("strided_slice", data, begin=(j * gi,), end=((j + 1) * gi,), axes=(1,))
        )
        g = (
            grad
            if groups == 1
            else ctx.call("strided_slice", grad, begin=(j * go,), end=((j + 1) * go,), axes=(1,))
        )
        # data as (Cin_g, N, spatial), grad as a (Cout_g, N, out spatial) kernel
        r = _conv(ctx, _swap01(ctx, d), _swap01(ctx, g), nd, dilation, padding, stride)
        r = ctx.call("strided_slice", r, begin=(0,) * nd, end=ksize, axes=tuple(range(2, 2 + nd)))
        parts.append(_swap01(ctx, r))  # (Cout_g, Cin_g, k...)
    return parts[0] if groups == 1 else ctx.call("concatenate", *parts, axis=0)


@aten("convolution_backward.default")
def convolution_backward(
    ctx,
    grad_output,
    input,
    weight,
    bias_sizes,
    stride,
    padding,  # noqa: A002
    dilation,
    transposed,
    output_padding,
    groups,
    output_mask,
):
    """(grad_input, grad_weight, grad_bias)."""
    nd = ctx.ndim(weight) - 2
    s, p, d = _tuple(stride, nd), _tuple(padding, nd), _tuple(dilation, nd)
    x_shape = _static(ctx, ctx.shape_of(input), "convolution_backward")
    g_shape = _static(ctx, ctx.shape_of(grad_output), "convolution_backward")
    w_shape = _static(ctx, ctx.shape_of(weight), "convolution_backward")
    ksize = w_shape[2:]
    out_mask = list(output_mask) if output_mask is not None else [True, True, True]
    if not transposed:
        # grad_input: the transposed convolution of grad, sized back to the input
        op = tuple(
            x_shape[2 + i] + 2 * p[i] - d[i] * (ksize[i] - 1) - 1 - (g_shape[2 + i] - 1) * s[i]
            for i in range(nd)
        )
        gin = (
            ctx.call(
                f"nn.conv{nd}d_transpose",
                grad_output,
                weight,
                strides=s,
                padding=p,
                dilation=d,
                groups=groups,
                output_padding=op,
                data_layout=_LAYOUTS[nd][0],
                kernel_layout=_LAYOUTS[nd][2],
            )
            if out_mask[0]
            else None
        )
        gw = (
            _weight_grad(
                ctx, input, grad_output, nd, s, p, d, groups, ksize, x_shape[1], g_shape[1]
            )
            if out_mask[1]
            else None
        )
    else:
        gin = _conv(ctx, grad_output, weight, nd, s, p, d, groups) if out_mask[0] else None
        # y = conv_transpose(x, w): w[i, o, k] pairs x channel i with grad channel o
        gw = (
            _weight_grad(
                ctx, grad_output, input, nd, s, p, d, groups, ksize, g_shape[1], x_shape[1]
            )
            if out_mask[1]
            else None
        )
    gb = None
    if out_mask[2]:
        axes = (0,) + tuple(range(2, 2 + nd))
        gb = ctx.call("sum", grad_output, axis=axes)
    return gin, gw, gb


# -- pooling --------------------------------------------------------------------------------------


def _avg_matrix(n, out, k, s, p, ceil_mode, count_include_pad, divisor):
    """(n, out) weights of one spatial axis of avg_pool's gradient (torch's divide factors)."""
    m = np.zeros((n, out), np.float64)
    for o in range(out):
        start = o * s - p
        end = min(start + k, n + p)
        pool = end - start
        lo, hi = max(start, 0), min(end, n)
        if divisor:
            f = 1.0
        elif count_include_pad:
            f = 1.0 / pool
        else:
            f = 1.0 / max(hi - lo, 1)
        m[lo:hi, o] = f
    return m


def _avg_pool_backward(nd: int):
    def avg_pool_backward(
        ctx,
        grad_output,
        self,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
    ):
        k = _tuple(kernel_size, nd)
        s = _tuple(stride, nd) if stride not in (None, [], ()) else k
        p = _tuple(padding, nd)
        x_sp = _static(ctx, ctx.shape_of(self)[-nd:], "avg_pool backward")
        g_sp = _static(ctx, ctx.shape_of(grad_output)[-nd:], "avg_pool backward")
        mats = [
            _avg_matrix(
                x_sp[i], g_sp[i], k[i], s[i], p[i], ceil_mode, count_include_pad, divisor_override
            )
            for i in range(nd)
        ]
        if divisor_override:
            mats[0] = mats[0] / divisor_override
        return _separable(ctx, grad_output, mats)

    aten(f"avg_pool{nd}d_backward.default")(avg_pool_backward)


_avg_pool_backward(2)
_avg_pool_backward(3)


def _separable(ctx, grad, mats):
    """grad_in[..., h, w] = sum_{y, x} M0[h, y] * M1[w, x] * grad[..., y, x]."""
    nd = len(mats)
    d = ctx.dtype(grad)
    ins, outs = "abc"[:nd], "hwz"[:nd]
    terms = [f"{outs[i]}{ins[i]}" for i in range(nd)]
    eq = ",".join(terms) + f",...{ins}->...{outs}"
    consts = [ctx.const(m.astype(np.float64), "float64") for m in mats]
    consts = [ctx.cast(c, d) for c in consts]
    return ctx.call("einsum", *consts, grad, equation=eq)


def _adaptive_matrix(n, out):
    m = np.zeros((n, out), np.float64)
    for i in range(out):
        lo = (i * n) // out
        hi = -(-((i + 1) * n) // out)
        m[lo:hi, i] = 1.0 / (hi - lo)
    return m


def _adaptive_backward(nd: int):
    def adaptive_avg_pool_backward(ctx, grad_output, self):
        x_sp = _static(ctx, ctx.shape_of(self)[-nd:], "adaptive pooling backward")
        g_sp = _static(ctx, ctx.shape_of(grad_output)[-nd:], "adaptive pooling backward")
        mats = [_adaptive_matrix(x_sp[i], g_sp[i]) for i in range(nd)]
        return _separable(ctx, grad_output, mats)

    aten(f"_adaptive_avg_pool{nd}d_backward.default")(adaptive_avg_pool_backward)


_adaptive_backward(2)
_adaptive_backward(3)


def _max_pool_backward(nd: int):
    def max_pool_with_indices_backward(
        ctx, grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices
    ):
        """Scatter-add each output gradient to its argmax (flat per (n, c) plane)."""
        x_sp = _static(ctx, ctx.shape_of(self)[-nd:], "max_pool backward")
        g_sp = _static(ctx, ctx.shape_of(grad_output)[-nd:], "max_pool backward")
        plane, oplane = math.prod(x_sp), math.prod(g_sp)
        g = ctx.call("reshape", grad_output, newshape=(-1, oplane))
        idx = ctx.call("reshape", ctx.cast(indices, "int64"), newshape=(-1, oplane))
        zeros = ctx.call("reshape", ctx.call("zeros_like", self), newshape=(-1, plane))
        out = ctx.call("scatter_elements", zeros, idx, g, axis=1, reduction="add")
        return ctx.call("reshape_like", out, self)

    aten(f"max_pool{nd}d_with_indices_backward.default")(max_pool_with_indices_backward)


_max_pool_backward(2)
_max_pool_backward(3)


# -- embedding ------------------------------------------------------------------------------------


@aten("embedding_dense_backward.default")
def embedding_dense_backward(
    ctx, grad_output, indices, num_weights, padding_idx, scale_grad_by_freq
):
    g = ctx.expr(grad_output)
    d = ctx.dtype(g)
    dim = ctx.dim_size(g, -1)
    if isinstance(dim, Expr):
        raise ctx.error("embedding backward needs a static embedding size")
    g = ctx.call("reshape", g, newshape=(-1, dim))
    idx = ctx.call("reshape", ctx.cast(indices, "int64"), newshape=(-1,))
    if padding_idx is not None and padding_idx >= 0:
        keep = ctx.call("not_equal", idx, ctx.const(padding_idx, "int64"))
        g = ctx.call("where", ctx.call("expand_dims", keep, axis=1), g, ctx.expr(0.0, d))
    zeros = ctx.call("zeros", shape=(num_weights, dim), dtype=d)
    if scale_grad_by_freq:
        counts = ctx.call(
            "scatter_nd",
            ctx.call("zeros", shape=(num_weights,), dtype=d),
            ctx.call("expand_dims", idx, axis=0),
            ctx.call("ones_like", ctx.cast(idx, d)),
            mode="add",
        )
        g = ctx.call(
            "divide", g, ctx.call("expand_dims", ctx.call("take", counts, idx, axis=0), axis=1)
        )
    return ctx.call("scatter_nd", zeros, ctx.call("expand_dims", idx, axis=0), g, mode="add")


# -- normalisation --------------------------------------------------------------------------------


def _norm_grad_input(ctx, gw, xhat, rstd, axes):
    """rstd * (gw - mean(gw) - xhat * mean(gw * xhat)) over `axes`."""
    m1 = ctx.call("mean", gw, axis=axes, keepdims=True)
    m2 = ctx.call("mean", ctx.call("multiply", gw, xhat), axis=axes, keepdims=True)
    inner = ctx.call("subtract", ctx.call("subtract", gw, m1), ctx.call("multiply", xhat, m2))
    return ctx.call("multiply", rstd, inner)


@aten("native_layer_norm_backward.default")
def native_layer_norm_backward(
    ctx,
    grad_out,
    input,
    normalized_shape,
    mean,
    rstd,  # noqa: A002
    weight,
    bias,
    output_mask,
):
    x, g = ctx.expr(input), ctx.expr(grad_out)
    nd = ctx.ndim(x)
    k = len(normalized_shape)
    axes = tuple(range(nd - k, nd))
    lead = tuple(range(nd - k))
    xhat = ctx.call("multiply", ctx.call("subtract", x, mean), rstd)
    gw = ctx.call("multiply", g, weight) if weight is not None else g
    gin = _norm_grad_input(ctx, gw, xhat, rstd, axes)
    gweight = (
        ctx.call("sum", ctx.call("multiply", g, xhat), axis=lead)
        if lead
        else ctx.call("multiply", g, xhat)
    )
    gbias = ctx.call("sum", g, axis=lead) if lead else g
    return gin, gweight if weight is not None else None, gbias if bias is not None else None


@aten("native_group_norm_backward.default")
def native_group_norm_backward(
    ctx,
    grad_out,
    input,
    mean,
    rstd,
    weight,
    N,
    C,
    HxW,  # noqa: A002
    group,
    output_mask,
):  # noqa: N803
    x, g = ctx.expr(input), ctx.expr(grad_out)
    shape = ctx.shape_of(x)
    cg = C // group
    xg = ctx.call("reshape", x, newshape=(N, group, cg, -1))
    gg = ctx.call("reshape", g, newshape=(N, group, cg, -1))
    m = ctx.call("reshape", mean, newshape=(N, group, 1, 1))
    r = ctx.call("reshape", rstd, newshape=(N, group, 1, 1))
    xhat = ctx.call("multiply", ctx.call("subtract", xg, m), r)
    if weight is not None:
        wg = ctx.call("reshape", weight, newshape=(1, group, cg, 1))
        gw = ctx.call("multiply", gg, wg)
    else:
        gw = gg
    gin = _norm_grad_input(ctx, gw, xhat, r, (2, 3))
    gin = (
        ctx.call("reshape", gin, newshape=shape)
        if all(isinstance(d, int) for d in shape)
        else ctx.call("reshape_like", gin, x)
    )
    per_c = (0, 3)
    gweight = ctx.call(
        "reshape", ctx.call("sum", ctx.call("multiply", gg, xhat), axis=per_c), newshape=(C,)
    )
    gbias = ctx.call("reshape", ctx.call("sum", gg, axis=per_c), newshape=(C,))
    return gin, gweight if weight is not None else None, gbias


# -- resize_ --------------------------------------------------------------------------------------


@aten("resize_.default", "resize.default")
def resize_(ctx, self, size, memory_format=None):
    """The value of `self` after resize_: its elements in order, cut or zero-extended (new
    elements are uninitialised in torch)."""
    new = ctx.static_ints(size)
    old = ctx.shape_of(self)
    if new is None or not all(isinstance(d, int) for d in old):
        raise ctx.error("resize_ needs static sizes")
    n_old, n_new = math.prod(old), math.prod(new)
    flat = ctx.call("reshape", self, newshape=(-1,))
    if n_new < n_old:
        flat = ctx.call("strided_slice", flat, begin=(0,), end=(n_new,))
    elif n_new > n_old:
        flat = ctx.call(
            "nn.pad", flat, ctx.expr(0, ctx.dtype(self)), pad_width=((0, n_new - n_old),)
        )
    return ctx.call("reshape", flat, newshape=new)
