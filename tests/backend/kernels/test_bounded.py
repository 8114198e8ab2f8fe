"""Bounded-output kernels (data-dependent output shapes) against the op registry's refs."""

from __future__ import annotations

import numpy as np
import pytest

from relay_core.backend.kernels import bounded
from relay_core.ir import TensorType
from relay_core.ops import all_ops
from tools.kernel_jit import KernelModule

rng = np.random.default_rng(8)


# The bounded kernels and their output bounds (see relay_core/backend/kernels/bounded.py).
BOUNDED = {
    "vision.non_max_suppression": (bounded.nms_bound, bounded.emit_nms),
    "nonzero": (bounded.nonzero_bound, bounded.emit_nonzero(False)),
    "argwhere": (bounded.argwhere_bound, bounded.emit_nonzero(True)),
}


def _run(op, cases):
    opdef = all_ops()[op]
    bound, emit = BOUNDED[op]
    km = KernelModule()
    ks = []
    for inputs, attrs in cases:
        a = opdef.make_attrs(**attrs)
        in_types = [TensorType(x.shape, str(x.dtype)) for x in inputs]
        ks.append(km.add(emit, in_types, [bound(in_types, a), TensorType((), "int64")], a))
    km.compile()
    for k, (inputs, attrs) in zip(ks, cases):
        out, count = k(*inputs)
        want = opdef.ref(list(inputs), opdef.make_attrs(**attrs))
        dyn = 1 if op == "nonzero" else 0  # the dynamic dimension
        shape = list(out.shape)
        shape[dyn] = int(count)
        got = out.reshape(-1)[: int(np.prod(shape))].reshape(shape)
        assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape)
        np.testing.assert_array_equal(got, want)


def _boxes(b, n, center, dtype):
    xy = rng.uniform(0, 10, size=(b, n, 2, 2))
    if center:
        boxes = np.concatenate([xy[:, :, 0], rng.uniform(0.5, 4, (b, n, 2))], -1)
    else:
        boxes = xy.reshape(b, n, 4)
    return boxes.astype(dtype)


@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nms(center, dtype):
    cases = []
    for b, c, n, max_out, iou, score in [
        (2, 3, 12, 5, 0.3, None),
        (1, 1, 50, 50, 0.5, 0.2),
        (3, 2, 7, 0, 0.3, None),
        (1, 4, 30, 3, 0.0, 0.9),
        (2, 2, 1, 10, 0.5, None),
    ]:
        boxes = _boxes(b, n, center, dtype)
        scores = rng.random((b, c, n)).astype(dtype)
        scores[0, 0, : min(4, n)] = 0.5  # ties resolve by index
        attrs = dict(max_output_boxes_per_class=max_out, iou_threshold=iou, center_point_box=center)
        if score is not None:
            attrs["score_threshold"] = score
        cases.append(([boxes, scores], attrs))
    # thresholds given as tensors override the attributes
    boxes = _boxes(2, 20, center, dtype)
    scores = rng.random((2, 2, 20)).astype(dtype)
    cases.append(
        (
            [
                boxes,
                scores,
                np.array([4], np.int64),
                np.array([0.4], np.float32),
                np.array([0.3], np.float32),
            ],
            dict(center_point_box=center),
        )
    )
    _run("vision.non_max_suppression", cases)


def test_nms_samples():
    op = all_ops()["vision.non_max_suppression"]
    cases = [(s.inputs, s.attrs) for s in op.samples(np.random.default_rng(0))]
    _run("vision.non_max_suppression", cases)


@pytest.mark.parametrize("op", ["nonzero", "argwhere"])
def test_nonzero(op):
    opdef = all_ops()[op]
    cases = [(s.inputs, s.attrs) for s in opdef.samples(np.random.default_rng(0))]
    x = rng.standard_normal((5, 6, 7)).astype(np.float32)
    x[x < 0.3] = 0
    x[0, 0, 0] = np.nan
    cases += [([x], {}), ([x > 0], {}), ([np.nan_to_num(x * 3).astype(np.int8)], {})]
    _run(op, cases)
