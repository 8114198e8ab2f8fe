"""roi_align / roi_pool / crop_and_resize kernels against the op registry's references and
onnxruntime's RoiAlign."""

from __future__ import annotations

import numpy as np
import pytest

from relay_core.ir import TensorType
from relay_core.ops import all_ops
from tests.require import require

from .helpers import assert_close, index_epilogue, index_expected, run_batch

rng = np.random.default_rng(7)


def _boxes(k, h, w, scale=1.0):
    ys = rng.uniform(-2, h / scale + 2, (k, 2))
    xs = rng.uniform(-2, w / scale + 2, (k, 2))
    return np.stack([xs.min(1), ys.min(1), xs.max(1), ys.max(1)], 1).astype(np.float32)


def _case(op, inputs, attrs, epilogue=None, nthreads=2):
    opdef = all_ops()[op]
    a = opdef.make_attrs(**attrs)
    t = opdef.type_rel([TensorType(x.shape, str(x.dtype)) for x in inputs], a)
    want = opdef.ref(inputs, a)
    return dict(
        inputs=inputs,
        out_shape=t.shape,
        out_dtype=t.dtype,
        attrs=a,
        epilogue=epilogue,
        nthreads=nthreads,
    ), want


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_roi_align(layout, dtype):
    cases = []
    for mode in ("avg", "max"):
        for ctm in ("half_pixel", "output_half_pixel"):
            for ratio, pooled, scale in ((0, (3, 2), 0.5), (2, (7, 7), 0.25), (1, (1, 1), 1.0)):
                x = rng.standard_normal((2, 5, 20, 17)).astype(dtype)
                if layout == "NHWC":
                    x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
                boxes = _boxes(6, 20, 17, scale).astype(dtype)
                batch = rng.integers(0, 2, 6).astype(np.int64)
                attrs = dict(
                    layout=layout,
                    pooled_size=pooled,
                    spatial_scale=scale,
                    sample_ratio=ratio,
                    mode=mode,
                    coordinate_transformation_mode=ctm,
                )
                cases.append(_case("vision.roi_align", [x, boxes, batch], attrs))
                rois5 = np.concatenate([batch[:, None].astype(dtype), boxes], 1)
                cases.append(_case("vision.roi_align", [x, rois5], attrs))
    for (_c, want), y in zip(cases, run_batch("vision.roi_align", [c for c, _ in cases])):
        assert_close(y, want, rtol=1e-5, atol=1e-6)


def test_roi_align_matches_onnxruntime():
    ort = require("onnxruntime")
    from onnx import TensorProto, helper

    x = rng.standard_normal((2, 3, 16, 12)).astype(np.float32)
    boxes = _boxes(5, 16, 12, 0.5)
    batch = rng.integers(0, 2, 5).astype(np.int64)
    node = helper.make_node(
        "RoiAlign",
        ["x", "r", "b"],
        ["y"],
        output_height=4,
        output_width=3,
        sampling_ratio=2,
        spatial_scale=0.5,
        mode="avg",
        coordinate_transformation_mode="half_pixel",
    )
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
            helper.make_tensor_value_info("r", TensorProto.FLOAT, boxes.shape),
            helper.make_tensor_value_info("b", TensorProto.INT64, batch.shape),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {"x": x, "r": boxes, "b": batch})
    attrs = dict(pooled_size=(4, 3), spatial_scale=0.5, sample_ratio=2)
    c, _ = _case("vision.roi_align", [x, boxes, batch], attrs)
    (y,) = run_batch("vision.roi_align", [c])
    assert_close(y, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_roi_pool(layout):
    cases = []
    for pooled, scale in (((3, 2), 0.5), ((7, 7), 0.25), ((1, 1), 1.0), ((4, 5), 0.0625)):
        x = rng.standard_normal((2, 4, 18, 15)).astype(np.float32)
        if layout == "NHWC":
            x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        boxes = _boxes(7, 18, 15, scale)
        batch = rng.integers(0, 2, 7).astype(np.float32)
        rois5 = np.concatenate([batch[:, None], boxes], 1)
        attrs = dict(layout=layout, pooled_size=pooled, spatial_scale=scale)
        cases.append(_case("vision.roi_pool", [x, rois5], attrs))
    wts = (0.5, 0.25, 0.125, 0.0625)
    c, want = _case("vision.roi_pool", cases[0][0]["inputs"], dict(cases[0][0]["attrs"].__dict__))
    c["epilogue"] = index_epilogue(wts)
    cases.append((c, index_expected(want, wts)))
    for (_c, want), y in zip(cases, run_batch("vision.roi_pool", [c for c, _ in cases])):
        assert_close(y, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("method", ["bilinear", "nearest_neighbor"])
def test_crop_and_resize(layout, method):
    cases = []
    for size, dtype in (
        ((5, 4), "float32"),
        ((1, 1), "float32"),
        ((7, 3), "uint8"),
        ((1, 6), "float64"),
    ):
        x = rng.standard_normal((3, 2, 13, 11))
        x = (x * 50 + 100).astype(dtype) if dtype == "uint8" else x.astype(dtype)
        if layout == "NHWC":
            x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        boxes = rng.uniform(-0.3, 1.3, (6, 4)).astype(np.float32)
        ind = rng.integers(0, 3, 6).astype(np.int32)
        attrs = dict(crop_size=size, layout=layout, method=method, extrapolation_value=-2.0)
        if dtype == "uint8":
            attrs["out_dtype"] = "float32"
        cases.append(_case("image.crop_and_resize", [x, boxes, ind], attrs))
    for (_c, want), y in zip(cases, run_batch("image.crop_and_resize", [c for c, _ in cases])):
        assert y.dtype == want.dtype
        assert_close(y, want, rtol=1e-6, atol=1e-6)
