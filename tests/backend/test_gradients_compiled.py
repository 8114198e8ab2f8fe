"""Gradients compiled end to end: relay_core.gradient of a loss through an op, built by the
backend, against the interpreter on the same module."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
from relay_core.ir import Constant, Function, IRModule, TensorType, Var, call
from relay_core.ir import dtype as dt


def _rois(rng, k, n, dtype, reversed_some=False):
    xy = rng.uniform(-2, 10, size=(k, 2, 2))
    boxes = np.concatenate([xy.min(1), xy.max(1)], 1)
    if reversed_some:  # x2 < x1 / y2 < y1: empty (half_pixel) or 1x1 (output_half_pixel) rois
        boxes[::2] = boxes[::2][:, [2, 3, 0, 1]]
    batch = rng.integers(0, n, size=k)
    return boxes.astype(dtype), batch


CASES = {
    "roi_align_avg": ("vision.roi_align", {"pooled_size": (3, 2), "spatial_scale": 0.8}, 5),
    "roi_align_max": (
        "vision.roi_align",
        {"pooled_size": (3, 2), "spatial_scale": 0.8, "mode": "max", "sample_ratio": 2},
        5,
    ),
    "roi_align_max_adaptive_nhwc": (
        "vision.roi_align",
        {"pooled_size": (2, 2), "mode": "max", "layout": "NHWC"},
        5,
    ),
    "roi_align_output_half_pixel_indices": (
        "vision.roi_align",
        {"pooled_size": (2, 3), "coordinate_transformation_mode": "output_half_pixel"},
        4,
    ),
    "roi_pool": ("vision.roi_pool", {"pooled_size": (3, 2), "spatial_scale": 0.8}, 5),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_roi_gradient_compiled(case, dtype):
    op, attrs, ncol = CASES[case]
    rng = np.random.default_rng(3)
    n, c, h, w = 2, 3, 9, 8
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    if attrs.get("mode") == "max" or op == "vision.roi_pool":
        x = np.round(x * 1.5)  # plateaus: ties go to the first maximum, as in the reference
    if attrs.get("layout") == "NHWC":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    boxes, batch = _rois(rng, 6, n, dtype, reversed_some=True)
    d = Var("d", TensorType(x.shape, dtype))
    if ncol == 5:
        rois = np.concatenate([batch[:, None].astype(dtype), boxes], 1)
        r = Var("r", TensorType(rois.shape, dtype))
        y = call(op, d, r, **attrs)
    else:
        rois = boxes
        r = Var("r", TensorType(rois.shape, dtype))
        y = call(op, d, r, Constant(batch.astype(np.int64)), **attrs)
    out_t = relay_core.infer_type(IRModule.from_expr(Function((d, r), y)))["main"].body.checked_type
    weights = rng.uniform(0.5, 1.5, [int(s) for s in out_t.shape]).astype(dt.to_numpy(dtype))
    mod = IRModule.from_expr(Function((d, r), call("sum", call("multiply", y, Constant(weights)))))
    g = relay_core.infer_type(relay_core.gradient(mod, "first_order"))

    loss, (gx, grois) = relay_core.evaluate(g, x, rois)
    got = relay_core.build(g)(x, rois)
    assert len(got) == 3
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == "float32" else {"rtol": 1e-9, "atol": 1e-9}
    np.testing.assert_allclose(got[0], np.asarray(loss), **tol)
    for name, a, b in (("d data", got[1], gx), ("d rois", got[2], grois)):
        b = np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, name
        np.testing.assert_allclose(a, b, err_msg=f"{case} {name}", **tol)
    assert np.abs(np.asarray(gx)).sum() > 0  # the rois do cover some pixels
    if op == "vision.roi_align":
        assert np.abs(np.asarray(grois)).sum() > 0
