"""Neural-network ops: matrix products, convolutions (NHWC stays NHWC), pooling, batch norm,
softmax, LRN."""

from __future__ import annotations

import numpy as np

from .table import TF
from .util import ints, shape_dims

_LAYOUT = {2: "NHWC", 3: "NDHWC"}
_CHANNEL_FIRST = {2: "NCHW", 3: "NCDHW"}
_KERNEL = {2: "HWIO", 3: "DHWIO"}


# -- matrix products ------------------------------------------------------------------------------
@TF.register("MatMul")
def MatMul(ctx, a, b, transpose_a=False, transpose_b=False):
    return ctx.call("nn.matmul", a, b, transpose_a=transpose_a, transpose_b=transpose_b)


@TF.register("BatchMatMul")
def BatchMatMul(ctx, x, y, adj_x=False, adj_y=False):
    return ctx.call("nn.matmul", x, y, transpose_a=adj_x, transpose_b=adj_y)


@TF.register("BatchMatMulV2")
def BatchMatMulV2(ctx, x, y, adj_x=False, adj_y=False):
    return ctx.call("nn.matmul", x, y, transpose_a=adj_x, transpose_b=adj_y)


@TF.register("BatchMatMulV3")
def BatchMatMulV3(ctx, x, y, Tout=None, adj_x=False, adj_y=False):
    out = ctx.call("nn.matmul", x, y, transpose_a=adj_x, transpose_b=adj_y)
    if Tout is not None and Tout != ctx.dtype(out):
        out = ctx.call("cast", out, dtype=Tout)
    return out


@TF.register("BiasAdd")
def BiasAdd(ctx, x, bias, data_format="NHWC"):
    axis = 1 if data_format.startswith("NC") and ctx.ndim(x) > 2 else -1
    return ctx.call("nn.bias_add", x, bias, axis=axis)


@TF.register("BiasAddV1")
def BiasAddV1(ctx, x, bias):
    return ctx.call("nn.bias_add", x, bias, axis=-1)


# -- windows --------------------------------------------------------------------------------------
def _spatial(values, data_format: str, nd: int, what: str, ctx):
    """The spatial entries of a TF per-dimension list (N, spatial..., C or N, C, spatial...)."""
    vals = list(values or [1] * (nd + 2))
    if len(vals) == 1:
        return (vals[0],) * nd
    if len(vals) == nd:
        return tuple(vals)
    if len(vals) != nd + 2:
        raise ctx.error(f"{what} must have {nd + 2} entries, got {vals}")
    return tuple(vals[2:] if data_format.startswith("NC") else vals[1:-1])


def _padding(ctx, padding: str, explicit, data_format: str, nd: int) -> dict:
    if padding == "SAME":
        return {"auto_pad": "SAME_UPPER"}
    if padding == "VALID":
        return {"auto_pad": "VALID"}
    if padding == "EXPLICIT":
        pairs = np.asarray(explicit, dtype=np.int64).reshape(-1, 2)
        sp = pairs[2:] if data_format.startswith("NC") else pairs[1:-1]
        return {"padding": tuple(int(v) for v in sp[:, 0]) + tuple(int(v) for v in sp[:, 1])}
    raise ctx.error(f"unknown padding {padding!r}")


def _layout(data_format: str, nd: int) -> str:
    return _CHANNEL_FIRST[nd] if data_format.startswith("NC") else _LAYOUT[nd]


def _conv(ctx, x, w, nd, strides, padding, data_format, dilations, explicit_paddings, groups=1):
    op = f"nn.conv{nd}d"
    return ctx.call(
        op,
        x,
        w,
        strides=_spatial(strides, data_format, nd, "strides", ctx),
        dilation=_spatial(dilations, data_format, nd, "dilations", ctx),
        groups=groups,
        data_layout=_layout(data_format, nd),
        kernel_layout=_KERNEL[nd],
        **_padding(ctx, padding, explicit_paddings, data_format, nd),
    )


