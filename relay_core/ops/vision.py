"""Detection ops: vision.roi_align, vision.roi_pool, vision.non_max_suppression.

Semantics are ONNX's (RoiAlign-16, MaxRoiPool, NonMaxSuppression-11); box coordinates and
weights are computed in the boxes' dtype as ONNX's runtimes do, so rounding ties resolve alike.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import EvalError, OpTypeError
from ..ir import dtype as dt
from ..ir.types import Any, TensorType
from . import nn_util as U
from . import relations as R
from .factories import check_kind, random_array
from .registry import Kernel, OpDef, OpPattern, Rule, Sample, attrs, declare, register


@attrs
class RoiAlignAttrs:
    pooled_size: tuple[int, ...] = (1, 1)  # (output_height, output_width)
    spatial_scale: float = 1.0
    sample_ratio: int = 0  # samples per bin and axis; <= 0: ceil(roi size / pooled size)
    layout: str = "NCHW"
    mode: str = "avg"  # avg | max (ONNX's max: the max of the weighted corner values)
    coordinate_transformation_mode: str = "half_pixel"  # or output_half_pixel (no -0.5 shift)


@attrs
class RoiPoolAttrs:
    pooled_size: tuple[int, ...] = (1, 1)
    spatial_scale: float = 1.0
    layout: str = "NCHW"


def _roi_inputs_rel(args, op):
    """(data, number of rois); rois are (K, 5) [batch, x1, y1, x2, y2] or (K, 4) + indices (K,)."""
    x, rois = R.tensor(args[0], "data"), R.tensor(args[1], "rois")
    check_kind(x, "float", op)
    if rois.dtype != x.dtype:
        raise OpTypeError(f"{op}: rois dtype {rois.dtype} differs from the data's {x.dtype}")
    ncols = 4 if len(args) == 3 else 5
    if rois.ndim != 2 or R.dim_eq(rois.shape[1], ncols) is False:
        raise OpTypeError(
            f"{op}: rois must have shape (num_rois, {ncols}), got {tuple(rois.shape)}"
        )
    k = rois.shape[0]
    if len(args) == 3:
        ind = R.tensor(args[2], "batch_indices")
        if not dt.is_int(ind.dtype) or ind.ndim != 1 or R.dim_eq(ind.shape[0], k) is False:
            raise OpTypeError(
                f"{op}: batch_indices must be integers of shape ({k},), got "
                f"{ind.dtype}{list(ind.shape)}"
            )
        if not R.is_int(k):
            k = ind.shape[0]
    return x, k


def _roi_rel(op):
    def rel(args, attrs):
        x, k = _roi_inputs_rel(args, op)
        ax = U.data_axes(attrs.layout, 2, op)
        if x.ndim != 4:
            raise OpTypeError(f"{op}: data must have rank 4 ({attrs.layout}), got {tuple(x.shape)}")
        ph, pw = U.ntuple(attrs.pooled_size, 2, "pooled_size", op)
        if ph < 1 or pw < 1:
            raise OpTypeError(f"{op}: pooled_size must be positive, got {attrs.pooled_size}")
        if hasattr(attrs, "mode"):
            U.check_choice(attrs.mode, ("avg", "max"), "mode", op)
            U.check_choice(
                attrs.coordinate_transformation_mode,
                ("half_pixel", "output_half_pixel"),
                "coordinate_transformation_mode",
                op,
            )
        return TensorType(U.place((k, x.shape[ax[1]], ph, pw), ax), x.dtype)

    return rel


def _split_rois(xs, batch_size: int, op: str):
    """(boxes (K, 4), batch indices (K,)), checking the indices against the batch size."""
    rois = xs[1]
    boxes, batch = (rois, xs[2]) if len(xs) == 3 else (rois[:, 1:], rois[:, 0])
    batch = batch.astype(np.int64)
    if batch.size and (batch.min() < 0 or batch.max() >= batch_size):
        raise EvalError(f"{op}: batch index {batch.max()} out of range for batch size {batch_size}")
    return boxes, batch


def _bilinear_axis(start, bin_size, pooled, grid, size, ft):
    """Per-axis sample positions of RoIAlign: (low index, high index, low weight, high weight),
    each (pooled, grid); invalid samples have zero weights."""
    p = np.arange(pooled, dtype=ft)[:, None]
    g = np.arange(grid, dtype=ft)[None, :]
    pos = start + p * bin_size + (g + ft(0.5)) * bin_size / ft(grid)
    valid = (pos >= -1.0) & (pos <= size)
    pos = np.maximum(pos, ft(0))
    low = np.floor(pos).astype(np.int64)
    edge = low >= size - 1
    low = np.where(edge, size - 1, low)
    high = np.where(edge, size - 1, low + 1)
    pos = np.where(edge, low.astype(ft), pos)
    lw = pos - low.astype(ft)  # weight of the high sample
    hw = ft(1) - lw
    return low, high, np.where(valid, hw, 0).astype(ft), np.where(valid, lw, 0).astype(ft)


def _roi_align_ref(xs, attrs):
    x = xs[0]
    ax = U.data_axes(attrs.layout, 2, "vision.roi_align")
    xc = U.to_canonical(x, ax).astype(np.float64)
    boxes, batch = _split_rois(xs, xc.shape[0], "vision.roi_align")
    ft = U.compute_float(dt.from_numpy(boxes.dtype)).type
    boxes = boxes.astype(ft)
    ph, pw = U.ntuple(attrs.pooled_size, 2, "pooled_size", "vision.roi_align")
    _, c, h, w = xc.shape
    out = np.zeros((len(boxes), c, ph, pw))
    half = attrs.coordinate_transformation_mode == "half_pixel"
    offset = ft(0.5 if half else 0.0)
    scale = ft(attrs.spatial_scale)
    for k in range(len(boxes)):
        x1, y1, x2, y2 = (v * scale - offset for v in boxes[k])
        rw, rh = x2 - x1, y2 - y1
        if not half:  # malformed rois become 1x1
            rw, rh = max(rw, ft(1)), max(rh, ft(1))
        bh, bw = rh / ft(ph), rw / ft(pw)
        gh = attrs.sample_ratio if attrs.sample_ratio > 0 else int(math.ceil(rh / ft(ph)))
        gw = attrs.sample_ratio if attrs.sample_ratio > 0 else int(math.ceil(rw / ft(pw)))
        if gh <= 0 or gw <= 0:
            continue
        ylo, yhi, wylo, wyhi = _bilinear_axis(y1, bh, ph, gh, h, ft)
        xlo, xhi, wxlo, wxhi = _bilinear_axis(x1, bw, pw, gw, w, ft)
        img = xc[batch[k]]  # (C, H, W)
        yidx = np.stack([ylo, yhi], -1)  # (ph, gh, 2)
        wy = np.stack([wylo, wyhi], -1).astype(np.float64)
        xidx = np.stack([xlo, xhi], -1)
        wx = np.stack([wxlo, wxhi], -1).astype(np.float64)
        if attrs.mode == "avg":
            rows = np.einsum("cpgaw,pga->cpw", img[:, yidx, :], wy)  # (C, ph, W)
            vals = np.einsum("cpqhb,qhb->cpq", rows[:, :, xidx], wx)  # (C, ph, pw)
            out[k] = vals / max(gh * gw, 1)
        else:
            corners = img[:, yidx[:, :, :, None, None, None], xidx[None, None, None, :, :, :]]
            weights = wy[:, :, :, None, None, None] * wx[None, None, None, :, :, :]
            vals = corners * weights  # (C, ph, gh, 2, pw, gw, 2)
            out[k] = vals.max(axis=(3, 6)).max(axis=(2, 4))
    return U.from_canonical(out, ax).astype(x.dtype)


def _roi_samples(align: bool):
    def gen(rng):
        for layout in ("NCHW", "NHWC"):
            for dtype in ("float32", "float64"):
                x = random_array(rng, (2, 3, 9, 8), dtype)
                if layout == "NHWC":
                    x = x.transpose(0, 2, 3, 1)
                xy = rng.uniform(-2, 10, size=(5, 2, 2))
                boxes = np.concatenate([xy.min(1), xy.max(1)], axis=1).astype(dtype)
                batch = rng.integers(0, 2, size=5)
                base = {"layout": layout, "pooled_size": (3, 2), "spatial_scale": 0.8}
                if not align:  # roi_pool
                    rois5 = np.concatenate([batch[:, None].astype(dtype), boxes], 1)
                    yield Sample([x, rois5], base)
                    continue
                for extra in (
                    {},
                    {"sample_ratio": 2, "mode": "max"},
                    {"sample_ratio": 3},
                    {"coordinate_transformation_mode": "output_half_pixel"},
                ):
                    yield Sample([x, boxes, batch.astype(np.int64)], {**base, **extra})
                rois5 = np.concatenate([batch[:, None].astype(dtype), boxes], 1)
                yield Sample([x, rois5], {**base, "pooled_size": (1, 1)})
        # more channels than a kernel's work unit takes (the sample tables serve several)
        x = random_array(rng, (1, 40, 7, 6), "float32")
        xy = rng.uniform(-1, 8, size=(4, 2, 2))
        boxes = np.concatenate([xy.min(1), xy.max(1)], axis=1).astype(np.float32)
        if align:
            for extra in ({"sample_ratio": 2}, {"sample_ratio": 1, "mode": "max"}):
                args = [x, boxes, np.zeros(4, np.int64)]
                yield Sample(args, {"pooled_size": (3, 3), "spatial_scale": 0.9, **extra})
        # Small enough for finite-difference gradient checks.
        x = random_array(rng, (1, 2, 6, 5), "float64")
        xy = rng.uniform(-1, 6, size=(3, 2, 2))
        boxes = np.concatenate([xy.min(1), xy.max(1)], axis=1)
        batch = np.zeros(3, np.int64)
        if not align:
            rois5 = np.concatenate([batch[:, None].astype(np.float64), boxes], 1)
            yield Sample([x, rois5], {"pooled_size": (2, 2)})
        else:
            for extra in (
                {},
                {"sample_ratio": 2, "mode": "max"},
                {"coordinate_transformation_mode": "output_half_pixel", "spatial_scale": 0.7},
            ):
                yield Sample([x, boxes, batch], {"pooled_size": (2, 2), **extra})
        x = random_array(rng, (1, 2, 4, 4), "float32")
        yield Sample([x, np.zeros((0, 5), np.float32)], {})

    return gen


register(
    OpDef(
        "vision.roi_align",
        _roi_rel("vision.roi_align"),
        _roi_align_ref,
        OpPattern.OUT_EWISE_FUSABLE,
        RoiAlignAttrs,
        (2, 3),
        "RoIAlign: bilinear samples averaged (or maxed) per output bin; rois (K, 4) with "
        "batch_indices (K,), or (K, 5) with the batch index first",
        samples=_roi_samples(True),
    )
)
declare(
    "vision.roi_align",
    kernel=Kernel("relay_core.backend.kernels.vision:emit_roi_align"),
    dynamic_kernel=Kernel("relay_core.backend.kernels.vision:emit_dynamic_roi_align"),
    grad=Rule("relay_core.ops.grads_sample:_roi_rule", "vision.roi_align"),
)


def _roi_pool_ref(xs, attrs):
    x = xs[0]
    ax = U.data_axes(attrs.layout, 2, "vision.roi_pool")
    xc = U.to_canonical(x, ax)
    boxes, batch = _split_rois(xs, xc.shape[0], "vision.roi_pool")
    ph, pw = U.ntuple(attrs.pooled_size, 2, "pooled_size", "vision.roi_pool")
    _, c, h, w = xc.shape
    out = np.zeros((len(boxes), c, ph, pw), dtype=x.dtype)
    ft = U.compute_float(dt.from_numpy(boxes.dtype)).type
    scale = ft(attrs.spatial_scale)

    def c_round(v):  # C round(): halves away from zero
        return int(np.sign(v) * np.floor(np.abs(v) + 0.5))

    for k in range(len(boxes)):
        x1, y1, x2, y2 = (c_round(ft(v) * scale) for v in boxes[k])
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        bh, bw = ft(rh) / ft(ph), ft(rw) / ft(pw)
        img = xc[batch[k]]
        for i in range(ph):
            hs = min(max(int(np.floor(ft(i) * bh)) + y1, 0), h)
            he = min(max(int(np.ceil(ft(i + 1) * bh)) + y1, 0), h)
            if he <= hs:
                continue
            rows = img[:, hs:he].max(axis=1)
            for j in range(pw):
                ws = min(max(int(np.floor(ft(j) * bw)) + x1, 0), w)
                we = min(max(int(np.ceil(ft(j + 1) * bw)) + x1, 0), w)
                if we > ws:
                    out[k, :, i, j] = rows[:, ws:we].max(axis=1)
    return U.from_canonical(out, ax)


register(
    OpDef(
        "vision.roi_pool",
        _roi_rel("vision.roi_pool"),
        _roi_pool_ref,
        OpPattern.OUT_EWISE_FUSABLE,
        RoiPoolAttrs,
        (2, 2),
        "max RoI pooling (ONNX MaxRoiPool / Caffe): rois (K, 5) [batch, x1, y1, x2, y2]",
        samples=_roi_samples(False),
    )
)
declare(
    "vision.roi_pool",
    kernel=Kernel("relay_core.backend.kernels.vision:emit_roi_pool"),
    grad=Rule("relay_core.ops.grads_sample:_roi_rule", "vision.roi_pool"),
)


# ---------------------------------------------------------------------------------------------
# Non-maximum suppression (ONNX NonMaxSuppression-11).


@attrs
class NmsAttrs:
    max_output_boxes_per_class: int = 0
    iou_threshold: float = 0.0
    score_threshold: float | None = None  # None: keep every score
    center_point_box: int = 0  # 0: [y1, x1, y2, x2] (any diagonal); 1: [x_c, y_c, w, h]


def _nms_rel(args, attrs):
    op = "vision.non_max_suppression"
    boxes, scores = R.tensor(args[0], "boxes"), R.tensor(args[1], "scores")
    check_kind(boxes, "float", op)
    if boxes.ndim != 3 or R.dim_eq(boxes.shape[2], 4) is False:
        raise OpTypeError(
            f"{op}: boxes must have shape (batch, boxes, 4), got {tuple(boxes.shape)}"
        )
    if scores.ndim != 3 or scores.dtype != boxes.dtype:
        raise OpTypeError(
            f"{op}: scores must have shape (batch, classes, boxes) and the boxes' dtype, got "
            f"{scores.dtype}{list(scores.shape)}"
        )
    for a, b, what in (
        (boxes.shape[0], scores.shape[0], "batch"),
        (boxes.shape[1], scores.shape[2], "box"),
    ):
        if R.dim_eq(a, b) is False:
            raise OpTypeError(
                f"{op}: {what} counts differ: boxes {tuple(boxes.shape)}, "
                f"scores {tuple(scores.shape)}"
            )
    if attrs.center_point_box not in (0, 1):
        raise OpTypeError(f"{op}: center_point_box must be 0 or 1, got {attrs.center_point_box}")
    for i, what in (
        (2, "max_output_boxes_per_class"),
        (3, "iou_threshold"),
        (4, "score_threshold"),
    ):
        if len(args) > i:
            t = R.tensor(args[i], what)
            if t.ndim > 1 or (t.ndim == 1 and R.dim_eq(t.shape[0], 1) is False):
                raise OpTypeError(
                    f"{op}: {what} must be a scalar or have shape (1,), got {list(t.shape)}"
                )
    return TensorType((Any, 3), "int64")


def _corners(b, center: bool):
    """(x_min, x_max, y_min, y_max) in the boxes' dtype, as ONNX's reference computes them."""
    if center:
        hw, hh = b[..., 2] / 2, b[..., 3] / 2
        return b[..., 0] - hw, b[..., 0] + hw, b[..., 1] - hh, b[..., 1] + hh
    return (
        np.minimum(b[..., 1], b[..., 3]),
        np.maximum(b[..., 1], b[..., 3]),
        np.minimum(b[..., 0], b[..., 2]),
        np.maximum(b[..., 0], b[..., 2]),
    )


def _suppressed(cand, sel, iou_threshold):
    """Which candidates (`cand` corners) overlap the selected box by more than the threshold."""
    cx0, cx1, cy0, cy1 = cand
    sx0, sx1, sy0, sy1 = sel
    ix0, ix1 = np.maximum(cx0, sx0), np.minimum(cx1, sx1)
    iy0, iy1 = np.maximum(cy0, sy0), np.minimum(cy1, sy1)
    with np.errstate(all="ignore"):
        inter = (ix1 - ix0) * (iy1 - iy0)
        a1 = (cx1 - cx0) * (cy1 - cy0)
        a2 = (sx1 - sx0) * (sy1 - sy0)
        union = a1 + a2 - inter
        ok = (ix1 > ix0) & (iy1 > iy0) & (inter > 0) & (a1 > 0) & (a2 > 0) & (union > 0)
        return ok & (inter / np.where(ok, union, 1) > iou_threshold)


def _nms_ref(xs, attrs):
    boxes, scores = xs[0], xs[1]
    max_out = attrs.max_output_boxes_per_class
    iou_t, score_t = attrs.iou_threshold, attrs.score_threshold
    if len(xs) > 2 and xs[2].size:
        max_out = int(xs[2].reshape(-1)[0])
    if len(xs) > 3 and xs[3].size:
        iou_t = xs[3].reshape(-1)[0]
    if len(xs) > 4 and xs[4].size:
        score_t = xs[4].reshape(-1)[0]
    max_out = max(max_out, 0)
    ft = U.compute_float(dt.from_numpy(boxes.dtype))
    boxes, scores = boxes.astype(ft, copy=False), scores.astype(ft, copy=False)
    if isinstance(iou_t, float):
        iou_t = ft.type(iou_t)
    out = []
    for b in range(boxes.shape[0]):
        corners = _corners(boxes[b], attrs.center_point_box == 1)
        for c in range(scores.shape[1]):
            s = scores[b, c]
            cand = np.arange(s.shape[0]) if score_t is None else np.nonzero(s > score_t)[0]
            cand = cand[np.argsort(-s[cand], kind="stable")]  # best first, ties by index
            kept = 0
            while cand.size and kept < max_out:
                best, cand = cand[0], cand[1:]
                out.append((b, c, best))
                kept += 1
                sel = tuple(v[best] for v in corners)
                cand = cand[~_suppressed(tuple(v[cand] for v in corners), sel, iou_t)]
    return np.array(out, dtype=np.int64).reshape(-1, 3)


def _nms_samples(rng):
    for center in (0, 1):
        for dtype in ("float32", "float64"):
            xy = rng.uniform(0, 10, size=(2, 12, 2, 2))
            if center:
                boxes = np.concatenate([xy[:, :, 0], rng.uniform(0.5, 4, (2, 12, 2))], -1)
            else:
                boxes = xy.reshape(2, 12, 4)  # corners in any order
            boxes = boxes.astype(dtype)
            scores = rng.random((2, 3, 12)).astype(dtype)
            scores[0, 0, :4] = 0.5  # ties
            yield Sample(
                [boxes, scores],
                {"max_output_boxes_per_class": 5, "iou_threshold": 0.3, "center_point_box": center},
            )
            yield Sample(
                [
                    boxes,
                    scores,
                    np.array([3], np.int64),
                    np.array([0.5], dtype),
                    np.array([0.4], dtype),
                ],
                {"center_point_box": center},
            )
    yield Sample(
        [np.zeros((1, 0, 4), np.float32), np.zeros((1, 2, 0), np.float32)],
        {"max_output_boxes_per_class": 3},
    )
    yield Sample(
        [rng.random((1, 3, 4)).astype(np.float32), rng.random((1, 1, 3)).astype(np.float32)], {}
    )


register(
    OpDef(
        "vision.non_max_suppression",
        _nms_rel,
        _nms_ref,
        OpPattern.OPAQUE,
        NmsAttrs,
        (2, 5),
        "greedy per-class NMS; (selected, 3) int64 rows [batch, class, box] (ONNX); optional "
        "scalar inputs max_output_boxes_per_class, iou_threshold, score_threshold override "
        "the attributes",
        data_dependent_shape=True,
        samples=_nms_samples,
    )
)
declare("vision.non_max_suppression", lower=Rule("relay_core.backend.lower_select:_nms"))
