"""Artifacts carry each constant once, in the layout the kernels read: `weights.bin` is about the
model's own weight bytes (prepacked copies replace the originals instead of sitting beside them).
The one layout that is larger by construction, Winograd F(2x2, 3x3)'s transformed weights (4x4
per 3x3 kernel: 16/9) for 3x3 stride-1 convolutions, is derived at load time, not stored
(backend/derived.py)."""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import relay_core
import relay_import


def _conv_net(winograd: bool) -> tuple[onnx.ModelProto, int, int]:
    """A small conv net with random weights: (model, weight bytes, bytes of the weights of
    3x3 stride-1 convolutions)."""
    rng = np.random.default_rng(0)
    inits, nodes = [], []
    total = wino = 0

    def weight(name, shape):
        nonlocal total
        a = (rng.standard_normal(shape) * 0.1).astype(np.float32)
        inits.append(numpy_helper.from_array(a, name))
        total += a.nbytes
        return a

    def conv(x, y, cin, cout, k, stride, group=1):
        nonlocal wino
        w = weight(f"{y}_w", (cout, cin // group, k, k))
        weight(f"{y}_b", (cout,))
        if k == 3 and stride == 1 and group == 1:
            wino += w.nbytes
        nodes.append(
            helper.make_node(
                "Conv",
                [x, f"{y}_w", f"{y}_b"],
                [f"{y}_c"],
                kernel_shape=[k, k],
                strides=[stride, stride],
                pads=[k // 2] * 4,
                group=group,
            )
        )
        nodes.append(helper.make_node("Relu", [f"{y}_c"], [y]))

    conv("x", "a", 3, 32, 3, 2)  # stem
    conv("a", "b", 32, 64, 1, 1)  # pointwise
    conv("b", "c", 64, 64, 3, 1, group=64)  # depthwise
    conv("c", "d", 64, 64, 3, 2)  # strided 3x3
    last = "d"
    if winograd:
        conv("d", "e", 64, 64, 3, 1)
        last = "e"
    nodes.append(helper.make_node("GlobalAveragePool", [last], ["g"]))
    nodes.append(helper.make_node("Flatten", ["g"], ["f"]))
    weight("fc_w", (10, 64))
    weight("fc_b", (10,))
    nodes.append(helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["y"], transB=1))
    graph = helper.make_graph(
        nodes,
        "net",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, total, wino


def _weights_bin(model, tmp_path) -> int:
    path = os.path.join(tmp_path, "net.onnx")
    onnx.save(model, path)
    mod = relay_import.from_onnx(path)
    lib = relay_core.build(mod)
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)
    want = np.asarray(relay_core.evaluate(mod, x))
    np.testing.assert_allclose(np.asarray(lib(x)[0]), want, rtol=1e-4, atol=1e-4)
    return os.path.getsize(os.path.join(lib.path, "weights.bin"))


def test_weights_bin_holds_each_constant_once(tmp_path):
    model, total, _ = _conv_net(winograd=False)
    assert _weights_bin(model, tmp_path) <= 1.05 * total


def test_weights_bin_with_a_winograd_convolution(tmp_path):
    model, total, wino = _conv_net(winograd=True)
    assert wino > 0
    assert _weights_bin(model, tmp_path) <= 1.05 * total
