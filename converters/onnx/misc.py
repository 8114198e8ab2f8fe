"""Less common ops: Det, BitCast, Col2Im, DeformConv, TensorScatter."""

from __future__ import annotations

from .dtypes import relay_dtype
from .table import converter
from .util import cast


@converter("Det", 11)
def Det(ctx, x):
    return ctx.call("det", x)


@converter("BitCast", 26)
def BitCast(ctx, x, *, to):
    return ctx.call("reinterpret", x, dtype=relay_dtype(to, "BitCast target"))


@converter("Col2Im", 18)
def Col2Im(ctx, x, image_shape, block_shape, *, dilations=None, pads=None, strides=None):
    return ctx.call(
        "col2im",
        x,
        cast(ctx, image_shape, "int64"),
        cast(ctx, block_shape, "int64"),
        dilations=dilations,
        pads=pads,
        strides=strides,
    )


@converter("DeformConv", 19)
def DeformConv(
    ctx,
    x,
    w,
    offset,
    b=None,
    mask=None,
    *,
    dilations=None,
    group=1,
    kernel_shape=None,
    offset_group=1,
    pads=None,
    strides=None,
):
    if ctx.ndim(x) != 4:
        raise ctx.error("only 2-D DeformConv is supported")
    args = [x, offset, w] + ([mask] if mask is not None else [])
    out = ctx.call(
        "nn.deformable_conv2d",
        *args,
        strides=tuple(strides or (1, 1)),
        padding=tuple(pads or (0, 0, 0, 0)),
        dilation=tuple(dilations or (1, 1)),
        deformable_groups=offset_group,
        groups=group,
    )
    if b is not None:
        out = ctx.call("nn.bias_add", out, b, axis=1)
    return out


@converter("TensorScatter", 24)
def TensorScatter(ctx, past, update, write_indices=None, *, axis=-2, mode="linear"):
    args = [past, update] + ([write_indices] if write_indices is not None else [])
    return ctx.call("tensor_scatter", *args, axis=axis, mode=mode)
