"""Image and vision ops: Resize / Upsample, GridSample, AffineGrid, RoiAlign,
NonMaxSuppression, Col2Im, DeformConv."""

from __future__ import annotations

import numpy as np

from relay_core.errors import OpTypeError
from relay_core.ops.dyn_image import resize_plan

from .table import converter
from .util import cast

_METHODS = {
    "nearest": "nearest_neighbor",
    "linear": "linear",
    "bilinear": "linear",
    "cubic": "cubic",
    "bicubic": "cubic",
}


def _resize(
    ctx,
    x,
    roi,
    scales,
    sizes,
    *,
    mode,
    coord,
    nearest_mode="round_prefer_floor",
    cubic_coeff_a=-0.75,
    exclude_outside=0,
    extrapolation_value=0.0,
    antialias=0,
    axes=None,
    policy="stretch",
):
    method = _METHODS.get(mode)
    if method is None:
        raise ctx.error(f"unknown mode {mode!r}")
    kw = dict(
        method=method,
        coordinate_transformation_mode=coord,
        rounding_method=nearest_mode,
        cubic_alpha=cubic_coeff_a,
        cubic_exclude=int(exclude_outside),
        extrapolation_value=extrapolation_value,
        antialias=bool(antialias),
    )
    vals = [None if e is None else ctx.value(e) for e in (roi, scales, sizes)]
    shape = ctx.shape_of(x)
    static = all(v is not None or e is None for v, e in zip(vals, (roi, scales, sizes)))
    if static and (
        all(isinstance(d, int) for d in shape) or _keeps_run_time_dims(shape, vals, axes)
    ):
        try:
            size, scale, sp_roi = resize_plan(_stand_in(shape), *vals, axes, policy)
        except OpTypeError as e:
            raise ctx.error(str(e)) from None
        if coord != "tf_crop_and_resize":
            sp_roi = None
        return ctx.call(
            f"image.resize{len(shape) - 2}d", x, size=size, scale=scale, roi=sp_roi, **kw
        )
    empty_f = ctx.const(np.zeros((0,), np.float32))
    args = [
        roi if roi is not None else empty_f,
        cast(ctx, scales, "float32") if scales is not None else empty_f,
        cast(ctx, sizes, "int64") if sizes is not None else ctx.const(np.zeros((0,), np.int64)),
    ]
    return ctx.call(
        "dyn.image.resize",
        x,
        *args,
        axes=None if axes is None else tuple(axes),
        keep_aspect_ratio_policy=policy,
        **kw,
    )


def _keeps_run_time_dims(shape, vals, axes) -> bool:
    """Constant scales of 1 on the batch / channel axes, whichever of them is known only at
    run time (a dynamic batch), and static spatial dims: image.resizeNd with static sizes
    (HRNet's fuse layers, `Resize(x, scales=[1, 1, 2, 2])`). Sizes name every axis's value,
    which a run-time batch has not."""
    roi, scales, sizes = vals
    if sizes is not None and np.asarray(sizes).size or scales is None:
        return False
    if not all(isinstance(d, int) for d in shape[2:]):
        return False
    r = len(shape)
    full = dict(zip([a + r if a < 0 else a for a in (axes or range(r))], np.ravel(scales)))
    return all(float(full.get(a, 1.0)) == 1.0 for a in (0, 1) if not isinstance(shape[a], int))


def _stand_in(shape):
    """The shape with 1 for each run-time dim (left as it is by the plan: scale 1)."""
    return tuple(d if isinstance(d, int) else 1 for d in shape)


@converter("Resize", 10)
def Resize_10(ctx, x, scales, *, mode="nearest"):
    return _resize(ctx, x, None, scales, None, mode=mode, coord="asymmetric", nearest_mode="floor")


@converter("Resize", 11)
def Resize(
    ctx,
    x,
    roi=None,
    scales=None,
    sizes=None,
    *,
    antialias=0,
    axes=None,
    coordinate_transformation_mode="half_pixel",
    cubic_coeff_a=-0.75,
    exclude_outside=0,
    extrapolation_value=0.0,
    keep_aspect_ratio_policy="stretch",
    mode="nearest",
    nearest_mode="round_prefer_floor",
):
    return _resize(
        ctx,
        x,
        roi,
        scales,
        sizes,
        mode=mode,
        coord=coordinate_transformation_mode,
        nearest_mode=nearest_mode,
        cubic_coeff_a=cubic_coeff_a,
        exclude_outside=exclude_outside,
        extrapolation_value=extrapolation_value,
        antialias=antialias,
        axes=axes,
        policy=keep_aspect_ratio_policy,
    )


