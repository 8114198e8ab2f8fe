"""Quantized ops: QuantizeLinear / DequantizeLinear (per tensor, per axis, blocked),
QLinearMatMul, QLinearConv, MatMulInteger, ConvInteger. (DynamicQuantizeLinear converts through
its function body.)"""

from __future__ import annotations

from .dtypes import relay_dtype
from .nn import Conv
from .table import converter
from .util import cast


def _params(ctx, scale, zp):
    """Scale and zero point of one shape (a one-element pair becomes two scalars)."""
    if ctx.shape_of(scale) != () and ctx.shape_of(scale) in ((1,), ()):
        scale = ctx.call("reshape", scale, newshape=())
    if zp is None:
        return [scale]
    if ctx.shape_of(zp) != ctx.shape_of(scale) and ctx.shape_of(zp) in ((1,), ()):
        zp = ctx.call("reshape", zp, newshape=ctx.shape_of(scale))
    return [scale, zp]


@converter("QuantizeLinear", 10)
def QuantizeLinear(
    ctx,
    x,
    y_scale,
    y_zero_point=None,
    *,
    axis=1,
    block_size=0,
    output_dtype=0,
    saturate=1,
    precision=0,
):
    args = [x, *_params(ctx, y_scale, y_zero_point)]
    out = relay_dtype(output_dtype) if output_dtype else None
    if precision:
        x = cast(ctx, x, relay_dtype(precision))
        y_scale = cast(ctx, y_scale, relay_dtype(precision))
        args[:2] = [x, y_scale]
    elif ctx.dtype(x) != ctx.dtype(y_scale):
        args[1] = cast(ctx, y_scale, ctx.dtype(x))
    rank = ctx.ndim(x)
    return ctx.call(
        "qnn.quantize",
        *args,
        axis=axis + rank if axis < 0 else axis,
        block_size=block_size,
        out_dtype=out,
        saturate=bool(saturate),
    )


@converter("DequantizeLinear", 10)
def DequantizeLinear(ctx, x, x_scale, x_zero_point=None, *, axis=1, block_size=0, output_dtype=0):
    args = [x, *_params(ctx, x_scale, x_zero_point)]
    out = relay_dtype(output_dtype) if output_dtype else None
    rank = ctx.ndim(x)
    return ctx.call(
        "qnn.dequantize",
        *args,
        axis=axis + rank if axis < 0 else axis,
        block_size=block_size,
        out_dtype=out,
    )


def _centered(ctx, q, zp, axis=None):
    """int32(q) - int32(zero point); a 1-D zero point applies along `axis`."""
    q = cast(ctx, q, "int32")
    if zp is None:
        return q
    zp = cast(ctx, zp, "int32")
    if axis is not None and ctx.ndim(zp) == 1:
        rank = ctx.ndim(q)
        zp = ctx.call("reshape", zp, newshape=tuple(-1 if i == axis else 1 for i in range(rank)))
    return ctx.call("subtract", q, zp)


@converter("MatMulInteger", 10)
def MatMulInteger(ctx, a, b, a_zero_point=None, b_zero_point=None):
    a = _centered(ctx, a, a_zero_point, axis=ctx.ndim(a) - 2 if ctx.ndim(a) >= 2 else None)
    b = _centered(ctx, b, b_zero_point)
    return ctx.call("nn.matmul", a, b)


@converter("ConvInteger", 10)
def ConvInteger(ctx, x, w, x_zero_point=None, w_zero_point=None, **attrs):
    x = _centered(ctx, x, x_zero_point)
    w = _centered(ctx, w, w_zero_point, axis=0)
    return Conv(ctx, x, w, **attrs)


def _requantize(ctx, acc, scale, y_scale, y_zero_point, axis):
    """saturate(round(acc * scale / y_scale) + y_zero_point) for an int32 accumulator."""
    ratio = ctx.call("divide", y_scale, scale)
    f = cast(ctx, acc, ctx.dtype(ratio))
    ratio, zp = _params(ctx, ratio, y_zero_point)
    return ctx.call("qnn.quantize", f, ratio, zp, axis=axis)


@converter("QLinearMatMul", 10)
def QLinearMatMul(ctx, a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point):
    acc = MatMulInteger(ctx, a, b, a_zero_point, b_zero_point)
    a_scale = cast(ctx, a_scale, "float32")
    scale = ctx.call("multiply", a_scale, cast(ctx, b_scale, "float32"))
    return _requantize(
        ctx, acc, scale, cast(ctx, y_scale, "float32"), y_zero_point, ctx.ndim(acc) - 1
    )


@converter("QLinearConv", 10)
def QLinearConv(
    ctx, x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B=None, **attrs
):
    acc = ConvInteger(ctx, x, w, x_zero_point, w_zero_point, **attrs)
    if B is not None:
        acc = ctx.call("nn.bias_add", acc, cast(ctx, B, "int32"), axis=1)
    scale = ctx.call("multiply", cast(ctx, x_scale, "float32"), cast(ctx, w_scale, "float32"))
    return _requantize(ctx, acc, scale, cast(ctx, y_scale, "float32"), y_zero_point, 1)
