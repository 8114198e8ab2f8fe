"""Image and detection ops: resizes, CropAndResize, non-max suppression, TopK, and the
space / depth / batch rearrangements."""

from __future__ import annotations

import numpy as np

from .table import TF
from .util import cast_to, ints, refine


# -- resize ---------------------------------------------------------------------------------------
def _resize(ctx, images, size, method, align_corners, half_pixel_centers, out_dtype=""):
    h, w = ints(ctx, size, "size")
    kw = {"method": method}
    if method == "nearest_neighbor":
        if align_corners:
            kw.update(
                coordinate_transformation_mode="align_corners", rounding_method="round_prefer_ceil"
            )
        elif half_pixel_centers:
            kw.update(
                coordinate_transformation_mode="tf_half_pixel_for_nn", rounding_method="floor"
            )
        else:
            kw.update(coordinate_transformation_mode="asymmetric", rounding_method="floor")
    else:
        mode = (
            "align_corners"
            if align_corners
            else "half_pixel"
            if half_pixel_centers
            else "asymmetric"
        )
        kw["coordinate_transformation_mode"] = mode
    return ctx.call("image.resize2d", images, size=(h, w), layout="NHWC", out_dtype=out_dtype, **kw)


@TF.register("ResizeBilinear")
def ResizeBilinear(ctx, images, size, align_corners=False, half_pixel_centers=False):
    return _resize(ctx, images, size, "linear", align_corners, half_pixel_centers, "float32")


@TF.register("ResizeNearestNeighbor")
def ResizeNearestNeighbor(ctx, images, size, align_corners=False, half_pixel_centers=False):
    return _resize(ctx, images, size, "nearest_neighbor", align_corners, half_pixel_centers)


@TF.register("ResizeBicubic")
def ResizeBicubic(ctx, images, size, align_corners=False, half_pixel_centers=False):
    """TF's bicubic kernel reads its weights from a 1024-entry table (positions rounded to
    1/1024), so it is reproduced as two constant interpolation matrices, one per axis."""
    oh, ow = ints(ctx, size, "size")
    _, h, w, c = ctx.shape_of(images)
    if not all(isinstance(d, int) for d in (h, w, c)):
        raise ctx.error("ResizeBicubic needs static height, width and channels")
    x = cast_to(ctx, images, "float32")
    wh = ctx.const(_bicubic_matrix(h, oh, align_corners, half_pixel_centers))
    ww = ctx.const(_bicubic_matrix(w, ow, align_corners, half_pixel_centers))
    y = ctx.call("reshape", x, newshape=(-1, h, w * c))
    y = ctx.call("nn.matmul", wh, y)  # (N, oh, w * c)
    y = ctx.call("reshape", y, newshape=(-1, w, c))
    y = ctx.call("nn.matmul", ww, y)  # (N * oh, ow, c)
    return ctx.call("reshape", y, newshape=(-1, oh, ow, c))


_TABLE = 1024


def _coeffs(a: float) -> np.ndarray:
    x = np.arange(_TABLE + 1, dtype=np.float64) / _TABLE
    t = np.empty((_TABLE + 1, 2), np.float32)
    t[:, 0] = ((a + 2) * x - (a + 3)) * x * x + 1
    x = x + 1.0
    t[:, 1] = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return t


def _bicubic_matrix(n_in: int, n_out: int, align_corners: bool, half_pixel: bool) -> np.ndarray:
    """(n_out, n_in) weights of TF's resize_bicubic along one axis."""
    if align_corners and n_out > 1:
        scale = np.float32((n_in - 1) / (n_out - 1))
    else:
        scale = np.float32(n_in / n_out)
    table = _coeffs(-0.5 if half_pixel else -0.75)
    m = np.zeros((n_out, n_in), np.float32)
    for o in range(n_out):
        f = (
            (np.float32(o) + np.float32(0.5)) * scale - np.float32(0.5)
            if half_pixel
            else np.float32(o) * scale
        )
        loc = int(np.floor(f))
        off = int(np.rint(np.float32(f - loc) * _TABLE))
        wts = [table[off, 1], table[off, 0], table[_TABLE - off, 0], table[_TABLE - off, 1]]
        idx = [loc - 1, loc, loc + 1, loc + 2]
        if half_pixel:  # Keys: taps outside the image get weight 0, then renormalise
            wts = [wt if 0 <= i < n_in else np.float32(0) for wt, i in zip(wts, idx)]
            total = np.float32(sum(wts))
            if abs(total) >= 1000 * np.finfo(np.float32).tiny:
                wts = [np.float32(wt / total) for wt in wts]
        for wt, i in zip(wts, idx):
            m[o, min(max(i, 0), n_in - 1)] += wt
    return m


