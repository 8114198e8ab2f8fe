"""The compiled module speaks onnxruntime's dialect: code written for an InferenceSession runs
unchanged on it, and gets the same names, shapes, types and values."""

from __future__ import annotations

import json

import numpy as np
import pytest

import relay_import as ri
from relay_core.errors import InputError

from .clirun import names_model, python, relay

# A user's script, written for onnxruntime, run once with each runtime.
SCRIPT = """
import json, sys
import numpy as np
import onnxruntime as ort
import relay_import as ri

path, art = sys.argv[1], sys.argv[2]
sessions = {
    "onnxruntime": ort.InferenceSession(path, providers=["CPUExecutionProvider"]),
    "relay": ri.compile(ri.load(path)),
    "artifact": ri.load_compiled(art),
}
x = np.random.default_rng(0).standard_normal((5, 4)).astype("float32")
report = {}
for name, sess in sessions.items():
    feed = {sess.get_inputs()[0].name: x}
    report[name] = {
        "inputs": [(i.name, i.shape, i.type) for i in sess.get_inputs()],
        "outputs": [(o.name, o.shape, o.type) for o in sess.get_outputs()],
        "all": [a.tolist() for a in sess.run(None, feed)],
        "logits": [a.tolist() for a in sess.run(["logits"], feed)],
    }
print(json.dumps(report))
"""


def test_same_script_runs_on_onnxruntime_and_relay(tmp_path):
    model = names_model(tmp_path / "names.onnx")
    relay("compile", model, "-o", tmp_path / "names.relaylib", "-q")
    out = json.loads(python(SCRIPT, model, tmp_path / "names.relaylib").stdout)
    want = out["onnxruntime"]
    assert want["inputs"] == [["input.1", ["batch", 4], "tensor(float)"]]
    for name in ("relay", "artifact"):
        got = out[name]
        assert got["inputs"] == want["inputs"], name
        assert got["outputs"] == want["outputs"], name
        for a, b in zip(got["all"], want["all"]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got["logits"][0], want["logits"][0], rtol=1e-5, atol=1e-6)


def test_own_calling_conventions_still_work(tmp_path):
    lib = ri.compile(ri.load(names_model(tmp_path / "m.onnx")))
    x = np.ones((2, 4), "float32")
    ref = lib.run(None, {"input.1": x})
    for outs in (lib(x), lib(**{"input.1": x}), lib(input_1=x)):  # framework or Relay name
        for a, b in zip(outs, ref):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(InputError, match="unknown output"):
        lib.run(["nope"], {"input.1": x})
    with pytest.raises(InputError, match="unknown input"):
        lib.run(None, {"image": x})
    with pytest.raises(InputError, match="dict"):
        lib.run(None, x)