@TF.register("Conv2D")
def Conv2D(
    ctx,
    x,
    w,
    strides=None,
    padding="VALID",
    data_format="NHWC",
    dilations=None,
    explicit_paddings=(),
):
    cin, win = _channels(ctx, x, data_format), ctx.shape_of(w)[2]
    groups = cin // win if isinstance(cin, int) and isinstance(win, int) and win else 1
    return _conv(ctx, x, w, 2, strides, padding, data_format, dilations, explicit_paddings, groups)


@TF.register("Conv3D")
def Conv3D(ctx, x, w, strides=None, padding="VALID", data_format="NDHWC", dilations=None):
    return _conv(ctx, x, w, 3, strides, padding, data_format, dilations, ())


def _channels(ctx, x, data_format):
    shape = ctx.shape_of(x)
    return shape[1] if data_format.startswith("NC") else shape[-1]


@TF.register("DepthwiseConv2dNative")
def DepthwiseConv2dNative(
    ctx,
    x,
    w,
    strides=None,
    padding="VALID",
    data_format="NHWC",
    dilations=None,
    explicit_paddings=(),
):
    kh, kw, c, m = ctx.shape_of(w)
    if not all(isinstance(d, int) for d in (kh, kw, c, m)):
        raise ctx.error("the depthwise filter's shape must be static")
    # (H, W, C, M) -> (H, W, 1, C*M): output channel c*M + m belongs to group c.
    w2 = ctx.call("reshape", w, newshape=(kh, kw, 1, c * m))
    return _conv(ctx, x, w2, 2, strides, padding, data_format, dilations, explicit_paddings, c)


def _conv_transpose(ctx, sizes, w, x, nd, strides, padding, data_format, dilations, explicit):
    """TF's Conv*BackpropInput: the gradient of a convolution as a transposed convolution with
    the output size TF asks for."""
    out_dims = shape_dims(ctx, sizes)
    if out_dims is None or len(out_dims) != nd + 2:
        raise ctx.error("input_sizes must be a known-length shape")
    out_sp = _spatial(out_dims, data_format, nd, "input_sizes", ctx)
    in_sp = _spatial(ctx.shape_of(x), data_format, nd, "out_backprop", ctx)
    k = ctx.shape_of(w)[:nd]
    s = _spatial(strides, data_format, nd, "strides", ctx)
    d = _spatial(dilations, data_format, nd, "dilations", ctx)
    if any(not isinstance(v, int) for v in (*out_sp, *in_sp, *k)):
        raise ctx.error("the spatial sizes of a transposed convolution must be static")
    begins, ends, extra = [], [], []
    exp = np.asarray(explicit or [0] * (2 * nd + 4), np.int64).reshape(-1, 2)
    exp = exp[2:] if data_format.startswith("NC") else exp[1:-1]
    for a in range(nd):
        full = (k[a] - 1) * d[a] + 1
        if padding == "SAME":
            total = max((in_sp[a] - 1) * s[a] + full - out_sp[a], 0)
            pb, pe = total // 2, total - total // 2
        elif padding == "EXPLICIT":
            pb, pe = int(exp[a][0]), int(exp[a][1])
        else:
            pb = pe = 0
        natural = (in_sp[a] - 1) * s[a] - pb - pe + full
        extra.append(out_sp[a] - natural)
        begins.append(pb)
        ends.append(pe)
    if any(e < 0 for e in extra):
        raise ctx.error(f"input_sizes {out_sp} are too small for this transposed convolution")
    kernel = "HWOI" if nd == 2 else "DHWOI"
    return ctx.call(
        f"nn.conv{nd}d_transpose",
        x,
        w,
        strides=s,
        dilation=d,
        padding=tuple(begins) + tuple(ends),
        output_padding=tuple(extra),
        data_layout=_layout(data_format, nd),
        kernel_layout=kernel,
    )


@TF.register("Conv2DBackpropInput")
def Conv2DBackpropInput(
    ctx,
    sizes,
    w,
    x,
    strides=None,
    padding="VALID",
    data_format="NHWC",
    dilations=None,
    explicit_paddings=(),
):
    return _conv_transpose(
        ctx, sizes, w, x, 2, strides, padding, data_format, dilations, explicit_paddings
    )