@TF.register("CropAndResize")
def CropAndResize(
    ctx, image, boxes, box_ind, crop_size, method="bilinear", extrapolation_value=0.0
):
    ch, cw = ints(ctx, crop_size, "crop_size")
    boxes = cast_to(ctx, boxes, "float32")
    method = {"nearest": "nearest_neighbor"}.get(method, method)
    return ctx.call(
        "image.crop_and_resize",
        image,
        boxes,
        box_ind,
        crop_size=(ch, cw),
        layout="NHWC",
        method=method,
        extrapolation_value=extrapolation_value,
        out_dtype="float32",
    )


# -- non-max suppression ---------------------------------------------------------------------------
def _nms(ctx, boxes, scores, max_output_size, iou_threshold, score_threshold=None):
    """Selected box indices (int32, best first) of TF's single-class NMS, via the ONNX-style
    vision.non_max_suppression on a batch of one and one class."""
    b3 = ctx.call("expand_dims", boxes, axis=0)
    s3 = ctx.call("reshape", scores, newshape=(1, 1, -1))
    ft = ctx.dtype(boxes)
    if ctx.dtype(scores) != ft:
        s3 = ctx.call("cast", s3, dtype=ft)
    args = [b3, s3, cast_to(ctx, max_output_size, "int64"), cast_to(ctx, iou_threshold, ft)]
    if score_threshold is not None:
        args.append(cast_to(ctx, score_threshold, ft))
    sel = ctx.call("vision.non_max_suppression", *args)
    idx = ctx.call("take", sel, ctx.const(np.asarray(2, np.int64)), axis=1)
    return ctx.call("cast", idx, dtype="int32")


def _pad_to(ctx, idx, max_output_size):
    """TF's pad_to_max_output_size: zeros after the selected indices."""
    m = ints(ctx, max_output_size, "max_output_size")[0]
    zeros = ctx.const(np.zeros(m, np.int32))
    both = ctx.call("concatenate", idx, zeros, axis=0)
    return refine(ctx, ctx.call("strided_slice", both, begin=(0,), end=(m,)), [m])


def _count(ctx, idx):
    return ctx.call(
        "take", ctx.call("shape_of", idx, dtype="int32"), ctx.const(np.asarray(0, np.int64)), axis=0
    )


@TF.register("NonMaxSuppression")
def NonMaxSuppression(ctx, boxes, scores, max_output_size, iou_threshold=0.5):
    thr = ctx.const(np.asarray(iou_threshold, np.float32))
    return _nms(ctx, boxes, scores, max_output_size, thr)


@TF.register("NonMaxSuppressionV2")
def NonMaxSuppressionV2(ctx, boxes, scores, max_output_size, iou_threshold):
    return _nms(ctx, boxes, scores, max_output_size, iou_threshold)


@TF.register("NonMaxSuppressionV3")
def NonMaxSuppressionV3(ctx, boxes, scores, max_output_size, iou_threshold, score_threshold):
    return _nms(ctx, boxes, scores, max_output_size, iou_threshold, score_threshold)


@TF.register("NonMaxSuppressionV4")
def NonMaxSuppressionV4(
    ctx,
    boxes,
    scores,
    max_output_size,
    iou_threshold,
    score_threshold,
    pad_to_max_output_size=False,
):
    idx = _nms(ctx, boxes, scores, max_output_size, iou_threshold, score_threshold)
    n = _count(ctx, idx)
    if pad_to_max_output_size:
        idx = _pad_to(ctx, idx, max_output_size)
    return [idx, n]


@TF.register("NonMaxSuppressionV5")
def NonMaxSuppressionV5(
    ctx,
    boxes,
    scores,
    max_output_size,
    iou_threshold,
    score_threshold,
    soft_nms_sigma,
    pad_to_max_output_size=False,
):
    sigma = ctx.value(soft_nms_sigma)
    if sigma is None or float(np.asarray(sigma).reshape(-1)[0]) != 0.0:
        raise ctx.error("soft NMS (soft_nms_sigma != 0) is not supported")
    idx = _nms(ctx, boxes, scores, max_output_size, iou_threshold, score_threshold)
    n = _count(ctx, idx)
    sel_scores = ctx.call("take", scores, idx, axis=0, mode="fast")
    if pad_to_max_output_size:
        m = ints(ctx, max_output_size, "max_output_size")[0]
        idx = _pad_to(ctx, idx, max_output_size)
        zeros = (
            ctx.const(np.zeros(m, np.float32))
            if ctx.dtype(scores) == "float32"
            else ctx.call("zeros", shape=(m,), dtype=ctx.dtype(scores))
        )
        both = ctx.call("concatenate", sel_scores, zeros, axis=0)
        sel_scores = refine(ctx, ctx.call("strided_slice", both, begin=(0,), end=(m,)), [m])
    return [idx, sel_scores, n]


