"""Pooling, padding, resizing, grid sampling, fold / unfold and pixel shuffle."""

from __future__ import annotations

import numpy as np

from relay_core.ir import Expr

from .ops_nn import _tuple
from .table import aten

_LAYOUT = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _batched(ctx, x, nd):
    """Pools accept unbatched (C, spatial...) inputs: add a batch axis, and say so."""
    x = ctx.expr(x)
    if ctx.ndim(x) == nd + 1:
        return ctx.call("expand_dims", x, axis=0), True
    return x, False


def _unbatch(ctx, out, unbatched):
    return ctx.call("squeeze", out, axis=(0,)) if unbatched else out


def max_pool(ctx, nd, x, kernel_size, stride, padding, dilation, ceil_mode, with_indices):
    x, unb = _batched(ctx, x, nd)
    k = _tuple(kernel_size, nd)
    s = _tuple(stride, nd) if stride not in (None, [], ()) else k
    kw = dict(
        pool_size=k,
        strides=s,
        padding=_tuple(padding, nd),
        dilation=_tuple(dilation, nd),
        ceil_mode=bool(ceil_mode),
        layout=_LAYOUT[nd],
    )
    if not with_indices:
        return _unbatch(ctx, ctx.call(f"nn.max_pool{nd}d", x, **kw), unb)
    pair = ctx.call(f"nn.max_pool{nd}d_with_argmax", x, **kw)
    values, flat = ctx.item(pair, 0), ctx.item(pair, 1)
    # ONNX indices are flat over the whole input; torch's are flat within each (n, c) plane
    plane = 1
    for d in ctx.shape_of(x)[2:]:
        if not isinstance(d, int):
            raise ctx.error("max-pool indices over symbolic spatial sizes are not supported")
        plane *= d
    idx = ctx.call("floor_mod", flat, ctx.const(plane, "int64"))
    return _unbatch(ctx, values, unb), _unbatch(ctx, idx, unb)


