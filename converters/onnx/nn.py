"""Neural-network ops: convolution, pooling, normalisation, activations, matmul / Gemm."""

from __future__ import annotations

import numpy as np

from .table import converter
from .util import cast, normalize_axis, scalar, scalar_like


def _nd(ctx, x, what="input"):
    nd = ctx.ndim(x) - 2
    if nd not in (1, 2, 3):
        raise ctx.error(f"{what} must have 1 to 3 spatial axes, got rank {ctx.ndim(x)}")
    return nd


def _window(nd, kernel_shape, strides, dilations, pads):
    return dict(
        strides=tuple(strides or (1,) * nd),
        dilation=tuple(dilations or (1,) * nd),
        padding=tuple(pads or (0,) * (2 * nd)),
    )


def _auto_pad(ctx, auto_pad):
    if auto_pad not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        raise ctx.error(f"unknown auto_pad {auto_pad!r}")
    return auto_pad


# -- convolution ---------------------------------------------------------------------------------
@converter("Conv", 1)
def Conv(
    ctx,
    x,
    w,
    b=None,
    *,
    auto_pad="NOTSET",
    dilations=None,
    group=1,
    kernel_shape=None,
    pads=None,
    strides=None,
):
    nd = _nd(ctx, x)
    win = _window(nd, kernel_shape, strides, dilations, pads)
    out = ctx.call(f"nn.conv{nd}d", x, w, groups=group, auto_pad=_auto_pad(ctx, auto_pad), **win)
    if b is not None:
        out = ctx.call("nn.bias_add", out, b, axis=1)
    return out


@converter("ConvTranspose", 1)
def ConvTranspose(
    ctx,
    x,
    w,
    b=None,
    *,
    auto_pad="NOTSET",
    dilations=None,
    group=1,
    kernel_shape=None,
    output_padding=None,
    output_shape=None,
    pads=None,
    strides=None,
):
    nd = _nd(ctx, x)
    strides = list(strides or [1] * nd)
    dilations = list(dilations or [1] * nd)
    opad = list(output_padding or [0] * nd)
    wshape = ctx.shape_of(w)
    kernel = list(kernel_shape or wshape[2:])
    xshape = ctx.shape_of(x)[2:]
    if output_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if output_shape is None:
            output_shape = [xshape[i] * strides[i] for i in range(nd)]
        output_shape = list(output_shape)[-nd:]
        if not all(isinstance(d, int) for d in xshape):
            raise ctx.error("output_shape / SAME padding needs static spatial input dims")
        begin, end = [], []
        for i in range(nd):
            total = (
                strides[i] * (xshape[i] - 1)
                + opad[i]
                + (kernel[i] - 1) * dilations[i]
                + 1
                - output_shape[i]
            )
            if total < 0:  # the output is larger than the kernel covers: extra output padding
                opad[i] -= total
                total = 0
            half = total // 2
            if auto_pad == "SAME_UPPER":
                begin.append(half)
                end.append(total - half)
            else:
                begin.append(total - half)
                end.append(half)
        pads = begin + end
    elif auto_pad == "VALID" or pads is None:
        pads = [0] * (2 * nd)
    out = ctx.call(
        f"nn.conv{nd}d_transpose",
        x,
        w,
        strides=tuple(strides),
        padding=tuple(pads),
        output_padding=tuple(opad),
        dilation=tuple(dilations),
        groups=group,
    )
    if b is not None:
        out = ctx.call("nn.bias_add", out, b, axis=1)
    return out


# -- pooling -------------------------------------------------------------------------------------
@converter("MaxPool", 1)
def MaxPool(
    ctx,
    x,
    *,
    auto_pad="NOTSET",
    ceil_mode=0,
    dilations=None,
    kernel_shape,
    pads=None,
    storage_order=0,
    strides=None,
):
    nd = _nd(ctx, x)
    win = _window(nd, kernel_shape, strides, dilations, pads)
    kw = dict(
        pool_size=tuple(kernel_shape),
        ceil_mode=bool(ceil_mode),
        auto_pad=_auto_pad(ctx, auto_pad),
        **win,
    )
    if ctx.num_outputs > 1 and ctx.output_names[1]:
        out = ctx.call(f"nn.max_pool{nd}d_with_argmax", x, storage_order=storage_order, **kw)
        return [ctx.item(out, 0), ctx.item(out, 1)]
    return ctx.call(f"nn.max_pool{nd}d", x, **kw)


