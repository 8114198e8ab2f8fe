"""Convolutions, matrix products, normalisation and attention, mapped to structured Relay ops
(nn.conv2d, nn.dense, nn.batch_norm, nn.layer_norm, ...)."""

from __future__ import annotations

import math

import numpy as np

from relay_core.ir import Call, Expr

from .ops_reduce import softmax
from .table import aten

_LAYOUTS = {1: ("NCW", "OIW", "IOW"), 2: ("NCHW", "OIHW", "IOHW"), 3: ("NCDHW", "OIDHW", "IODHW")}


def _tuple(v, n):
    if isinstance(v, (list, tuple)):
        v = list(v)
        return tuple(v * n if len(v) == 1 else v)
    return (v,) * n


def conv(
    ctx, x, weight, bias, stride, padding, dilation, transposed=False, output_padding=0, groups=1
):
    """Any torch convolution as nn.conv{1,2,3}d[_transpose] plus nn.bias_add."""
    x = ctx.expr(x)
    nd = ctx.ndim(weight) - 2
    if nd not in _LAYOUTS:
        raise ctx.error(f"{nd}-D convolution is not supported")
    unbatched = ctx.ndim(x) == nd + 1
    if unbatched:
        x = ctx.call("expand_dims", x, axis=0)
    data_layout, kernel_layout, transposed_layout = _LAYOUTS[nd]
    if isinstance(padding, str):
        padding = _same_padding(ctx, weight, dilation, nd) if padding == "same" else (0,) * nd
    else:
        padding = _tuple(padding, nd)
    kw = dict(
        strides=_tuple(stride, nd),
        padding=padding,
        dilation=_tuple(dilation, nd),
        groups=groups,
        data_layout=data_layout,
    )
    suffix = "d_transpose" if transposed else "d"
    if transposed:
        kw.update(kernel_layout=transposed_layout, output_padding=_tuple(output_padding, nd))
    else:
        kw.update(kernel_layout=kernel_layout)
    out = ctx.call(f"nn.conv{nd}{suffix}", x, weight, **kw)
    if bias is not None:
        out = ctx.call("nn.bias_add", out, bias, axis=1)
    if unbatched:
        out = ctx.call("squeeze", out, axis=(0,))
    return out