# -- top-k ----------------------------------------------------------------------------------------
@TF.register("TopKV2")
def TopKV2(ctx, x, k, sorted=True, index_type="int32"):
    kv = ctx.value(k)
    if kv is not None:
        kk = int(np.asarray(kv).reshape(-1)[0])
        if kk == 0:
            shape = tuple(d for d in ctx.shape_of(x)[:-1])
            if any(not isinstance(d, int) for d in shape):
                raise ctx.error("TopKV2 with k = 0 needs a static shape")
            return [
                ctx.call("zeros", shape=shape + (0,), dtype=ctx.dtype(x)),
                ctx.call("zeros", shape=shape + (0,), dtype=index_type),
            ]
        out = ctx.call("topk", x, k=kk, axis=-1, ret_type="both", is_ascend=False, dtype=index_type)
    else:
        out = ctx.call(
            "dyn.topk",
            x,
            cast_to(ctx, k, "int64"),
            axis=-1,
            ret_type="both",
            is_ascend=False,
            dtype=index_type,
        )
    return [ctx.item(out, 0), ctx.item(out, 1)]


# -- space / depth / batch -------------------------------------------------------------------------
@TF.register("DepthToSpace")
def DepthToSpace(ctx, x, block_size=2, data_format="NHWC"):
    layout = "NCHW" if data_format.startswith("NCHW") else "NHWC"
    return ctx.call("nn.depth_to_space", x, block_size=block_size, layout=layout, mode="DCR")


@TF.register("SpaceToDepth")
def SpaceToDepth(ctx, x, block_size=2, data_format="NHWC"):
    layout = "NCHW" if data_format.startswith("NCHW") else "NHWC"
    return ctx.call("nn.space_to_depth", x, block_size=block_size, layout=layout, mode="DCR")


@TF.register("SpaceToBatchND")
def SpaceToBatchND(ctx, x, block_shape, paddings):
    """Pad, split each spatial dim into (dim / b, b), move the block factors to the batch."""
    bs = ints(ctx, block_shape, "block_shape")
    pads = np.asarray(ctx.require_value(paddings, "paddings")).reshape(-1, 2)
    shape = ctx.shape_of(x)
    m, nd = len(bs), len(shape)
    if any(not isinstance(d, int) for d in shape[1:]):
        raise ctx.error("SpaceToBatchND needs static non-batch dims")
    width = [(0, 0)] + [(int(a), int(b)) for a, b in pads] + [(0, 0)] * (nd - 1 - m)
    y = ctx.call("nn.pad", x, pad_width=tuple(width))
    sp = [shape[1 + i] + width[1 + i][0] + width[1 + i][1] for i in range(m)]
    rest = list(shape[1 + m :])
    split = [-1]
    for d, b in zip(sp, bs):
        split += [d // b, b]
    y = ctx.call("reshape", y, newshape=tuple(split + rest))
    # (N, d0, b0, d1, b1, ..., rest) -> (b0, b1, ..., N, d0, d1, ..., rest)
    perm = (
        [2 + 2 * i for i in range(m)]
        + [0]
        + [1 + 2 * i for i in range(m)]
        + list(range(1 + 2 * m, 1 + 2 * m + len(rest)))
    )
    y = ctx.call("transpose", y, axes=tuple(perm))
    return ctx.call(
        "reshape", y, newshape=(-1,) + tuple(d // b for d, b in zip(sp, bs)) + tuple(rest)
    )


@TF.register("BatchToSpaceND")
def BatchToSpaceND(ctx, x, block_shape, crops):
    bs = ints(ctx, block_shape, "block_shape")
    cr = np.asarray(ctx.require_value(crops, "crops")).reshape(-1, 2)
    shape = ctx.shape_of(x)
    m = len(bs)
    if any(not isinstance(d, int) for d in shape[1:]):
        raise ctx.error("BatchToSpaceND needs static non-batch dims")
    sp, rest = list(shape[1 : 1 + m]), list(shape[1 + m :])
    # (b0, ..., N, d0, ..., rest) -> (N, d0, b0, d1, b1, ..., rest)
    y = ctx.call("reshape", x, newshape=tuple(bs) + (-1,) + tuple(sp) + tuple(rest))
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    y = ctx.call("transpose", y, axes=tuple(perm))
    full = [d * b for d, b in zip(sp, bs)]
    y = ctx.call("reshape", y, newshape=(-1,) + tuple(full) + tuple(rest))
    if cr.any():
        y = ctx.call(
            "strided_slice",
            y,
            begin=tuple(int(c[0]) for c in cr),
            end=tuple(f - int(c[1]) for f, c in zip(full, cr)),
            axes=tuple(range(1, 1 + m)),
        )
    return y
