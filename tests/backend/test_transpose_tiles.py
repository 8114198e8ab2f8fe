"""Transposes (with fused elementwise work and reshapes) whose loop nests are tiled
(loop_nest.tile_transpose): tiles of 16 or 8 on both sides, extents that are not multiples
(untiled), 2-D to 4-D permutations, static and run-time batches; compiled, against
onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from tests.require import require

onnx = require("onnx")
ort = require("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import relay_import as ri  # noqa: E402

rng = np.random.default_rng(11)


def _model(shape, perm, tail, dynamic, reshape=None):
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=list(perm))]
    inits = []
    last = "t"
    if tail == "gelu":
        nodes.append(helper.make_node("Gelu", [last], ["g"], domain="", approximate="none"))
        last = "g"
    elif tail == "add":
        bshape = [shape[p] for p in perm]
        bshape[0] = 1
        inits.append(numpy_helper.from_array(rng.normal(size=bshape).astype(np.float32), "b"))
        nodes.append(helper.make_node("Add", [last, "b"], ["g"]))
        last = "g"
    if reshape is not None:
        inits.append(numpy_helper.from_array(np.array(reshape, np.int64), "s"))
        nodes.append(helper.make_node("Reshape", [last, "s"], ["r"]))
        last = "r"
    nodes.append(helper.make_node("Identity", [last], ["y"]))
    in_shape = ["N", *shape[1:]] if dynamic else list(shape)
    rank = len(reshape) if reshape is not None else len(shape)
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [f"d{k}" for k in range(rank)])],
        inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])


CASES = [
    # shape, perm, reshape of the result
    ((2, 3136, 64), (0, 2, 1), (0, 64, 56, 56)),  # PVTv2: tokens -> channels x plane
    ((2, 64, 56, 56), (0, 2, 3, 1), (0, 3136, 64)),  # and back
    ((3, 48, 40), (0, 2, 1), None),  # tiles of 8 only
    ((2, 50, 36), (0, 2, 1), None),  # neither 16 nor 8 divides both: untiled
    ((1, 16, 32), (0, 2, 1), None),  # one tile on a side: untiled
    ((2, 32, 24, 40), (0, 3, 1, 2), None),  # NHWC -> NCHW
    ((2, 24, 4, 64), (0, 2, 3, 1), None),
    ((96, 80), (1, 0), None),
]


# the batch unknown too, where there is a batch axis
PARAMS = [
    (k, dyn) for k, c in enumerate(CASES) for dyn in (False, True) if len(c[0]) > 2 or not dyn
]


@pytest.mark.parametrize("tail", ["none", "gelu", "add"])
@pytest.mark.parametrize("case,dynamic", PARAMS)
def test_transpose_matches_onnxruntime(case, dynamic, tail):
    shape, perm, reshape = CASES[case]
    model = _model(shape, perm, tail, dynamic, reshape)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    lib = ri.compile(ri.load(model))
    batches = (shape[0], 1, 5) if dynamic else (shape[0],)
    for n in batches:
        x = rng.normal(size=(n, *shape[1:])).astype(np.float32)
        want = sess.run(None, {"x": x})[0]
        got = np.asarray(lib(x)).reshape(want.shape)
        if tail == "none":
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)
