"""Image and vision ops: Resize / Upsample, GridSample, AffineGrid, RoiAlign,
NonMaxSuppression, Col2Im, DeformConv."""

from __future__ import annotations

import numpy as np

from relay_core.errors import OpTypeError
from relay_core.ops.onnx_extra import onnx_resize_plan

from .table import converter
from .util import cast

_METHODS = {"nearest": "nearest_neighbor", "linear": "linear", "bilinear": "linear",
            "cubic": "cubic", "bicubic": "cubic"}


def _resize(ctx, x, roi, scales, sizes, *, mode, coord, nearest_mode="round_prefer_floor",
            cubic_coeff_a=-0.75, exclude_outside=0, extrapolation_value=0.0, antialias=0,
            axes=None, policy="stretch"):
    method = _METHODS.get(mode)
    if method is None:
        raise ctx.error(f"unknown mode {mode!r}")
    kw = dict(method=method, coordinate_transformation_mode=coord,
              rounding_method=nearest_mode, cubic_alpha=cubic_coeff_a,
              cubic_exclude=int(exclude_outside), extrapolation_value=extrapolation_value,
              antialias=bool(antialias))
    vals = [None if e is None else ctx.value(e) for e in (roi, scales, sizes)]
    shape = ctx.shape_of(x)
    static = all(v is not None or e is None for v, e in zip(vals, (roi, scales, sizes)))
    if static and all(isinstance(d, int) for d in shape):
        try:
            size, scale, sp_roi = onnx_resize_plan(shape, *vals, axes, policy)
        except OpTypeError as e:
            raise ctx.error(str(e)) from None
        if coord != "tf_crop_and_resize":
            sp_roi = None
        return ctx.call(f"image.resize{len(shape) - 2}d", x, size=size, scale=scale, roi=sp_roi,
                        **kw)
    empty_f = ctx.const(np.zeros((0,), np.float32))
    args = [
        roi if roi is not None else empty_f,
        cast(ctx, scales, "float32") if scales is not None else empty_f,
        cast(ctx, sizes, "int64") if sizes is not None else ctx.const(np.zeros((0,), np.int64)),
    ]
    return ctx.call("dyn.image.resize", x, *args, axes=None if axes is None else tuple(axes),
                    keep_aspect_ratio_policy=policy, **kw)


@converter("Resize", 10)
def Resize_10(ctx, x, scales, *, mode="nearest"):
    return _resize(ctx, x, None, scales, None, mode=mode, coord="asymmetric",
                   nearest_mode="floor")


@converter("Resize", 11)
def Resize(ctx, x, roi=None, scales=None, sizes=None, *, antialias=0, axes=None,
           coordinate_transformation_mode="half_pixel", cubic_coeff_a=-0.75,
           exclude_outside=0, extrapolation_value=0.0, keep_aspect_ratio_policy="stretch",
           mode="nearest", nearest_mode="round_prefer_floor"):
    return _resize(ctx, x, roi, scales, sizes, mode=mode, coord=coordinate_transformation_mode,
                   nearest_mode=nearest_mode, cubic_coeff_a=cubic_coeff_a,
                   exclude_outside=exclude_outside, extrapolation_value=extrapolation_value,
                   antialias=antialias, axes=axes, policy=keep_aspect_ratio_policy)


@converter("Upsample", 7)
def Upsample_7(ctx, x, *, scales, mode="nearest"):
    return _resize(ctx, x, None, ctx.const(np.array(scales, np.float32)), None, mode=mode,
                   coord="asymmetric", nearest_mode="floor")


@converter("Upsample", 9)
def Upsample(ctx, x, scales, *, mode="nearest"):
    return _resize(ctx, x, None, scales, None, mode=mode, coord="asymmetric",
                   nearest_mode="floor")


@converter("GridSample", 16)
def GridSample(ctx, x, grid, *, align_corners=0, mode="bilinear", padding_mode="zeros"):
    layout = "NCHW" if ctx.ndim(x) == 4 else "NCDHW"
    return ctx.call("image.grid_sample", x, grid, method=mode, layout=layout,
                    padding_mode=padding_mode, align_corners=bool(align_corners))


@converter("AffineGrid", 20)
def AffineGrid(ctx, theta, size, *, align_corners=0):
    return ctx.call("image.affine_grid", theta, size=tuple(ctx.ints(size, "size")),
                    align_corners=bool(align_corners))