@converter("Upsample", 7)
def Upsample_7(ctx, x, *, scales, mode="nearest"):
    return _resize(
        ctx,
        x,
        None,
        ctx.const(np.array(scales, np.float32)),
        None,
        mode=mode,
        coord="asymmetric",
        nearest_mode="floor",
    )


@converter("Upsample", 9)
def Upsample(ctx, x, scales, *, mode="nearest"):
    return _resize(ctx, x, None, scales, None, mode=mode, coord="asymmetric", nearest_mode="floor")


@converter("GridSample", 16)
def GridSample(ctx, x, grid, *, align_corners=0, mode="bilinear", padding_mode="zeros"):
    layout = "NCHW" if ctx.ndim(x) == 4 else "NCDHW"
    return ctx.call(
        "image.grid_sample",
        x,
        grid,
        method=mode,
        layout=layout,
        padding_mode=padding_mode,
        align_corners=bool(align_corners),
    )


@converter("AffineGrid", 20)
def AffineGrid(ctx, theta, size, *, align_corners=0):
    if ctx.value(size) is None:
        return ctx.call(
            "dyn.image.affine_grid",
            theta,
            cast(ctx, size, "int64"),
            align_corners=bool(align_corners),
        )
    return ctx.call(
        "image.affine_grid",
        theta,
        size=tuple(ctx.ints(size, "size")),
        align_corners=bool(align_corners),
    )


@converter("RoiAlign", 10)
def RoiAlign_10(
    ctx,
    x,
    rois,
    batch_indices,
    *,
    mode="avg",
    output_height=1,
    output_width=1,
    sampling_ratio=0,
    spatial_scale=1.0,
):
    return RoiAlign(
        ctx,
        x,
        rois,
        batch_indices,
        mode=mode,
        output_height=output_height,
        output_width=output_width,
        sampling_ratio=sampling_ratio,
        spatial_scale=spatial_scale,
        coordinate_transformation_mode="output_half_pixel",
    )


@converter("RoiAlign", 16)
def RoiAlign(
    ctx,
    x,
    rois,
    batch_indices,
    *,
    coordinate_transformation_mode="half_pixel",
    mode="avg",
    output_height=1,
    output_width=1,
    sampling_ratio=0,
    spatial_scale=1.0,
):
    return ctx.call(
        "vision.roi_align",
        x,
        rois,
        batch_indices,
        pooled_size=(output_height, output_width),
        spatial_scale=spatial_scale,
        sample_ratio=sampling_ratio,
        mode=mode,
        coordinate_transformation_mode=coordinate_transformation_mode,
    )


@converter("MaxRoiPool", 1)
def MaxRoiPool(ctx, x, rois, *, pooled_shape, spatial_scale=1.0):
    return ctx.call(
        "vision.roi_pool", x, rois, pooled_size=tuple(pooled_shape), spatial_scale=spatial_scale
    )


@converter("NonMaxSuppression", 10)
def NonMaxSuppression(
    ctx,
    boxes,
    scores,
    max_output_boxes_per_class=None,
    iou_threshold=None,
    score_threshold=None,
    *,
    center_point_box=0,
):
    args = [boxes, scores]
    given = [max_output_boxes_per_class, iou_threshold, score_threshold]
    n = max((i + 1 for i, e in enumerate(given) if e is not None), default=0)
    defaults = [np.array(0, np.int64), np.array(0.0), None]
    for e, dtype, d in zip(given[:n], ("int64", ctx.dtype(boxes), ctx.dtype(boxes)), defaults):
        if e is None:  # an absent input before a given one: its default
            e = ctx.const(d)
        args.append(cast(ctx, e, dtype))
    return ctx.call("vision.non_max_suppression", *args, center_point_box=center_point_box)


@converter("ImageDecoder", 20)
def ImageDecoder(ctx, encoded, *, pixel_format="RGB"):
    return ctx.call("image.decode", encoded, pixel_format=pixel_format)