@converter("AveragePool", 1)
def AveragePool(
    ctx,
    x,
    *,
    auto_pad="NOTSET",
    ceil_mode=0,
    count_include_pad=0,
    dilations=None,
    kernel_shape,
    pads=None,
    strides=None,
):
    nd = _nd(ctx, x)
    win = _window(nd, kernel_shape, strides, dilations, pads)
    return ctx.call(
        f"nn.avg_pool{nd}d",
        x,
        pool_size=tuple(kernel_shape),
        ceil_mode=bool(ceil_mode),
        auto_pad=_auto_pad(ctx, auto_pad),
        count_include_pad=bool(count_include_pad),
        **win,
    )


@converter("LpPool", 1)
def LpPool(
    ctx,
    x,
    *,
    auto_pad="NOTSET",
    ceil_mode=0,
    dilations=None,
    kernel_shape,
    p=2,
    pads=None,
    strides=None,
):
    nd = _nd(ctx, x)
    win = _window(nd, kernel_shape, strides, dilations, pads)
    return ctx.call(
        f"nn.lp_pool{nd}d",
        x,
        pool_size=tuple(kernel_shape),
        ceil_mode=bool(ceil_mode),
        auto_pad=_auto_pad(ctx, auto_pad),
        p=float(p),
        **win,
    )


@converter("GlobalAveragePool", 1)
def GlobalAveragePool(ctx, x):
    return ctx.call(f"nn.global_avg_pool{_nd(ctx, x)}d", x)


@converter("GlobalMaxPool", 1)
def GlobalMaxPool(ctx, x):
    return ctx.call(f"nn.global_max_pool{_nd(ctx, x)}d", x)


@converter("GlobalLpPool", 2)
def GlobalLpPool(ctx, x, *, p=2):
    return ctx.call(f"nn.global_lp_pool{_nd(ctx, x)}d", x, p=float(p))


@converter("MaxUnpool", 9)
def MaxUnpool(ctx, x, indices, output_shape=None, *, kernel_shape, pads=None, strides=None):
    nd = _nd(ctx, x)
    # Indices address the shape MaxPool's input had (inferred from the window); a larger
    # output_shape pads zeros after it, as ONNX's reference does.
    out = ctx.call(
        f"nn.max_unpool{nd}d",
        x,
        indices,
        pool_size=tuple(kernel_shape),
        strides=tuple(strides or (1,) * nd),
        padding=tuple(pads or (0,) * (2 * nd)),
    )
    if output_shape is None:
        return out
    rank = nd + 2
    want = ctx.value(output_shape)
    have = ctx.shape_of(out)
    if want is not None and all(isinstance(d, int) for d in have):
        extra = [int(w) - int(h) for w, h in zip(want.reshape(-1), have)]
        if extra == [0] * rank:
            return out
        return ctx.call("nn.pad", out, pad_width=tuple((0, e) for e in extra))
    extra = ctx.call(
        "subtract", cast(ctx, output_shape, "int64"), ctx.call("shape_of", out, dtype="int64")
    )
    pads = ctx.call("concatenate", ctx.const(np.zeros(rank, np.int64)), extra, axis=0)
    return ctx.call("dyn.nn.pad", out, pads, scalar_like(ctx, 0, x))


# -- normalisation -----------------------------------------------------------------------------
@converter("BatchNormalization", 1)
def BatchNormalization(
    ctx,
    x,
    scale,
    b,
    mean,
    var,
    *,
    epsilon=1e-5,
    momentum=0.9,
    training_mode=0,
    spatial=1,
    is_test=1,
    consumed_inputs=None,
):
    if training_mode:
        return _batch_norm_training(ctx, x, scale, b, mean, var, epsilon, momentum)
    out = ctx.item(ctx.call("nn.batch_norm", x, scale, b, mean, var, axis=1, epsilon=epsilon), 0)
    if ctx.num_outputs > 1:
        return [out, mean, var][: ctx.num_outputs]
    return out


def _batch_norm_training(ctx, x, scale, b, mean, var, epsilon, momentum):
    """Normalise with the batch's statistics; also return the updated running ones."""
    axes = tuple(i for i in range(ctx.ndim(x)) if i != 1)
    bmean = ctx.call("mean", x, axis=axes)
    bvar = ctx.call("variance", x, axis=axes)
    y = ctx.item(ctx.call("nn.batch_norm", x, scale, b, bmean, bvar, axis=1, epsilon=epsilon), 0)
    m = scalar_like(ctx, momentum, mean)
    rest = scalar_like(ctx, 1 - momentum, mean)
    run_mean = ctx.call("add", ctx.call("multiply", mean, m), ctx.call("multiply", bmean, rest))
    run_var = ctx.call("add", ctx.call("multiply", var, m), ctx.call("multiply", bvar, rest))
    return [y, run_mean, run_var][: ctx.num_outputs]