@TF.register("Conv3DBackpropInputV2")
def Conv3DBackpropInputV2(
    ctx, sizes, w, x, strides=None, padding="VALID", data_format="NDHWC", dilations=None
):
    return _conv_transpose(ctx, sizes, w, x, 3, strides, padding, data_format, dilations, ())


# -- pooling --------------------------------------------------------------------------------------
def _pool(kind: str, nd: int):
    def convert(
        ctx, x, ksize=None, strides=None, padding="VALID", data_format=None, explicit_paddings=()
    ):
        fmt = data_format or _LAYOUT[nd]
        kw = _padding(ctx, padding, explicit_paddings, fmt, nd)
        if kind == "avg":
            kw["count_include_pad"] = False
        return ctx.call(
            f"nn.{kind}_pool{nd}d",
            x,
            pool_size=_spatial(ksize, fmt, nd, "ksize", ctx),
            strides=_spatial(strides, fmt, nd, "strides", ctx),
            layout=_layout(fmt, nd),
            **kw,
        )

    return convert


for _tf_op, _kind, _nd in [
    ("MaxPool", "max", 2),
    ("AvgPool", "avg", 2),
    ("MaxPool3D", "max", 3),
    ("AvgPool3D", "avg", 3),
]:
    _fn = _pool(_kind, _nd)
    _fn.__name__ = _fn.__qualname__ = _tf_op
    TF.register(_tf_op)(_fn)


@TF.register("MaxPoolV2")
def MaxPoolV2(ctx, x, ksize, strides, padding="VALID", data_format="NHWC"):
    k = ints(ctx, ksize, "ksize")
    s = ints(ctx, strides, "strides")
    return _pool("max", 2)(ctx, x, k, s, padding, data_format)


# -- normalisation and softmax --------------------------------------------------------------------
def _fused_batch_norm(
    ctx,
    x,
    scale,
    offset,
    mean,
    variance,
    epsilon=1e-4,
    data_format="NHWC",
    is_training=False,
):
    nd = ctx.ndim(x)
    axis = 1 if data_format.startswith("NC") else nd - 1
    xt = ctx.dtype(x)
    params = [
        p if ctx.dtype(p) == xt else ctx.call("cast", p, dtype=xt)
        for p in (scale, offset, mean, variance)
    ]
    if is_training:  # statistics of this batch (what TF computes in training mode)
        rest = tuple(a for a in range(nd) if a != axis)
        m = ctx.call("mean", x, axis=rest)
        v = ctx.call("variance", x, axis=rest)
        bn = ctx.call("nn.batch_norm", x, params[0], params[1], m, v, axis=axis, epsilon=epsilon)
        y = ctx.item(bn, 0)
        unbiased = ctx.call("variance", x, axis=rest, unbiased=True)
        return [y, m, unbiased, m, v, m]
    y = ctx.item(ctx.call("nn.batch_norm", x, *params, axis=axis, epsilon=epsilon), 0)
    return [y, mean, variance, mean, variance, mean]


for _name in ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"):
    TF.register(_name)(_fused_batch_norm)


@TF.register("Softmax")
def Softmax(ctx, logits):
    return ctx.call("nn.softmax", logits, axis=-1)


@TF.register("LogSoftmax")
def LogSoftmax(ctx, logits):
    return ctx.call("nn.log_softmax", logits, axis=-1)


@TF.register("LRN")
def LRN(ctx, x, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5):
    size = 2 * depth_radius + 1
    # TF's alpha multiplies the plain sum of squares; Relay's divides by the window size.
    return ctx.call(
        "nn.lrn", x, size=size, axis=ctx.ndim(x) - 1, alpha=alpha * size, beta=beta, bias=bias
    )


@TF.register("L2Loss")
def L2Loss(ctx, t):
    half = ctx.const(np.asarray(0.5, dtype=ctx.dtype(t)))
    return ctx.call("multiply", ctx.call("sum", ctx.call("multiply", t, t)), half)
