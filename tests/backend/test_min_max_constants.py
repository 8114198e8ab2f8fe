"""max / min against a constant (ReLU, Clip, Max with a constant), compiled, against
onnxruntime bit for bit: NaN passes through, -0 keeps its sign, infinities clamp. These lower
to x86's maxps / minps with the constant first (not llvm.maximum, whose select against the
operand LLVM turns into a masked store in in-place epilogues); vectors of 8 and 16 lanes, the
scalar tail, float64, and the epilogue of a bias-free convolution (in place) are covered."""

from __future__ import annotations

import numpy as np
import pytest

from tests.require import require

onnx = require("onnx")
ort = require("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import relay_import as ri  # noqa: E402

SPECIAL = [np.nan, -0.0, 0.0, -1.5, 2.0, np.inf, -np.inf, 7.0, 5.5, -np.nan, 6.0, 1e-40]


def _run_both(model, x):
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    got = np.asarray(ri.compile(ri.load(model))(x)).reshape(want.shape)
    return got, want


def _same_bits(got, want):
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok])
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))


def _model(nodes, inits, shape, dtype, out_shape=None):
    t = TensorProto.DOUBLE if dtype == np.float64 else TensorProto.FLOAT
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", t, shape)],
        [helper.make_tensor_value_info("y", t, out_shape or shape)],
        inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


CASES = {
    "relu": lambda dt: ([helper.make_node("Relu", ["x"], ["y"])], []),
    "clip": lambda dt: (
        [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])],
        [numpy_helper.from_array(dt(0), "lo"), numpy_helper.from_array(dt(6), "hi")],
    ),
    "max_const": lambda dt: (
        [helper.make_node("Max", ["x", "k"], ["y"])],
        [numpy_helper.from_array(np.array([-0.5], dt), "k")],
    ),
    "min_const": lambda dt: (
        [helper.make_node("Min", ["x", "k"], ["y"])],
        [numpy_helper.from_array(np.array([3.0], dt), "k")],
    ),
    "add_relu": lambda dt: (
        [helper.make_node("Add", ["x", "x"], ["a"]), helper.make_node("Relu", ["a"], ["y"])],
        [],
    ),
}


@pytest.mark.parametrize("n", [37, 16 * 9 + 5])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", sorted(CASES))
def test_min_max_against_a_constant_keep_nan_and_zero_sign(case, dtype, n):
    x = np.resize(np.array(SPECIAL, dtype), (3, n))
    nodes, inits = CASES[case](dtype)
    got, want = _run_both(_model(nodes, inits, [3, n], dtype), x)
    _same_bits(got, want)


@pytest.mark.parametrize("act", ["Relu", "Clip"])
def test_bias_free_convolution_with_relu_or_clip(act):
    """The stem of SqueezeNet (zero biases, dropped): the activation is the in-place epilogue."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((16, 3, 3, 3)).astype(np.float32) * 0.3
    x = rng.standard_normal((2, 3, 33, 33)).astype(np.float32)
    x[0, 1, 5, 7] = np.nan
    x[1, 2, 20, 3] = np.inf
    inits = [numpy_helper.from_array(w, "w")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], strides=[2, 2])]
    if act == "Relu":
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    else:
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["y"]))
        inits += [numpy_helper.from_array(np.float32(0), "lo")]
        inits += [numpy_helper.from_array(np.float32(6), "hi")]
    got, want = _run_both(_model(nodes, inits, list(x.shape), np.float32, [2, 16, 16, 16]), x)
    assert np.isnan(want).any() and (want == 0).any()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-5, atol=1e-5)
