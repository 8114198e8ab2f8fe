"""examples/c/run_model.c: an exported module called from C (dlopen, model.h, weights.bin) gives
onnxruntime's outputs. The backend links with `cc` already, so the compiler is always there."""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np

from tests.require import require

require("onnxruntime")

import relay_import  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL = os.path.join(ROOT, "examples", "demo_cnn.onnx")
SOURCE = os.path.join(ROOT, "examples", "c", "run_model.c")


def test_c_program_matches_onnxruntime(tmp_path):
    import onnxruntime as ort

    art = str(tmp_path / "cnn.relaylib")
    relay_import.compile(relay_import.load(MODEL)).export(art)
    header = open(os.path.join(art, "model.h")).read()
    assert "RELAY_WORKSPACE_BYTES" in header and "relay_constant_offsets" in header

    exe = str(tmp_path / "run_model")
    cc = shutil.which("cc") or shutil.which("gcc")
    subprocess.run(
        [cc, "-O2", "-Wall", "-Werror", "-I", art, SOURCE, "-ldl", "-o", exe],
        check=True,
        capture_output=True,
        text=True,
    )
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    x.tofile(tmp_path / "in0.bin")
    out = tmp_path / "out0.bin"
    r = subprocess.run(
        [exe, art, str(tmp_path / "in0.bin"), str(out)], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    got = np.fromfile(out, np.float32).reshape(1, 10)

    sess = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
    want = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_c_program_rejects_wrong_input_size(tmp_path):
    art = str(tmp_path / "cnn.relaylib")
    relay_import.compile(relay_import.load(MODEL)).export(art)
    exe = str(tmp_path / "run_model")
    subprocess.run(
        [shutil.which("cc") or "gcc", "-O2", "-I", art, SOURCE, "-ldl", "-o", exe], check=True
    )
    np.zeros(7, np.float32).tofile(tmp_path / "bad.bin")
    r = subprocess.run(
        [exe, art, str(tmp_path / "bad.bin"), str(tmp_path / "o.bin")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1 and "needs 12288" in r.stderr


def test_c_program_reports_index_out_of_range(tmp_path):
    """A Gather index out of range: onnxruntime refuses it; relay_run returns 1 and
    relay_last_error() names the index; an index in range gives onnxruntime's rows."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    table = np.arange(6, dtype=np.float32).reshape(3, 2)
    g = helper.make_graph(
        [helper.make_node("Gather", ["t", "i"], ["y"], axis=0)],
        "g",
        [helper.make_tensor_value_info("i", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])],
        initializer=[helper.make_tensor("t", TensorProto.FLOAT, [3, 2], table.ravel().tolist())],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    art = str(tmp_path / "gather.relaylib")
    relay_import.compile(relay_import.from_onnx(model)).export(art)
    exe = str(tmp_path / "run_model")
    subprocess.run(
        [shutil.which("cc") or "gcc", "-O2", "-I", art, SOURCE, "-ldl", "-o", exe], check=True
    )
    refused = 0
    for idx in ([2, -3], [1, 7]):
        i = np.array(idx, np.int64)
        i.tofile(tmp_path / "i.bin")
        r = subprocess.run(
            [exe, art, str(tmp_path / "i.bin"), str(tmp_path / "o.bin")],
            capture_output=True,
            text=True,
        )
        try:
            want = sess.run(None, {"i": i})[0]
        except Exception:  # onnxruntime refuses the index: so must we
            assert r.returncode == 1
            assert "index 7 is out of range for an axis of size 3" in r.stderr
            refused += 1
            continue
        assert r.returncode == 0, r.stderr
        np.testing.assert_array_equal(np.fromfile(tmp_path / "o.bin", np.float32), want.ravel())
    assert refused == 1