@converter("InstanceNormalization", 1)
def InstanceNormalization(ctx, x, scale, b, *, epsilon=1e-5):
    return ctx.call("nn.instance_norm", x, scale, b, axis=1, epsilon=epsilon)


@converter("LayerNormalization", 17)
def LayerNormalization(ctx, x, scale, b=None, *, axis=-1, epsilon=1e-5, stash_type=1):
    axis = normalize_axis(ctx, axis, ctx.ndim(x))
    if ctx.num_outputs > 1 and any(ctx.output_names[1:]):
        return _layer_norm_stats(ctx, x, scale, b, axis, epsilon, stash_type)
    center = b is not None
    if b is None:
        b = ctx.call("zeros_like", scale)
    return ctx.call("nn.layer_norm", x, scale, b, axis=axis, epsilon=epsilon, center=center)


def _layer_norm_stats(ctx, x, scale, b, axis, epsilon, stash_type):
    """LayerNormalization with its Mean and InvStdDev outputs, computed in the stash type."""
    from .dtypes import relay_dtype

    dtype = ctx.dtype(x)
    sd = relay_dtype(stash_type)
    axes = tuple(range(axis, ctx.ndim(x)))
    xs = cast(ctx, x, sd)
    mean = ctx.call("mean", xs, axis=axes, keepdims=True)
    d = ctx.call("subtract", xs, mean)
    var = ctx.call("mean", ctx.call("multiply", d, d), axis=axes, keepdims=True)
    inv = ctx.call("rsqrt", ctx.call("add", var, scalar(ctx, epsilon, sd)))
    y = cast(ctx, ctx.call("multiply", d, inv), dtype)
    y = ctx.call("multiply", y, scale)
    if b is not None:
        y = ctx.call("add", y, b)
    return [y, mean, inv]


@converter("GroupNormalization", 18)
def GroupNormalization(ctx, x, scale, b, *, epsilon=1e-5, num_groups, stash_type=1):
    if ctx.opset < 21:
        # Opset 18: scale / bias are per group; expand them per channel.
        c = ctx.shape_of(x)[1]
        if not isinstance(c, int):
            raise ctx.error("GroupNormalization-18 needs a static channel count")
        rep = c // num_groups
        scale = ctx.call("repeat", scale, repeats=rep, axis=0)
        b = ctx.call("repeat", b, repeats=rep, axis=0)
    return ctx.call("nn.group_norm", x, scale, b, num_groups=num_groups, axis=1, epsilon=epsilon)


@converter("RMSNormalization", 23)
def RMSNormalization(ctx, x, scale, *, axis=-1, epsilon=1e-5, stash_type=1):
    axis = normalize_axis(ctx, axis, ctx.ndim(x))
    return ctx.call("nn.rms_norm", x, scale, axis=axis, epsilon=epsilon)


@converter("LRN", 1)
def LRN(ctx, x, *, size, alpha=1e-4, beta=0.75, bias=1.0):
    return ctx.call("nn.lrn", x, size=size, axis=1, alpha=alpha, beta=beta, bias=bias)


@converter("MeanVarianceNormalization", 9)
def MeanVarianceNormalization(ctx, x, *, axes=(0, 2, 3)):
    rank = ctx.ndim(x)
    return ctx.call(
        "nn.mean_variance_normalization", x, axes=tuple(normalize_axis(ctx, a, rank) for a in axes)
    )


@converter("LpNormalization", 1)
def LpNormalization(ctx, x, *, axis=-1, p=2):
    axis = normalize_axis(ctx, axis, ctx.ndim(x))
    if p == 2:
        norm = ctx.call("l2_norm", x, axis=(axis,), keepdims=True)
    elif p == 1:
        norm = ctx.call("l1_norm", x, axis=(axis,), keepdims=True)
    else:
        raise ctx.error(f"p must be 1 or 2, got {p}")
    zero = scalar_like(ctx, 0, x)
    safe = ctx.call("where", ctx.call("equal", norm, zero), scalar_like(ctx, 1, x), norm)
    return ctx.call("where", ctx.call("equal", norm, zero), zero, ctx.call("divide", x, safe))


