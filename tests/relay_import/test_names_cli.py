"""Names survive: framework output names and symbolic dimension names are kept through
conversion, the text format and export (the manifest), for ONNX, PyTorch and Keras."""

from __future__ import annotations

import json
import re

import pytest

from .clirun import names_model, python, relay


def test_onnx_names_through_text_and_artifact(tmp_path):
    model = names_model(tmp_path / "names.onnx")
    text_file = tmp_path / "names.relay"
    relay("convert", model, "-o", text_file, "-q")
    text = text_file.read_text()
    assert "%input_1: Tensor[(batch, 4), float32]" in text
    assert 'output_names=["probs", "logits"]' in text and 'input_names=["input.1"]' in text
    # compiled from the text alone: the names come back from it
    art = tmp_path / "names.relaylib"
    relay("compile", text_file, "-o", art, "-q")
    m = json.loads((art / "manifest.json").read_text())
    assert [(i["name"], i["shape"]) for i in m["inputs"]] == [("input.1", ["batch", 4])]
    assert [(o["name"], o["shape"]) for o in m["outputs"]] == [
        ("probs", ["batch", 3]),
        ("logits", ["batch", 3]),
    ]
    out = relay("inspect", model).stdout
    assert "input.1: Tensor[(batch, 4), float32]" in out and "probs: Tensor[(batch, 3)" in out


@pytest.mark.slow
def test_torch_dim_and_output_names(tmp_path):
    code = """
import json, re, sys, torch
import relay_import as ri

class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
    def forward(self, x):
        y = self.fc(x)
        return {"probs": y.softmax(-1), "logits": y}

batch = torch.export.Dim("batch", min=1, max=64)
ep = torch.export.export(Head().eval(), (torch.randn(2, 4),), dynamic_shapes={"x": {0: batch}})
mod = ri.load(ep)
text = str(mod)
lib = ri.compile(mod)
lib.export(sys.argv[1])
print(json.dumps({
    "text": text,
    "inputs": [(i.name, i.shape) for i in lib.get_inputs()],
    "outputs": [(o.name, o.shape) for o in lib.get_outputs()],
}))
"""
    art = tmp_path / "head.relaylib"
    out = json.loads(python(code, art).stdout.splitlines()[-1])
    assert "Tensor[(batch, 4), float32]" in out["text"]
    assert not re.search(r"\bs\d+\b", out["text"]), out["text"]  # no torch symbol names
    assert 'output_names=["probs", "logits"]' in out["text"]
    assert out["inputs"] == [["x", ["batch", 4]]]
    assert out["outputs"] == [["probs", ["batch", 3]], ["logits", ["batch", 3]]]
    m = json.loads((art / "manifest.json").read_text())
    assert [o["name"] for o in m["outputs"]] == ["probs", "logits"]


@pytest.mark.slow
def test_keras_output_name(tmp_path):
    code = """
import sys, keras
inp = keras.Input((4,), name="features")
h = keras.layers.Dense(8, activation="relu")(inp)
out = keras.layers.Dense(3, activation="softmax", name="probs")(h)
keras.Model(inp, out).save(sys.argv[1])
"""
    path = tmp_path / "clf.keras"
    python(code, path)
    out = relay("inspect", path).stdout
    assert re.search(r"^  probs: Tensor\[\(batch, 3\), float32\]", out, re.M), out
    art = tmp_path / "clf.relaylib"
    relay("compile", path, "-o", art, "-q")
    m = json.loads((art / "manifest.json").read_text())
    assert [o["name"] for o in m["outputs"]] == ["probs"]
    assert [i["name"] for i in m["inputs"]] == ["features"]
    assert "PARITY" in relay("verify", path).stdout