def _max_pool_converters(nd: int):
    def max_pool_nd(ctx, self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        return max_pool(ctx, nd, self, kernel_size, stride, padding, dilation, ceil_mode, False)

    def max_pool_nd_with_indices(
        ctx, self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False
    ):
        return max_pool(ctx, nd, self, kernel_size, stride, padding, dilation, ceil_mode, True)

    aten(f"max_pool{nd}d.default")(max_pool_nd)
    aten(f"max_pool{nd}d_with_indices.default")(max_pool_nd_with_indices)


for _nd in (1, 2, 3):
    _max_pool_converters(_nd)


def avg_pool(
    ctx, nd, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
):
    x, unb = _batched(ctx, x, nd)
    k = _tuple(kernel_size, nd)
    s = _tuple(stride, nd) if stride not in (None, [], ()) else k
    out = ctx.call(
        f"nn.avg_pool{nd}d",
        x,
        pool_size=k,
        strides=s,
        padding=_tuple(padding, nd),
        ceil_mode=bool(ceil_mode),
        count_include_pad=bool(count_include_pad),
        layout=_LAYOUT[nd],
    )
    if divisor_override:
        if not count_include_pad:
            raise ctx.error("divisor_override with count_include_pad=False is not supported")
        area = int(np.prod(k))
        out = ctx.call("multiply", out, ctx.expr(area / divisor_override, ctx.dtype(out)))
    return _unbatch(ctx, out, unb)


@aten("avg_pool1d.default")
def avg_pool1d(
    ctx, self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True
):
    return avg_pool(ctx, 1, self, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def _avg_pool_converter(nd: int):
    def avg_pool_nd(
        ctx,
        self,
        kernel_size,
        stride=(),
        padding=0,
        ceil_mode=False,
        count_include_pad=True,
        divisor_override=None,
    ):
        return avg_pool(
            ctx,
            nd,
            self,
            kernel_size,
            stride,
            padding,
            ceil_mode,
            count_include_pad,
            divisor_override,
        )

    aten(f"avg_pool{nd}d.default")(avg_pool_nd)


_avg_pool_converter(2)
_avg_pool_converter(3)


def adaptive(ctx, kind, nd, x, output_size):
    x, unb = _batched(ctx, x, nd)
    size = list(_tuple(output_size, nd))
    spatial = ctx.shape_of(x)[2:]
    size = tuple(spatial[i] if v is None else v for i, v in enumerate(size))
    if any(not isinstance(v, int) for v in size):
        raise ctx.error("adaptive pooling to a symbolic size is not supported")
    if tuple(spatial) == size:  # one element per bin
        return _unbatch(ctx, x, unb)
    if all(v == 1 for v in size):
        # global pooling: a reduction over the spatial axes, as the ONNX exporter writes it
        # (ReduceMean / ReduceMax), which the backend runs as a plain reduction
        axes = tuple(range(2, 2 + nd))
        out = ctx.call("mean" if kind == "avg" else "max", x, axis=axes, keepdims=True)
        return _unbatch(ctx, out, unb)
    out = ctx.call(f"nn.adaptive_{kind}_pool{nd}d", x, output_size=size, layout=_LAYOUT[nd])
    return _unbatch(ctx, out, unb)


@aten("adaptive_avg_pool1d.default")
def adaptive_avg_pool1d(ctx, self, output_size):
    return adaptive(ctx, "avg", 1, self, output_size)


@aten("adaptive_avg_pool2d.default", "_adaptive_avg_pool2d.default")
def adaptive_avg_pool2d(ctx, self, output_size):
    return adaptive(ctx, "avg", 2, self, output_size)


@aten("adaptive_avg_pool3d.default", "_adaptive_avg_pool3d.default")
def adaptive_avg_pool3d(ctx, self, output_size):
    return adaptive(ctx, "avg", 3, self, output_size)


def _indices_unused(ctx) -> bool:
    """True when no user of this multi-output node reads output 1 (the indices)."""
    import operator

    for user in ctx.node.users:
        if user.target is not operator.getitem:
            return False
        if user.args[1] != 0 and len(user.users) > 0:
            return False
    return True


def _adaptive_max_converter(nd: int):
    def adaptive_max_pool(ctx, self, output_size):
        out = adaptive(ctx, "max", nd, self, output_size)
        if not _indices_unused(ctx):
            raise ctx.error("the indices of adaptive max pooling are not supported")
        return out, ctx.call("zeros_like", ctx.cast(out, "int64"))

    aten(f"adaptive_max_pool{nd}d.default")(adaptive_max_pool)


for _nd in (1, 2, 3):
    _adaptive_max_converter(_nd)


# -- padding --------------------------------------------------------------------------------------


def _pad_width(ctx, x, pad):
    """torch pad (last axis first, (before, after) pairs) as per-axis pad_width."""
    nd = ctx.ndim(x)
    pad = list(pad)
    width = [(0, 0)] * nd
    for i in range(len(pad) // 2):
        width[nd - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return tuple(width)


def pad(ctx, x, pad_, mode="constant", value=0.0):
    x = ctx.expr(x)
    if any(isinstance(p, Expr) for p in pad_):
        raise ctx.error("padding by symbolic amounts is not supported")
    width = _pad_width(ctx, x, pad_)
    if mode == "circular":
        return _circular(ctx, x, width)
    relay_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}[mode]
    if mode == "constant":
        v = 0.0 if value is None else value
        return ctx.call(
            "nn.pad", x, ctx.expr(v, ctx.dtype(x)), pad_width=width, pad_mode="constant"
        )
    return ctx.call("nn.pad", x, pad_width=width, pad_mode=relay_mode)


def _circular(ctx, x, width):
    from .ops_shape import slice_axis

    for axis, (b, a) in enumerate(width):
        parts = []
        n = ctx.dim_size(x, axis)
        if b > 0:
            parts.append(slice_axis(ctx, x, axis, n - b, n))
        parts.append(x)
        if a > 0:
            parts.append(slice_axis(ctx, x, axis, 0, a))
        if len(parts) > 1:
            x = ctx.call("concatenate", *parts, axis=axis)
    return x


@aten("constant_pad_nd.default")
def constant_pad_nd(ctx, self, pad_, value=0):
    return pad(ctx, self, pad_, "constant", value)


@aten("pad.default")
def pad_default(ctx, self, pad_, mode="constant", value=None):
    return pad(ctx, self, pad_, mode, value)


@aten("reflection_pad1d.default", "reflection_pad2d.default", "reflection_pad3d.default")
def reflection_pad(ctx, self, padding):
    return pad(ctx, self, padding, "reflect")


@aten("replication_pad1d.default", "replication_pad2d.default", "replication_pad3d.default")
def replication_pad(ctx, self, padding):
    return pad(ctx, self, padding, "replicate")


@aten("_pad_circular.default")
def pad_circular(ctx, self, pad_):
    return pad(ctx, self, pad_, "circular")


# -- resizing -------------------------------------------------------------------------------------


def resize(ctx, x, nd, output_size, scale_factors, method, align_corners=None, exact=False):
    x = ctx.expr(x)
    size = ctx.out_shape()
    if size is None or any(d is None for d in size[2:]):
        raise ctx.error("resizing to a symbolic size is not supported")
    kw = dict(size=tuple(size[2:]), layout=_LAYOUT[nd])
    if method == "nearest":
        kw.update(
            method="nearest_neighbor",
            coordinate_transformation_mode="half_pixel" if exact else "asymmetric",
            rounding_method="round_prefer_ceil" if exact else "floor",
        )
    else:
        kw.update(
            method=method,
            coordinate_transformation_mode="align_corners" if align_corners else "half_pixel",
        )
        if method == "cubic":
            kw.update(cubic_alpha=-0.75)
    if scale_factors and not align_corners:
        kw.update(scale=tuple(float(s) for s in _tuple(scale_factors, nd)))
    return ctx.call(f"image.resize{nd}d", x, **kw)


def _scales(*scales):
    if all(s is None for s in scales):
        return None
    if any(s is None for s in scales):
        return None
    return tuple(scales)


@aten("upsample_nearest1d.vec", "upsample_nearest2d.vec", "upsample_nearest3d.vec")
def upsample_nearest_vec(ctx, input, output_size, scale_factors):  # noqa: A002
    return resize(ctx, input, ctx.ndim(input) - 2, output_size, scale_factors, "nearest")


@aten(
    "_upsample_nearest_exact1d.vec",
    "_upsample_nearest_exact2d.vec",
    "_upsample_nearest_exact3d.vec",
)
def upsample_nearest_exact_vec(ctx, input, output_size, scale_factors):  # noqa: A002
    return resize(
        ctx, input, ctx.ndim(input) - 2, output_size, scale_factors, "nearest", exact=True
    )


@aten("upsample_linear1d.vec", "upsample_bilinear2d.vec", "upsample_trilinear3d.vec")
def upsample_linear_vec(ctx, input, output_size, align_corners, scale_factors):  # noqa: A002
    return resize(
        ctx, input, ctx.ndim(input) - 2, output_size, scale_factors, "linear", align_corners
    )


@aten("upsample_bicubic2d.vec")
def upsample_bicubic_vec(ctx, input, output_size, align_corners, scale_factors):  # noqa: A002
    return resize(ctx, input, 2, output_size, scale_factors, "cubic", align_corners)


@aten("upsample_nearest1d.default", "upsample_nearest2d.default", "upsample_nearest3d.default")
def upsample_nearest(ctx, self, output_size, *scales):
    return resize(ctx, self, ctx.ndim(self) - 2, output_size, _scales(*scales), "nearest")


@aten("_upsample_nearest_exact2d.default")
def upsample_nearest_exact(ctx, self, output_size, *scales):
    return resize(ctx, self, 2, output_size, _scales(*scales), "nearest", exact=True)


@aten("upsample_linear1d.default", "upsample_bilinear2d.default", "upsample_trilinear3d.default")
def upsample_linear(ctx, self, output_size, align_corners, *scales):
    return resize(
        ctx, self, ctx.ndim(self) - 2, output_size, _scales(*scales), "linear", align_corners
    )


@aten("upsample_bicubic2d.default")
def upsample_bicubic(ctx, self, output_size, align_corners, *scales):
    return resize(ctx, self, 2, output_size, _scales(*scales), "cubic", align_corners)


@aten("grid_sampler_2d.default", "grid_sampler.default")
def grid_sampler_2d(
    ctx,
    input,
    grid,
    interpolation_mode,
    padding_mode,  # noqa: A002
    align_corners,
):
    method = {0: "bilinear", 1: "nearest", 2: "bicubic"}[interpolation_mode]
    padding = {0: "zeros", 1: "border", 2: "reflection"}[padding_mode]
    return ctx.call(
        "image.grid_sample",
        input,
        grid,
        method=method,
        padding_mode=padding,
        align_corners=bool(align_corners),
        layout="NCHW",
    )


@aten("affine_grid_generator.default")
def affine_grid_generator(ctx, theta, size, align_corners):
    return ctx.call("image.affine_grid", theta, size=tuple(size), align_corners=bool(align_corners))


# -- pixel shuffle, fold / unfold -----------------------------------------------------------------


@aten("pixel_shuffle.default")
def pixel_shuffle(ctx, self, upscale_factor):
    r = upscale_factor
    n, c, h, w = ctx.shape_of(self)[-4:] if ctx.ndim(self) >= 4 else (1,) + ctx.shape_of(self)
    x = ctx.call("reshape", self, newshape=(-1, c // (r * r), r, r, h, w))
    x = ctx.call("transpose", x, axes=(0, 1, 4, 2, 5, 3))
    lead = ctx.shape_of(self)[:-3]
    return ctx.call("reshape", x, newshape=tuple(lead) + (c // (r * r), h * r, w * r))


@aten("pixel_unshuffle.default")
def pixel_unshuffle(ctx, self, downscale_factor):
    r = downscale_factor
    c, h, w = ctx.shape_of(self)[-3:]
    x = ctx.call("reshape", self, newshape=(-1, c, h // r, r, w // r, r))
    x = ctx.call("transpose", x, axes=(0, 1, 3, 5, 2, 4))
    lead = ctx.shape_of(self)[:-3]
    return ctx.call("reshape", x, newshape=tuple(lead) + (c * r * r, h // r, w // r))


def _window_index(c, size, kernel, dilation, padding, stride):
    """For im2col: flat positions in the padded (C, Hp, Wp) image of every (c, ki, kj, l)."""
    (h, w), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = size, kernel, dilation, padding, stride
    hp, wp = h + 2 * ph, w + 2 * pw
    oh = (hp - dh * (kh - 1) - 1) // sh + 1
    ow = (wp - dw * (kw - 1) - 1) // sw + 1
    ci, ki, kj, oi, oj = np.meshgrid(
        np.arange(c), np.arange(kh), np.arange(kw), np.arange(oh), np.arange(ow), indexing="ij"
    )
    rows = oi * sh + ki * dh
    cols = oj * sw + kj * dw
    return (ci * hp * wp + rows * wp + cols).reshape(-1).astype(np.int64), (hp, wp), oh * ow


@aten("im2col.default")
def im2col(ctx, self, kernel_size, dilation, padding, stride):
    x, unb = _batched(ctx, self, 2)
    _, c, h, w = ctx.shape_of(x)
    if not all(isinstance(d, int) for d in (c, h, w)):
        raise ctx.error("unfold needs static channel and spatial sizes")
    k, d, p, s = (_tuple(v, 2) for v in (kernel_size, dilation, padding, stride))
    idx, (hp, wp), L = _window_index(c, (h, w), k, d, p, s)
    xp = ctx.call(
        "nn.pad",
        x,
        ctx.expr(0.0, ctx.dtype(x)),
        pad_width=((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])),
    )
    flat = ctx.call("reshape", xp, newshape=(0, -1))
    cols = ctx.call("take", flat, ctx.const(idx), axis=1)
    out = ctx.call("reshape", cols, newshape=(0, c * k[0] * k[1], L))
    return _unbatch(ctx, out, unb)


@aten("col2im.default")
def col2im(ctx, self, output_size, kernel_size, dilation, padding, stride):
    x = ctx.expr(self)
    unb = ctx.ndim(x) == 2
    if unb:
        x = ctx.call("expand_dims", x, axis=0)
    n, ckk, L = ctx.shape_of(x)
    k, d, p, s = (_tuple(v, 2) for v in (kernel_size, dilation, padding, stride))
    h, w = _tuple(output_size, 2)
    if not isinstance(ckk, int):
        raise ctx.error("fold needs a static channel size")
    c = ckk // (k[0] * k[1])
    idx, (hp, wp), _ = _window_index(c, (h, w), k, d, p, s)
    dtype = ctx.dtype(x)
    flat = ctx.call("reshape", x, newshape=(0, -1))
    zeros = (
        ctx.call(
            "dyn.zeros",
            ctx.call(
                "concatenate",
                ctx.call("reshape", ctx.expr(ctx.dim_size(x, 0), "int64"), newshape=(1,)),
                ctx.const(np.asarray([c * hp * wp], np.int64)),
            ),
            dtype=dtype,
        )
        if not isinstance(n, int)
        else ctx.call("zeros", shape=(n, c * hp * wp), dtype=dtype)
    )
    index = ctx.call("broadcast_to_like", ctx.call("expand_dims", ctx.const(idx), axis=0), flat)
    out = ctx.call("scatter_elements", zeros, index, flat, axis=1, reduction="add")
    out = ctx.call("reshape", out, newshape=(0, c, hp, wp))
    out = ctx.call("strided_slice", out, begin=(p[0], p[1]), end=(p[0] + h, p[1] + w), axes=(2, 3))
    return ctx.call("squeeze", out, axis=(0,)) if unb else out