# -- activations ---------------------------------------------------------------------------------
@converter("Relu", 1)
def Relu(ctx, x):
    return ctx.call("nn.relu", x)


@converter("LeakyRelu", 1)
def LeakyRelu(ctx, x, *, alpha=0.01):
    return ctx.call("nn.leaky_relu", x, alpha=alpha)


@converter("Elu", 1)
def Elu(ctx, x, *, alpha=1.0):
    return ctx.call("nn.elu", x, alpha=alpha)


@converter("Selu", 1)
def Selu(ctx, x, *, alpha=1.67326319217681884765625, gamma=1.05070102214813232421875):
    return ctx.call("nn.selu", x, alpha=alpha, gamma=gamma)


@converter("Celu", 12)
def Celu(ctx, x, *, alpha=1.0):
    return ctx.call("nn.celu", x, alpha=alpha)


@converter("ThresholdedRelu", 10)
def ThresholdedRelu(ctx, x, *, alpha=1.0):
    return ctx.call("nn.thresholded_relu", x, alpha=alpha)


@converter("HardSigmoid", 1)
def HardSigmoid(ctx, x, *, alpha=0.2, beta=0.5):
    return ctx.call("nn.hard_sigmoid", x, alpha=alpha, beta=beta)


@converter("HardSwish", 14)
def HardSwish(ctx, x):
    return ctx.call("nn.hard_swish", x)


@converter("Softplus", 1)
def Softplus(ctx, x):
    return ctx.call("nn.softplus", x)


@converter("Softsign", 1)
def Softsign(ctx, x):
    return ctx.call("nn.softsign", x)


@converter("Mish", 18)
def Mish(ctx, x):
    return ctx.call("nn.mish", x)


@converter("Gelu", 20)
def Gelu(ctx, x, *, approximate="none"):
    return ctx.call("nn.gelu", x, approximate=approximate)


@converter("Swish", 24)
def Swish(ctx, x, *, alpha=1.0):
    if alpha == 1.0:
        return ctx.call("nn.silu", x)
    return ctx.call(
        "multiply", x, ctx.call("sigmoid", ctx.call("multiply", x, scalar_like(ctx, alpha, x)))
    )


@converter("PRelu", 1)
def PRelu_1(ctx, x, slope, *, consumed_inputs=None):
    # Before opset 7 a 1-D slope holds one value per channel.
    shape = ctx.shape_of(x)
    if ctx.ndim(slope) == 1 and len(shape) >= 2 and ctx.shape_of(slope)[0] == shape[1] != 1:
        return ctx.call("nn.prelu", x, slope, axis=1)
    return ctx.call("nn.prelu", x, slope, axis=None)


@converter("PRelu", 7)
def PRelu(ctx, x, slope):
    return ctx.call("nn.prelu", x, slope, axis=None)


@converter("Shrink", 9)
def Shrink(ctx, x, *, bias=0.0, lambd=0.5):
    return ctx.call("nn.shrink", x, bias=bias, lambd=lambd)


def _softmax_2d(ctx, x, axis, name):
    """Softmax-1 / -11: coerce to 2-D at `axis`, normalise the rows, restore the shape."""
    rank = ctx.ndim(x)
    axis = normalize_axis(ctx, axis, rank)
    if axis == rank - 1:
        return ctx.call(name, x, axis=-1)
    shape = ctx.shape_of(x)
    lead, trail = shape[:axis], shape[axis:]
    if all(isinstance(d, int) for d in trail):
        flat = ctx.call("reshape", x, newshape=(-1, int(np.prod(trail, dtype=np.int64))))
    elif all(isinstance(d, int) for d in lead):
        flat = ctx.call("reshape", x, newshape=(int(np.prod(lead, dtype=np.int64)), -1))
    else:
        raise ctx.error("needs static leading or trailing dims")
    return ctx.call("reshape_like", ctx.call(name, flat, axis=-1), x)


@converter("Softmax", 1)
def Softmax_1(ctx, x, *, axis=1):
    return _softmax_2d(ctx, x, axis, "nn.softmax")


@converter("Softmax", 13)
def Softmax(ctx, x, *, axis=-1):
    axis = normalize_axis(ctx, axis, ctx.ndim(x))
    if ctx.dtype(x) in _LOW_PRECISION:
        return _softmax_in_dtype(ctx, x, axis)
    return ctx.call("nn.softmax", x, axis=axis)


_LOW_PRECISION = ("float16", "bfloat16")


