"""verify: parity against onnxruntime, and localisation of a planted wrong converter."""

from __future__ import annotations

from pathlib import Path

import pytest

import relay_import as ri
from tests.require import require

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo_cnn.onnx"
TARGET = "/layer2/Relu_1"  # the second Relu of block 2: mid-network


def _sign_flipping_relu(ctx, x):
    out = ctx.call("nn.relu", x)
    if ctx.node_name == TARGET:  # the planted bug: one node computes -relu(x)
        out = ctx.call("negative", out)
    return out


@pytest.mark.parametrize("compiled", [False, True], ids=["interpreter", "compiled"])
def test_verify_parity_on_demo_model(compiled):
    report = ri.verify(str(DEMO), compiled=compiled)
    assert report.ok, report.summary()
    assert report.outputs[0].name == "probs"
    assert report.first_divergence is None


@pytest.mark.parametrize("compiled", [False, True], ids=["interpreter", "compiled"])
def test_verify_names_the_planted_wrong_node(compiled, tmp_path):
    html = tmp_path / "report.html"
    report = ri.verify(
        str(DEMO),
        compiled=compiled,
        custom_convert_map={"Relu": _sign_flipping_relu},
        html=str(html),
    )
    assert not report.ok
    fd = report.first_divergence
    assert fd is not None, report.summary()
    assert fd.node == TARGET and fd.op == "Relu"
    # every layer before it agrees with onnxruntime
    assert all(ld.diff.ok for ld in report.layers[: fd.index])
    assert TARGET in report.summary()
    text = html.read_text()
    assert TARGET in text and "<svg class='plot'" in text and "<svg class='graph'" in text


def test_verify_with_given_inputs_and_wrong_names():
    import numpy as np

    x = np.zeros((1, 3, 32, 32), "float32")
    assert ri.verify(str(DEMO), inputs={"image": x}, compiled=False).ok
    with pytest.raises(ri_errors().InputError, match="image"):
        ri.verify(str(DEMO), inputs={"img": x}, compiled=False)


def ri_errors():
    import relay_core.errors

    return relay_core.errors


def _negated_relu(ctx, x, *rest, **kw):
    return ctx.call("negative", ctx.call("nn.relu", x))


def test_verify_pytorch_localises_planted_node():
    torch = require("torch")

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c = torch.nn.Conv2d(3, 4, 3)
            self.l = torch.nn.Linear(4 * 6 * 6, 5)

        def forward(self, x):
            return torch.softmax(self.l(torch.relu(self.c(x)).flatten(1)), -1)

    torch.manual_seed(0)
    m = M().eval()
    x = torch.randn(1, 3, 8, 8)
    assert ri.verify(m, example_inputs=(x,), compiled=False).ok
    r = ri.verify(
        m,
        example_inputs=(x,),
        compiled=False,
        custom_convert_map={"aten.relu.default": _negated_relu},
    )
    assert not r.ok and r.first_divergence is not None
    assert r.first_divergence.op == "aten.relu.default"


def test_verify_tensorflow_localises_planted_node():
    keras = require("keras")
    m = keras.Sequential(
        [
            keras.Input((8, 8, 3)),
            keras.layers.Conv2D(4, 3, activation="relu"),
            keras.layers.Flatten(),
            keras.layers.Dense(5, activation="softmax"),
        ]
    )
    assert ri.verify(m, compiled=False).ok
    r = ri.verify(m, compiled=False, custom_convert_map={"Relu": _negated_relu})
    assert not r.ok and r.first_divergence is not None
    assert r.first_divergence.op == "Relu" and r.first_divergence.node.endswith("/Relu")
