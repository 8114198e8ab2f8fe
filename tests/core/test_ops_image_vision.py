"""Numpy references of the image and vision ops against the ONNX reference evaluator,
onnxruntime and PyTorch."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from relay_core.errors import OpTypeError
from relay_core.ir import Any, TensorType
from relay_core.ops import lookup

from .nn_oracles import RNG, F, T, onnx_run, ort_run, randn, rel, run

# ---------------------------------------------------------------------------------------------
# Resize.

ONNX_MODES = [
    "half_pixel",
    "align_corners",
    "asymmetric",
    "pytorch_half_pixel",
    "tf_crop_and_resize",
    "half_pixel_symmetric",
]


def _onnx_resize(x, sizes=None, scales=None, roi=None, **attrs):
    r = np.array(roi, np.float32) if roi is not None else None
    s = np.array(scales, np.float32) if scales is not None else None
    z = np.array(sizes, np.int64) if sizes is not None else None
    return onnx_run("Resize", [x, r, s, z], **attrs)[0]


def _resize_both(x, out=None, scales=None, mode="half_pixel", method="linear", **kw):
    """(ours, onnx) for a 2-D NCHW resize."""
    roi = None
    attrs = {}
    if mode == "tf_crop_and_resize":
        roi = [0, 0, 0.2, 0.1, 1, 1, 0.9, 0.7]
        attrs["roi"] = (0.2, 0.1, 0.9, 0.7)
        kw.setdefault("extrapolation_value", -2.0)
    onnx_kw = {
        "mode": {"nearest_neighbor": "nearest"}.get(method, method),
        "coordinate_transformation_mode": mode,
        "cubic_coeff_a": kw.get("cubic_alpha", -0.75),
        "exclude_outside": kw.get("cubic_exclude", 0),
        "antialias": int(kw.get("antialias", False)),
        "extrapolation_value": kw.get("extrapolation_value", 0.0),
    }
    if "rounding_method" in kw:
        onnx_kw["nearest_mode"] = kw["rounding_method"]
    if scales is not None:
        want = _onnx_resize(x, scales=[1, 1, *scales], roi=roi, **onnx_kw)
        attrs["scale"] = tuple(float(np.float32(s)) for s in scales)
    else:
        want = _onnx_resize(x, sizes=[*x.shape[:2], *out], roi=roi, **onnx_kw)
        attrs["size"] = out
    ours = run(
        "image.resize2d", x, method=method, coordinate_transformation_mode=mode, **attrs, **kw
    )
    return ours, want


RESIZE_TARGETS = [
    dict(out=(9, 11)),
    dict(out=(3, 2)),
    dict(out=(1, 8)),
    dict(scales=(1.7, 0.6)),
    dict(scales=(2.0, 3.0)),
]


@pytest.mark.parametrize("mode", ONNX_MODES)
@pytest.mark.parametrize("target", RESIZE_TARGETS, ids=str)
@pytest.mark.parametrize("method", ["linear", "cubic"])
def test_resize_matches_onnx(mode, target, method):
    x = randn(2, 3, 4, 5)
    ours, want = _resize_both(x, mode=mode, method=method, **target)
    np.testing.assert_allclose(ours, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", ONNX_MODES)
@pytest.mark.parametrize("rounding", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
@pytest.mark.parametrize("target", RESIZE_TARGETS, ids=str)
def test_resize_nearest_matches_onnx(mode, rounding, target):
    x = randn(2, 3, 4, 5)
    ours, want = _resize_both(
        x, mode=mode, method="nearest_neighbor", rounding_method=rounding, **target
    )
    np.testing.assert_array_equal(ours, want)


@pytest.mark.parametrize("method", ["linear", "cubic"])
@pytest.mark.parametrize("target", RESIZE_TARGETS, ids=str)
@pytest.mark.parametrize(
    "variant",
    [
        dict(antialias=True),
        dict(cubic_exclude=1),
        dict(antialias=True, cubic_exclude=1, cubic_alpha=-0.5),
    ],
    ids=str,
)
def test_resize_antialias_exclude_match_onnx(method, target, variant):
    x = randn(1, 2, 9, 7)
    ours, want = _resize_both(x, mode="half_pixel", method=method, **target, **variant)
    np.testing.assert_allclose(ours, want, rtol=1e-6, atol=1e-6)


def test_resize_int_layouts_and_dims():
    x = RNG.integers(0, 256, (1, 2, 4, 5)).astype(np.uint8)
    ours, want = _resize_both(x, out=(7, 3), method="cubic")
    assert ours.dtype == np.uint8
    np.testing.assert_array_equal(ours, want)
    xf = randn(1, 2, 4, 5)
    y = run("image.resize2d", xf, size=(6, 7), method="cubic")
    yl = run("image.resize2d", xf.transpose(0, 2, 3, 1), size=(6, 7), method="cubic", layout="NHWC")
    np.testing.assert_allclose(yl, y.transpose(0, 2, 3, 1), rtol=1e-6)
    x1 = randn(2, 3, 6)
    (want,) = onnx_run("Resize", [x1, None, None, np.array([2, 3, 10], np.int64)], mode="linear")
    np.testing.assert_allclose(run("image.resize1d", x1, size=(10,)), want, rtol=1e-6, atol=1e-6)
    x3 = randn(1, 2, 3, 4, 2)
    (want,) = onnx_run(
        "Resize", [x3, None, np.array([1, 1, 1.5, 0.5, 2], np.float32)], mode="cubic"
    )
    y3 = run("image.resize3d", x3, scale=(1.5, 0.5, 2.0), method="cubic")
    np.testing.assert_allclose(y3, want, rtol=1e-6, atol=1e-6)
    t = rel("image.resize2d", TensorType((1, 3, Any, 8)), scale=(2.0, 0.5))
    assert t.shape == (1, 3, Any, 4)
    with pytest.raises(OpTypeError, match="antialias"):
        rel(
            "image.resize2d",
            TensorType((1, 3, 4, 8)),
            size=(2, 2),
            method="nearest_neighbor",
            antialias=True,
        )


TORCH_RESIZE = [
    # (torch mode, align_corners, our attrs)
    (
        "nearest",
        None,
        dict(
            method="nearest_neighbor",
            coordinate_transformation_mode="asymmetric",
            rounding_method="floor",
        ),
    ),
    (
        "nearest-exact",
        None,
        dict(
            method="nearest_neighbor",
            coordinate_transformation_mode="half_pixel",
            rounding_method="round_prefer_ceil",
        ),
    ),
    ("bilinear", False, dict(method="linear", coordinate_transformation_mode="half_pixel")),
    ("bilinear", True, dict(method="linear", coordinate_transformation_mode="align_corners")),
    ("bicubic", False, dict(method="cubic", coordinate_transformation_mode="half_pixel")),
    ("bicubic", True, dict(method="cubic", coordinate_transformation_mode="align_corners")),
]


@pytest.mark.parametrize(
    "tmode,align,attrs", TORCH_RESIZE, ids=[f"{m}-{a}" for m, a, _ in TORCH_RESIZE]
)
@pytest.mark.parametrize(
    "target",
    [dict(size=(9, 11)), dict(size=(3, 2)), dict(size=(1, 1)), dict(scale_factor=(1.7, 0.6))],
    ids=str,
)
def test_resize_matches_torch(tmode, align, attrs, target):
    x = randn(2, 3, 5, 6, dtype=np.float64)
    want = F.interpolate(T(x), mode=tmode, align_corners=align, **target).numpy()
    if "size" in target or align:  # align_corners ignores the scale (uses the integer size)
        size = target.get("size") or tuple(
            int(d * s) for d, s in zip(x.shape[2:], target["scale_factor"])
        )
        ours = run("image.resize2d", x, size=size, **attrs)
    else:
        ours = run("image.resize2d", x, scale=target["scale_factor"], **attrs)
    np.testing.assert_allclose(ours, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("tmode,method", [("bilinear", "linear"), ("bicubic", "cubic")])
@pytest.mark.parametrize("size", [(3, 2), (5, 4), (9, 3)])
def test_resize_antialias_matches_torch(tmode, method, size):
    x = randn(1, 2, 10, 7, dtype=np.float64)
    want = F.interpolate(T(x), size=size, mode=tmode, antialias=True, align_corners=False).numpy()
    # PyTorch drops taps outside the image and uses a = -0.5 for antialiased bicubic.
    ours = run(
        "image.resize2d",
        x,
        size=size,
        method=method,
        antialias=True,
        cubic_exclude=1,
        cubic_alpha=-0.5,
    )
    np.testing.assert_allclose(ours, want, rtol=1e-10, atol=1e-10)


def test_resize_1d_3d_match_torch():
    x = randn(2, 3, 7, dtype=np.float64)
    want = F.interpolate(T(x), size=12, mode="linear").numpy()
    ours = run("image.resize1d", x, size=(12,))
    np.testing.assert_allclose(ours, want, rtol=1e-10)
    x = randn(1, 2, 3, 4, 5, dtype=np.float64)
    want = F.interpolate(T(x), size=(5, 3, 8), mode="trilinear", align_corners=True).numpy()
    ours = run("image.resize3d", x, size=(5, 3, 8), coordinate_transformation_mode="align_corners")
    np.testing.assert_allclose(ours, want, rtol=1e-10)


@pytest.mark.parametrize("method", ["bilinear", "nearest_neighbor"])
@pytest.mark.parametrize("size", [(3, 4), (1, 1), (5, 2)])
def test_crop_and_resize_matches_onnx_per_box(method, size):
    x = randn(2, 3, 7, 6)
    boxes = RNG.uniform(-0.2, 1.2, (5, 4)).astype(np.float32)
    boxes[0] = [0.1, 0.2, 0.1, 0.2]
    ind = RNG.integers(0, 2, 5).astype(np.int32)
    y = run(
        "image.crop_and_resize",
        x,
        boxes,
        ind,
        crop_size=size,
        method=method,
        extrapolation_value=-1.0,
    )
    for k, (y1, x1, y2, x2) in enumerate(boxes):
        want = _onnx_resize(
            x[ind[k] : ind[k] + 1],
            sizes=[1, 3, *size],
            roi=[0, 0, y1, x1, 1, 1, y2, x2],
            mode="linear" if method == "bilinear" else "nearest",
            nearest_mode="round_prefer_ceil",
            coordinate_transformation_mode="tf_crop_and_resize",
            extrapolation_value=-1.0,
        )
        np.testing.assert_allclose(y[k], want[0], rtol=1e-6, atol=1e-6)
    yl = run(
        "image.crop_and_resize",
        x.transpose(0, 2, 3, 1),
        boxes,
        ind,
        crop_size=size,
        method=method,
        extrapolation_value=-1.0,
        layout="NHWC",
    )
    np.testing.assert_array_equal(yl, y.transpose(0, 2, 3, 1))


# ---------------------------------------------------------------------------------------------
# grid_sample, affine_grid.

GRID_METHODS = [("bilinear", "linear"), ("nearest", "nearest"), ("bicubic", "cubic")]


@pytest.mark.parametrize("method,onnx_mode", GRID_METHODS)
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_2d_matches_onnx(method, onnx_mode, padding_mode, align):
    x = randn(2, 3, 5, 6)
    grid = (RNG.random((2, 4, 7, 2)) * 2.8 - 1.4).astype(np.float32)
    y = run(
        "image.grid_sample", x, grid, method=method, padding_mode=padding_mode, align_corners=align
    )
    if not (method == "bicubic" and padding_mode == "border"):
        (want,) = onnx_run(
            "GridSample",
            [x, grid],
            mode=onnx_mode,
            padding_mode=padding_mode,
            align_corners=int(align),
        )
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    # onnx.reference clamps bicubic coordinates before taking taps; onnxruntime (and PyTorch)
    # clamp each tap.
    (want,) = ort_run(
        "GridSample",
        [x, grid],
        opset=20,
        mode=onnx_mode,
        padding_mode=padding_mode,
        align_corners=int(align),
    )
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("method,onnx_mode", GRID_METHODS[:2])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_3d_matches_onnx(method, onnx_mode, padding_mode):
    x = randn(1, 2, 3, 4, 5)
    grid = (RNG.random((1, 2, 3, 4, 3)) * 2.6 - 1.3).astype(np.float32)
    (want,) = onnx_run("GridSample", [x, grid], mode=onnx_mode, padding_mode=padding_mode)
    y = run("image.grid_sample", x, grid, method=method, padding_mode=padding_mode, layout="NCDHW")
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "method,padding_mode",
    [
        *itertools.product(["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"]),
    ],
)
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_matches_torch(method, padding_mode, align):
    x = randn(2, 3, 5, 6, dtype=np.float64)
    grid = RNG.random((2, 4, 7, 2)) * 2.8 - 1.4
    want = F.grid_sample(
        T(x), T(grid), mode=method, padding_mode=padding_mode, align_corners=align
    ).numpy()
    y = run(
        "image.grid_sample", x, grid, method=method, padding_mode=padding_mode, align_corners=align
    )
    np.testing.assert_allclose(y, want, rtol=1e-10, atol=1e-10)
    if method != "bicubic":
        x3 = randn(1, 2, 3, 4, 5, dtype=np.float64)
        g3 = RNG.random((1, 2, 3, 4, 3)) * 2.8 - 1.4
        want = F.grid_sample(
            T(x3), T(g3), mode=method, padding_mode=padding_mode, align_corners=align
        ).numpy()
        y = run(
            "image.grid_sample",
            x3,
            g3,
            method=method,
            padding_mode=padding_mode,
            align_corners=align,
            layout="NCDHW",
        )
        np.testing.assert_allclose(y, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (1, 1, 1, 3), (2, 1, 3, 4, 2)])
def test_affine_grid(align, size):
    nd = len(size) - 2
    theta = randn(size[0], nd, nd + 1)
    y = run("image.affine_grid", theta, size=size, align_corners=align)
    with warnings.catch_warnings():  # torch warns about unit-size grids with align_corners
        warnings.simplefilter("ignore")
        want = F.affine_grid(T(theta), list(size), align_corners=align).numpy()
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    if min(size[2:]) > 1:  # onnx.reference divides by zero for size-1 axes
        (want,) = onnx_run(
            "AffineGrid", [theta, np.array(size, np.int64)], align_corners=int(align)
        )
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    assert rel("image.affine_grid", TensorType(theta.shape), size=size).shape == y.shape


# ---------------------------------------------------------------------------------------------
# Vision.


def _random_rois(k, h, w, spread=3.0):
    xy = RNG.uniform(-spread, max(h, w) + spread, size=(k, 2, 2))
    boxes = np.concatenate([xy.min(1), xy.max(1)], axis=1).astype(np.float32)
    boxes[0] = [1.0, 1.0, 1.0, 1.0]  # degenerate roi
    return boxes


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("ctm", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("sampling_ratio", [0, 1, 2])
def test_roi_align_matches_onnx(mode, ctm, sampling_ratio):
    x = randn(2, 3, 10, 12)
    rois = _random_rois(6, 10, 12)
    batch = RNG.integers(0, 2, 6).astype(np.int64)
    attrs = dict(
        output_height=3,
        output_width=4,
        sampling_ratio=sampling_ratio,
        spatial_scale=0.7,
        mode=mode,
        coordinate_transformation_mode=ctm,
    )
    (want,) = onnx_run("RoiAlign", [x, rois, batch], **attrs)
    y = run(
        "vision.roi_align",
        x,
        rois,
        batch,
        pooled_size=(3, 4),
        spatial_scale=0.7,
        sample_ratio=sampling_ratio,
        mode=mode,
        coordinate_transformation_mode=ctm,
    )
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    if mode == "avg":
        (want,) = ort_run("RoiAlign", [x, rois, batch], opset=16, **attrs)
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    # The (K, 5) form with the batch index in column 0, and channel-last data.
    rois5 = np.concatenate([batch[:, None].astype(np.float32), rois], 1)
    y5 = run(
        "vision.roi_align",
        x.transpose(0, 2, 3, 1),
        rois5,
        pooled_size=(3, 4),
        spatial_scale=0.7,
        sample_ratio=sampling_ratio,
        mode=mode,
        coordinate_transformation_mode=ctm,
        layout="NHWC",
    )
    np.testing.assert_allclose(y5, y.transpose(0, 2, 3, 1), rtol=1e-6)


def test_roi_pool_matches_onnxruntime():
    x = randn(2, 3, 10, 12)
    rois = _random_rois(7, 10, 12, spread=4.0)
    batch = RNG.integers(0, 2, (7, 1)).astype(np.float32)
    rois5 = np.concatenate([batch, rois], 1)
    (want,) = ort_run("MaxRoiPool", [x, rois5], opset=16, pooled_shape=[3, 2], spatial_scale=0.6)
    y = run("vision.roi_pool", x, rois5, pooled_size=(3, 2), spatial_scale=0.6)
    np.testing.assert_array_equal(y, want)
    t = rel("vision.roi_pool", TensorType((2, 3, 10, 12)), TensorType((Any, 5)), pooled_size=(3, 2))
    assert t.shape == (Any, 3, 3, 2)


def _nms_inputs(center, b=2, c=3, n=30):
    if center:
        boxes = np.concatenate([RNG.uniform(0, 10, (b, n, 2)), RNG.uniform(0.5, 5, (b, n, 2))], -1)
    else:
        boxes = RNG.uniform(0, 10, (b, n, 4))  # corners in any order
    scores = RNG.random((b, c, n))
    scores[0, 0, :5] = 0.5  # ties break by box index
    return boxes.astype(np.float32), scores.astype(np.float32)


@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize(
    "max_out,iou,score",
    [(5, 0.3, None), (100, 0.5, 0.4), (2, 0.0, 0.9), (0, 0.5, None), (30, 1.0, 0.1)],
)
def test_nms_matches_onnx(center, max_out, iou, score):
    boxes, scores = _nms_inputs(center)
    extra = [np.array([max_out], np.int64), np.array([iou], np.float32)]
    if score is not None:
        extra.append(np.array([score], np.float32))
    (want,) = onnx_run("NonMaxSuppression", [boxes, scores, *extra], center_point_box=center)
    y = run("vision.non_max_suppression", boxes, scores, *extra, center_point_box=center)
    np.testing.assert_array_equal(y, want)
    (want_rt,) = ort_run("NonMaxSuppression", [boxes, scores, *extra], center_point_box=center)
    np.testing.assert_array_equal(y, want_rt)
    # The same thresholds as attributes.
    y2 = run(
        "vision.non_max_suppression",
        boxes,
        scores,
        max_output_boxes_per_class=max_out,
        iou_threshold=float(np.float32(iou)),
        score_threshold=None if score is None else float(np.float32(score)),
        center_point_box=center,
    )
    np.testing.assert_array_equal(y2, want)


def test_nms_type_relation():
    op = lookup("vision.non_max_suppression")
    assert op.data_dependent_shape
    t = rel("vision.non_max_suppression", TensorType((1, Any, 4)), TensorType((1, 3, Any)))
    assert t == TensorType((Any, 3), "int64")
    with pytest.raises(OpTypeError, match="box counts differ"):
        rel("vision.non_max_suppression", TensorType((1, 5, 4)), TensorType((1, 3, 6)))