def _softmax_in_dtype(ctx, x, axis):
    """Softmax as max / subtract / exp / sum / divide, each rounded to x's dtype, the way
    ONNX's function body and reference compute it in 16-bit floats (nn.softmax computes in
    float32 and rounds once, which differs by an ulp). A row of -inf gives zeros."""
    m = ctx.call("max", x, axis=(axis,), keepdims=True)
    m = ctx.call("where", ctx.call("isneginf", m), scalar_like(ctx, 0, x), m)
    e = ctx.call("exp", ctx.call("subtract", x, m))
    n = ctx.shape_of(x)[axis]
    if ctx.dtype(x) == "bfloat16" and isinstance(n, int) and 0 < n <= 64:
        # numpy adds bfloat16 one element at a time, rounding each partial sum.
        s = ctx.call("take", e, scalar(ctx, 0, "int64"), axis=axis)
        for k in range(1, n):
            s = ctx.call("add", s, ctx.call("take", e, scalar(ctx, k, "int64"), axis=axis))
        s = ctx.call("expand_dims", s, axis=axis)
    else:
        s = ctx.call("sum", e, axis=(axis,), keepdims=True)
    s = ctx.call("where", ctx.call("equal", s, scalar_like(ctx, 0, x)), scalar_like(ctx, 1, x), s)
    return ctx.call("divide", e, s)


@converter("LogSoftmax", 1)
def LogSoftmax_1(ctx, x, *, axis=1):
    return _softmax_2d(ctx, x, axis, "nn.log_softmax")


@converter("LogSoftmax", 13)
def LogSoftmax(ctx, x, *, axis=-1):
    return ctx.call("nn.log_softmax", x, axis=normalize_axis(ctx, axis, ctx.ndim(x)))


@converter("Hardmax", 1)
def Hardmax_1(ctx, x, *, axis=1):
    return _softmax_2d(ctx, x, axis, "nn.hardmax")


@converter("Hardmax", 13)
def Hardmax(ctx, x, *, axis=-1):
    return ctx.call("nn.hardmax", x, axis=normalize_axis(ctx, axis, ctx.ndim(x)))


@converter("Dropout", 1)
def Dropout_1(ctx, x, *, ratio=0.5, is_test=0, consumed_inputs=None, seed=None):
    return _dropout_outputs(ctx, x)


def _dropout_outputs(ctx, x):
    mask = ctx.call("ones_like", cast(ctx, x, "bool"))
    return [x, mask] if ctx.num_outputs > 1 else x


@converter("Dropout", 12)
def Dropout(ctx, x, ratio=None, training_mode=None, *, seed=None):
    t = ctx.value(training_mode) if training_mode is not None else np.array(False)
    if t is not None and not bool(t.reshape(-1)[0]):
        return _dropout_outputs(ctx, x)
    # Training mode: keep each element with probability 1 - ratio, scaled by 1 / (1 - ratio).
    dtype = ctx.dtype(x)
    r = cast(ctx, ratio, dtype) if ratio is not None else scalar(ctx, 0.5, dtype)
    u = ctx.call("random.uniform_like", x, seed=seed)
    keep = ctx.call("greater_equal", u, r)
    one = scalar(ctx, 1, dtype)
    y = ctx.call(
        "where", keep, ctx.call("divide", x, ctx.call("subtract", one, r)), scalar(ctx, 0, dtype)
    )
    if t is None:  # decided at run time
        train = ctx.call("reshape", cast(ctx, training_mode, "bool"), newshape=())
        y = ctx.call("where", train, y, x)
        keep = ctx.call("logical_or", keep, ctx.call("logical_not", train))
    return [y, keep] if ctx.num_outputs > 1 else y


# -- matrix products ---------------------------------------------------------------------------
@converter("MatMul", 1)
def MatMul(ctx, a, b):
    return ctx.call("nn.matmul", a, b)


@converter("Gemm", 1)
def Gemm(ctx, a, b, c=None, *, alpha=1.0, beta=1.0, transA=0, transB=0, broadcast=0):
    out = ctx.call("nn.matmul", a, b, transpose_a=bool(transA), transpose_b=bool(transB))
    if alpha != 1.0:
        out = ctx.call("multiply", out, scalar_like(ctx, alpha, out))
    if c is not None:
        if beta != 1.0:
            c = ctx.call("multiply", c, scalar_like(ctx, beta, c))
        out = ctx.call("add", out, c)
    return out


__all__ = ["scalar"]
