"""A 1x1 convolution of a 1x1 plane (the classifier head of MobileNetV3 / V4, LCNet, HGNetV2
after global pooling) runs as a dense layer; its fused epilogue (bias, activation, a residual
read per channel, a per-channel scale) must see each channel's own index. Compiled with the
batch unknown, against onnxruntime at several batch sizes."""

from __future__ import annotations

import numpy as np
import pytest

from tests.require import require

onnx = require("onnx")
ort = require("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import relay_import as ri  # noqa: E402

rng = np.random.default_rng(5)


def _const(name, a):
    return numpy_helper.from_array(np.asarray(a, np.float32), name)


def _head(c, o, tail):
    """x (N, c, h, w) -> GlobalAveragePool -> Conv 1x1 (bias) -> `tail` nodes -> y."""
    nodes = [
        helper.make_node("GlobalAveragePool", ["x"], ["p"]),
        helper.make_node("Conv", ["p", "W", "B"], ["c"], kernel_shape=[1, 1]),
        *tail,
    ]
    inits = [
        _const("W", rng.normal(size=(o, c, 1, 1)) / np.sqrt(c)),
        _const("B", rng.normal(size=(o,))),
        _const("S", rng.uniform(0.5, 2.0, size=(1, o, 1, 1))),
        _const("R", rng.normal(size=(1, o, 1, 1))),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", c, 7, 7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", o, 1, 1])],
        inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


TAILS = {
    "relu": [helper.make_node("Relu", ["c"], ["y"])],
    "hardswish": [helper.make_node("HardSwish", ["c"], ["y"])],
    "scale_shift": [
        helper.make_node("Mul", ["c", "S"], ["m"]),
        helper.make_node("Add", ["m", "R"], ["y"]),
    ],
    "residual": [  # the pooled input read back per channel (c == o)
        helper.make_node("Add", ["c", "p"], ["a"]),
        helper.make_node("Sigmoid", ["a"], ["y"]),
    ],
}


@pytest.mark.parametrize("tail", sorted(TAILS))
@pytest.mark.parametrize("c,o", [(96, 96), (64, 131)])
def test_head_matches_onnxruntime(tail, c, o):
    if tail == "residual" and c != o:
        o = c
    model = _head(c, o, TAILS[tail])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    lib = ri.compile(ri.load(model))
    for n in (1, 3, 8, 11):
        x = rng.normal(size=(n, c, 7, 7)).astype(np.float32)
        want = sess.run(None, {"x": x})[0]
        got = np.asarray(lib(x)).reshape(want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