def _same_padding(ctx, weight, dilation, nd):
    ks = ctx.shape_of(weight)[2:]
    dil = _tuple(dilation, nd)
    begin, end = [], []
    for k, d in zip(ks, dil):
        total = d * (k - 1)
        begin.append(total // 2)
        end.append(total - total // 2)
    return tuple(begin + end)


@aten("convolution.default", "_convolution.default")
def convolution(
    ctx,
    input,
    weight,
    bias,
    stride,
    padding,
    dilation,
    transposed,  # noqa: A002
    output_padding,
    groups,
    *_,
):
    return conv(
        ctx, input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
    )


@aten(
    "conv1d.default",
    "conv2d.default",
    "conv3d.default",
    "conv1d.padding",
    "conv2d.padding",
    "conv3d.padding",
)
def conv_nd(
    ctx,
    input,
    weight,
    bias=None,
    stride=1,
    padding=0,
    dilation=1,  # noqa: A002
    groups=1,
):
    return conv(ctx, input, weight, bias, stride, padding, dilation, False, 0, groups)


@aten("conv_transpose1d.default", "conv_transpose2d.input", "conv_transpose3d.input")
def conv_transpose(
    ctx,
    input,
    weight,
    bias=None,
    stride=1,
    padding=0,  # noqa: A002
    output_padding=0,
    groups=1,
    dilation=1,
):
    return conv(ctx, input, weight, bias, stride, padding, dilation, True, output_padding, groups)


# -- matrix products ------------------------------------------------------------------------------


def _untransposed(e):
    """w when e is transpose(w) of a matrix (linear's weight after decomposition)."""
    if isinstance(e, Call) and getattr(e.op, "name", "") == "transpose":
        axes = e.attrs.axes
        if axes in ((1, 0), None):
            return e.args[0]
    return None


def matmul2d(ctx, a, b):
    """a @ b for matrices; nn.dense when b is a transposed weight."""
    w = _untransposed(b)
    if w is not None and ctx.ndim(w) == 2:
        return ctx.call("nn.dense", a, w)
    return ctx.call("nn.matmul", a, b)


@aten("linear.default")
def linear(ctx, input, weight, bias=None):  # noqa: A002
    x = ctx.expr(input)
    if ctx.ndim(weight) == 1:  # a vector weight: a dot product over the last axis
        out = ctx.call("nn.matmul", x, weight)
    else:
        out = ctx.call("nn.dense", x, weight)
    if bias is not None:
        out = ctx.call("add", out, ctx.cast(bias, ctx.dtype(out)))
    return out


@aten("mm.default")
def mm(ctx, self, mat2):
    return matmul2d(ctx, self, mat2)


@aten("addmm.default")
def addmm(ctx, self, mat1, mat2, *, beta=1, alpha=1):
    return _scaled_add(ctx, self, matmul2d(ctx, mat1, mat2), beta, alpha)


@aten("bmm.default")
def bmm(ctx, self, mat2):
    return ctx.call("nn.batch_matmul", self, mat2, transpose_b=False)


@aten("matmul.default")
def matmul(ctx, self, other):
    if ctx.ndim(self) == 2 and ctx.ndim(other) == 2:
        return matmul2d(ctx, self, other)
    return ctx.call("nn.matmul", self, other)


@aten("baddbmm.default")
def baddbmm(ctx, self, batch1, batch2, *, beta=1, alpha=1):
    prod = ctx.call("nn.batch_matmul", batch1, batch2, transpose_b=False)
    return _scaled_add(ctx, self, prod, beta, alpha)


def _scaled_add(ctx, self, prod, beta, alpha):
    d = ctx.dtype(prod)
    if alpha != 1:
        prod = ctx.call("multiply", prod, ctx.expr(alpha, d))
    if beta == 0:
        return prod
    bias = ctx.expr(self, d)
    if beta != 1:
        bias = ctx.call("multiply", bias, ctx.expr(beta, d))
    return ctx.call("add", prod, bias)


@aten("addmv.default")
def addmv(ctx, self, mat, vec, *, beta=1, alpha=1):
    return _scaled_add(ctx, self, ctx.call("nn.matmul", mat, vec), beta, alpha)


@aten("mv.default", "dot.default", "vdot.default")
def mv(ctx, self, other):
    return ctx.call("nn.matmul", self, other)


@aten("inner.default")
def inner(ctx, self, other):
    if ctx.ndim(self) == 0 or ctx.ndim(other) == 0:
        return ctx.call("multiply", *ctx.operands(self, other))
    letters = "abcdefghijklmnopqrstuvwxy"
    na, nb = ctx.ndim(self) - 1, ctx.ndim(other) - 1
    a, b = letters[:na], letters[na : na + nb]
    return ctx.call("einsum", self, other, equation=f"{a}z,{b}z->{a}{b}")


@aten("outer.default", "ger.default")
def outer(ctx, self, vec2):
    a = ctx.call("expand_dims", self, axis=1)
    b = ctx.call("expand_dims", vec2, axis=0)
    return ctx.call("multiply", *ctx.operands(a, b))


@aten("einsum.default")
def einsum(ctx, equation, tensors, *, path=None):
    ts = list(tensors)
    d = ctx.out_dtype() or ctx.promote(*ts)
    return ctx.call("einsum", *[ctx.cast(t, d) for t in ts], equation=equation.replace(" ", ""))


@aten("tensordot.default")
def tensordot(ctx, self, other, dims_self, dims_other):
    letters = "abcdefghijklmnopqrstuvwxyz"
    na, nb = ctx.ndim(self), ctx.ndim(other)
    a = list(letters[:na])
    b = list(letters[na : na + nb])
    for i, j in zip(dims_self, dims_other):
        b[j % nb] = a[i % na]
    out = [c for k, c in enumerate(a) if k not in [i % na for i in dims_self]]
    out += [c for k, c in enumerate(b) if k not in [j % nb for j in dims_other]]
    eq = f"{''.join(a)},{''.join(b)}->{''.join(out)}"
    return ctx.call("einsum", self, other, equation=eq)


# -- normalisation --------------------------------------------------------------------------------


def _channel_param(ctx, v, like_channels, value, dtype):
    """gamma / beta, or ones / zeros of the channel count when the module has none."""
    if v is not None:
        return ctx.cast(ctx.expr(v), dtype)
    return ctx.call("full_like", like_channels, ctx.expr(value, dtype))


def _channels_like(ctx, x, axis=1):
    """A (C,) tensor shaped like x's channel axis (for missing affine parameters)."""
    c = ctx.dim_size(x, axis)
    d = ctx.dtype(x)
    if isinstance(c, int):
        return ctx.call("zeros", shape=(c,), dtype=d)
    return ctx.call("dyn.zeros", ctx.call("reshape", ctx.expr(c, "int64"), newshape=(1,)), dtype=d)


def _reduce_axes_except(ctx, x, axis=1):
    return tuple(i for i in range(ctx.ndim(x)) if i != axis)


def batch_stats(ctx, x):
    """Per-channel mean and biased variance over every axis but 1."""
    axes = _reduce_axes_except(ctx, x)
    mean = ctx.call("mean", x, axis=axes)
    var = ctx.call("variance", x, axis=axes)
    return mean, var


def batch_norm(ctx, x, weight, bias, mean, var, eps):
    d = ctx.dtype(x)
    like = mean if mean is not None else _channels_like(ctx, x)
    bn = ctx.call(
        "nn.batch_norm",
        x,
        _channel_param(ctx, weight, like, 1.0, d),
        _channel_param(ctx, bias, like, 0.0, d),
        ctx.cast(mean, d),
        ctx.cast(var, d),
        axis=1,
        epsilon=float(eps),
    )
    return ctx.item(bn, 0)  # TVM's signature: (normalized, mean, var)


def _rstd(ctx, var, eps):
    return ctx.call("rsqrt", ctx.call("add", var, ctx.expr(float(eps), ctx.dtype(var))))


@aten("batch_norm.default")
def batch_norm_default(
    ctx,
    input,
    weight,
    bias,
    running_mean,
    running_var,  # noqa: A002
    training,
    momentum,
    eps,
    cudnn_enabled=True,
):
    x = ctx.expr(input)
    if training or running_mean is None:
        mean, var = batch_stats(ctx, x)
    else:
        mean, var = running_mean, running_var
    return batch_norm(ctx, x, weight, bias, mean, var, eps)


@aten("_native_batch_norm_legit_no_training.default")
def native_batch_norm_no_training(
    ctx,
    input,
    weight,
    bias,
    running_mean,  # noqa: A002
    running_var,
    momentum,
    eps,
):
    x = ctx.expr(input)
    out = batch_norm(ctx, x, weight, bias, running_mean, running_var, eps)
    empty = ctx.call("zeros", shape=(0,), dtype=ctx.dtype(x))
    return out, empty, empty


@aten(
    "_native_batch_norm_legit.default",
    "native_batch_norm.default",
    "_batch_norm_with_update.default",
)
def native_batch_norm(
    ctx,
    input,
    weight,
    bias,
    running_mean,
    running_var,  # noqa: A002
    training=True,
    momentum=0.1,
    eps=1e-5,
):
    x = ctx.expr(input)
    if isinstance(training, float):  # _batch_norm_with_update(momentum, eps)
        training, momentum, eps = True, training, momentum
    if training:
        mean, var = batch_stats(ctx, x)
        out = batch_norm(ctx, x, weight, bias, mean, var, eps)
        outs = (out, mean, _rstd(ctx, var, eps))
    else:
        out = batch_norm(ctx, x, weight, bias, running_mean, running_var, eps)
        empty = ctx.call("zeros", shape=(0,), dtype=ctx.dtype(x))
        outs = (out, empty, empty)
    if isinstance(ctx.meta, (tuple, list)) and len(ctx.meta) == 4:  # with a reserve buffer
        outs += (ctx.call("zeros", shape=(0,), dtype="uint8"),)
    return outs


@aten("_native_batch_norm_legit_functional.default")
def native_batch_norm_functional(
    ctx,
    input,
    weight,
    bias,
    running_mean,
    running_var,  # noqa: A002
    training,
    momentum,
    eps,
):
    """The functional form (what a program that updates its running statistics becomes once
    functionalised): the outputs of _native_batch_norm_legit plus the updated running mean and
    variance (the variance's update is unbiased, as torch's)."""
    x = ctx.expr(input)
    if not training:
        out, empty, _ = native_batch_norm_no_training(
            ctx, x, weight, bias, running_mean, running_var, momentum, eps
        )
        return out, empty, empty, ctx.expr(running_mean), ctx.expr(running_var)
    mean, var = batch_stats(ctx, x)
    out = batch_norm(ctx, x, weight, bias, mean, var, eps)
    d = ctx.dtype(x)
    unbiased = ctx.call("variance", x, axis=_reduce_axes_except(ctx, x), unbiased=True)

    def update(old, new):
        keep = ctx.call("multiply", ctx.expr(old), ctx.expr(1.0 - float(momentum), d))
        return ctx.call("add", keep, ctx.call("multiply", new, ctx.expr(float(momentum), d)))

    return (
        out,
        mean,
        _rstd(ctx, var, eps),
        update(running_mean, mean),
        update(running_var, unbiased),
    )


@aten("_batch_norm_with_update_functional.default")
def batch_norm_with_update_functional(
    ctx,
    input,
    weight,
    bias,
    running_mean,
    running_var,
    momentum,
    eps,  # noqa: A002
):
    """Training batch norm, functional: (out, mean, rstd, reserve, new running mean, var)."""
    out, mean, rstd, new_mean, new_var = native_batch_norm_functional(
        ctx, input, weight, bias, running_mean, running_var, True, momentum, eps
    )
    reserve = ctx.call("zeros", shape=(0,), dtype="uint8")
    return out, mean, rstd, reserve, new_mean, new_var


@aten("_native_batch_norm_legit.no_stats")
def native_batch_norm_no_stats(ctx, input, weight, bias, training, momentum, eps):  # noqa: A002
    x = ctx.expr(input)
    mean, var = batch_stats(ctx, x)
    out = batch_norm(ctx, x, weight, bias, mean, var, eps)
    return out, mean, _rstd(ctx, var, eps)


def _norm_axes(ctx, x, normalized_shape):
    nd = ctx.ndim(x)
    return tuple(range(nd - len(normalized_shape), nd))


def layer_norm(ctx, x, normalized_shape, weight, bias, eps):
    x = ctx.expr(x)
    d = ctx.dtype(x)
    axes = _norm_axes(ctx, x, normalized_shape)
    k = len(axes)
    if weight is None or bias is None:
        like = ctx.call("zeros", shape=tuple(normalized_shape), dtype=d)
        weight = weight if weight is not None else ctx.call("ones_like", like)
        bias = bias if bias is not None else like
    return ctx.call(
        "nn.layer_norm", x, ctx.cast(weight, d), ctx.cast(bias, d), axis=-k, epsilon=float(eps)
    )


@aten("layer_norm.default")
def layer_norm_default(
    ctx,
    input,
    normalized_shape,
    weight=None,
    bias=None,  # noqa: A002
    eps=1e-5,
    cudnn_enable=True,
):
    return layer_norm(ctx, input, normalized_shape, weight, bias, eps)


@aten("native_layer_norm.default")
def native_layer_norm(ctx, input, normalized_shape, weight, bias, eps):  # noqa: A002
    x = ctx.expr(input)
    out = layer_norm(ctx, x, normalized_shape, weight, bias, eps)
    axes = _norm_axes(ctx, x, normalized_shape)
    mean = ctx.call("mean", x, axis=axes, keepdims=True)
    var = ctx.call("variance", x, axis=axes, keepdims=True)
    return out, mean, _rstd(ctx, var, eps)


@aten("group_norm.default")
def group_norm(
    ctx,
    input,
    num_groups,
    weight=None,
    bias=None,
    eps=1e-5,  # noqa: A002
    cudnn_enabled=True,
):
    x = ctx.expr(input)
    d = ctx.dtype(x)
    like = _channels_like(ctx, x)
    return ctx.call(
        "nn.group_norm",
        x,
        _channel_param(ctx, weight, like, 1.0, d),
        _channel_param(ctx, bias, like, 0.0, d),
        num_groups=num_groups,
        axis=1,
        epsilon=float(eps),
    )


@aten("native_group_norm.default")
def native_group_norm(ctx, input, weight, bias, N, C, HxW, group, eps):  # noqa: A002, N803
    x = ctx.expr(input)
    out = group_norm(ctx, x, group, weight, bias, eps)
    grouped = ctx.call("reshape", x, newshape=(0, group, -1))
    mean = ctx.call("mean", grouped, axis=(2,))
    var = ctx.call("variance", grouped, axis=(2,))
    return out, mean, _rstd(ctx, var, eps)


@aten("instance_norm.default")
def instance_norm(
    ctx,
    input,
    weight,
    bias,
    running_mean,
    running_var,  # noqa: A002
    use_input_stats,
    momentum,
    eps,
    cudnn_enabled=True,
):
    x = ctx.expr(input)
    d = ctx.dtype(x)
    if not use_input_stats:
        return batch_norm(ctx, x, weight, bias, running_mean, running_var, eps)
    like = _channels_like(ctx, x)
    return ctx.call(
        "nn.instance_norm",
        x,
        _channel_param(ctx, weight, like, 1.0, d),
        _channel_param(ctx, bias, like, 0.0, d),
        axis=1,
        epsilon=float(eps),
    )


@aten("rms_norm.default")
def rms_norm(ctx, input, normalized_shape, weight=None, eps=None):  # noqa: A002
    x = ctx.expr(input)
    d = ctx.dtype(x)
    if eps is None:
        eps = float(np.finfo(np.float32 if d == "float32" else np.float64).eps)
    k = len(normalized_shape)
    if weight is None:
        weight = ctx.call("ones", shape=tuple(normalized_shape), dtype=d)
    return ctx.call("nn.rms_norm", x, ctx.cast(weight, d), axis=-k, epsilon=float(eps))


# -- attention ------------------------------------------------------------------------------------


def attention(ctx, q, k, v, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    """softmax(q @ k^T * scale + mask) @ v, from structured ops."""
    q, k, v = ctx.expr(q), ctx.expr(k), ctx.expr(v)
    d = ctx.dtype(q)
    e = ctx.dim_size(q, -1)
    if scale is None:
        if isinstance(e, Expr):
            raise ctx.error("attention over a symbolic head size needs an explicit scale")
        scale = 1.0 / math.sqrt(e)
    if enable_gqa and ctx.ndim(q) >= 3:
        hq, hk = ctx.dim_size(q, -3), ctx.dim_size(k, -3)
        if isinstance(hq, int) and isinstance(hk, int) and hq != hk:
            k = ctx.call("repeat", k, repeats=hq // hk, axis=ctx.ndim(k) - 3)
            v = ctx.call("repeat", v, repeats=hq // hk, axis=ctx.ndim(v) - 3)
    scores = ctx.call("nn.matmul", q, k, transpose_b=True)
    scores = ctx.call("multiply", scores, ctx.expr(float(scale), d))
    if is_causal:
        lq, lk = ctx.dim_size(q, -2), ctx.dim_size(k, -2)
        ones = (
            ctx.call("full", ctx.expr(True, "bool"), shape=(lq, lk), dtype="bool")
            if isinstance(lq, int) and isinstance(lk, int)
            else None
        )
        if ones is None:
            raise ctx.error("causal attention over symbolic lengths is not supported")
        causal = ctx.call("trilu", ones, k=0, upper=False)
        scores = ctx.call("where", causal, scores, ctx.expr(-math.inf, d))
    if attn_mask is not None:
        m = ctx.expr(attn_mask)
        if ctx.dtype(m) == "bool":
            scores = ctx.call("where", m, scores, ctx.expr(-math.inf, d))
        else:
            scores = ctx.call("add", scores, ctx.cast(m, d))
    probs = softmax(ctx, scores, -1)
    return ctx.call("nn.matmul", probs, v)


@aten("scaled_dot_product_attention.default")
def scaled_dot_product_attention(
    ctx,
    query,
    key,
    value,
    attn_mask=None,
    dropout_p=0.0,
    is_causal=False,
    *,
    scale=None,
    enable_gqa=False,
):
    return attention(ctx, query, key, value, attn_mask, is_causal, scale, enable_gqa)


@aten("_scaled_dot_product_flash_attention_for_cpu.default")
def sdpa_flash_cpu(
    ctx, query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None
):
    out = attention(ctx, query, key, value, attn_mask, is_causal, scale)
    lse = ctx.call("zeros", shape=ctx.out_shape(1) or (0,), dtype="float32")
    return out, lse


@aten("_embedding_bag.default", "_embedding_bag_forward_only.default", "embedding_bag.padding_idx")
def embedding_bag(
    ctx,
    weight,
    indices,
    offsets,
    scale_grad_by_freq=False,
    mode=0,
    sparse=False,
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=-1,
):
    """(output, offset2bag, bag_size, max_indices) of EmbeddingBag over 1-D indices."""
    w = ctx.expr(weight)
    d = ctx.dtype(w)
    idx = ctx.cast(ctx.expr(indices), "int64")
    if ctx.ndim(idx) == 2:  # fixed-size bags: offsets are implied
        rows = ctx.call("take", w, idx, axis=0)  # (B, L, D)
        if per_sample_weights is not None:
            rows = ctx.call("multiply", rows, ctx.call("expand_dims", per_sample_weights, axis=2))
        red = {0: "sum", 1: "mean", 2: "max"}[mode]
        out = ctx.call(red, rows, axis=(1,))
        return (
            out,
            ctx.call("zeros", shape=(0,), dtype="int64"),
            ctx.call("zeros", shape=(0,), dtype="int64"),
            ctx.call("zeros", shape=(0,), dtype="int64"),
        )
    offs = ctx.cast(ctx.expr(offsets), "int64")
    n = ctx.dim_size(idx, 0)
    nb = ctx.dim_size(offs, 0)
    if include_last_offset:
        nb = nb - 1 if isinstance(nb, int) else nb
        offs = ctx.call("strided_slice", offs, begin=(0,), end=(nb,))
    pos = ctx.iota(n)
    # bag of position i: the number of offsets <= i, minus one
    ge = ctx.call(
        "greater_equal", ctx.call("expand_dims", pos, axis=1), ctx.call("expand_dims", offs, axis=0)
    )  # (N, B)
    bag = ctx.call(
        "subtract", ctx.call("sum", ctx.cast(ge, "int64"), axis=(1,)), ctx.const(1, "int64")
    )
    nbags = ctx.iota(nb)
    member = ctx.call(
        "equal", ctx.call("expand_dims", bag, axis=1), ctx.call("expand_dims", nbags, axis=0)
    )  # (N, B)
    if padding_idx is not None and padding_idx >= 0:
        keep = ctx.call("not_equal", idx, ctx.const(padding_idx, "int64"))
        member = ctx.call("logical_and", member, ctx.call("expand_dims", keep, axis=1))
    rows = ctx.call("take", w, idx, axis=0)  # (N, D)
    if per_sample_weights is not None:
        rows = ctx.call("multiply", rows, ctx.call("expand_dims", per_sample_weights, axis=1))
    m = ctx.cast(member, d)
    counts = ctx.call("sum", m, axis=(0,))  # (B,)
    if mode == 2:
        big = ctx.call(
            "where",
            ctx.call("expand_dims", member, axis=2),
            ctx.call("expand_dims", rows, axis=1),
            ctx.expr(-math.inf, d),
        )
        out = ctx.call("max", big, axis=(0,))
        out = ctx.call("where", ctx.call("isinf", out), ctx.expr(0.0, d), out)
    else:
        out = ctx.call("einsum", m, rows, equation="nb,nd->bd")
        if mode == 1:
            denom = ctx.call("maximum", counts, ctx.expr(1.0, d))
            out = ctx.call("divide", out, ctx.call("expand_dims", denom, axis=1))
    return out, bag, ctx.cast(counts, "int64"), ctx.cast(counts, "int64")
