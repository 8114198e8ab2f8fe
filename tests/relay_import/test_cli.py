"""Every `relay` subcommand as a subprocess, on small ONNX, PyTorch and TensorFlow models."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.require import require

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo_cnn.onnx"


def relay(*args, cwd=None, check=True):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    p = subprocess.run(
        [sys.executable, "-m", "relay_import.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env=env,
        timeout=600,
    )
    if check and p.returncode != 0:
        raise AssertionError(
            f"relay {' '.join(map(str, args))} -> {p.returncode}\n{p.stdout}\n{p.stderr}"
        )
    return p


@pytest.fixture(scope="module")
def torch_pt2(tmp_path_factory):
    torch = require("torch")
    torch.manual_seed(0)
    m = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 5)
    ).eval()
    ep = torch.export.export(m, (torch.randn(1, 3, 8, 8),))
    path = tmp_path_factory.mktemp("pt") / "small.pt2"
    torch.export.save(ep, str(path))
    return path


@pytest.fixture(scope="module")
def tf_saved_model(tmp_path_factory):
    keras = require("keras")
    m = keras.Sequential(
        [
            keras.Input((8, 8, 3)),
            keras.layers.Conv2D(4, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(5),
        ]
    )
    path = tmp_path_factory.mktemp("tf") / "saved"
    m.export(str(path), verbose=False)
    return path


def test_no_command_prints_help():
    p = relay(check=False)
    assert p.returncode == 2 and "inspect" in p.stdout


def test_inspect_onnx():
    out = relay("inspect", DEMO).stdout
    assert "image: Tensor[(1, 3, 32, 32), float32]" in out
    assert "Conv " in out and "nn.conv2d" in out


def test_inspect_lists_every_unsupported_op(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("FancyOpA", ["x"], ["y"], domain="custom.a"),
        helper.make_node("FancyOpB", ["y"], ["z"], domain="custom.b"),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1])],
    )
    m = helper.make_model(
        g,
        opset_imports=[
            helper.make_opsetid("", 17),
            helper.make_opsetid("custom.a", 1),
            helper.make_opsetid("custom.b", 1),
        ],
    )
    path = tmp_path / "bad.onnx"
    onnx.save(m, str(path))
    p = relay("inspect", path, check=False)
    assert p.returncode == 1
    assert "FancyOpA" in p.stdout and "FancyOpB" in p.stdout


def test_convert_writes_parsable_relay(tmp_path):
    import relay_core

    out = tmp_path / "m.relay"
    relay("convert", DEMO, "-o", out)
    mod = relay_core.parse(out.read_text())
    assert mod["main"].params[0].name_hint == "image"


def test_bad_model_is_a_clear_error(tmp_path):
    bad = tmp_path / "junk.onnx"
    bad.write_bytes(b"\x00\x01not a model")
    p = relay("convert", bad, check=False)
    assert p.returncode == 1
    assert "error" in p.stderr and "Traceback" not in p.stderr


def test_compile_run_onnx(tmp_path):
    art = tmp_path / "demo.relaylib"
    relay("compile", DEMO, "-o", art)
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype("float32")
    np.savez(tmp_path / "in.npz", image=x)
    relay("run", art, "--inputs", tmp_path / "in.npz", "-o", tmp_path / "out.npz")
    import onnxruntime as ort

    want = ort.InferenceSession(str(DEMO), providers=["CPUExecutionProvider"]).run(
        None, {"image": x}
    )[0]
    with np.load(tmp_path / "out.npz") as z:
        np.testing.assert_allclose(z["probs"], want, rtol=1e-4, atol=1e-6)
    np.save(tmp_path / "x.npy", x)
    out = relay("run", DEMO, "--input", f"image={tmp_path / 'x.npy'}").stdout
    assert "probs: float32[1, 10]" in out


def test_verify_onnx_exit_codes(tmp_path):
    html = tmp_path / "r.html"
    p = relay("verify", DEMO, "--html", html)
    assert "PARITY" in p.stdout and html.exists()


def test_bench_onnx():
    out = relay("bench", DEMO, "--runs", "5").stdout
    assert "relay" in out and "ratio" in out


def test_pytorch_inspect_verify_compile(torch_pt2, tmp_path):
    assert "aten.conv2d" in relay("inspect", torch_pt2).stdout
    assert "PARITY" in relay("verify", torch_pt2).stdout
    relay("compile", torch_pt2, "-o", tmp_path / "pt.relaylib")
    assert (tmp_path / "pt.relaylib" / "manifest.json").exists()


def test_pickled_pt_is_refused(tmp_path):
    torch = require("torch")
    path = tmp_path / "whole.pt"
    torch.save(torch.nn.Linear(2, 2), str(path))
    p = relay("inspect", path, check=False)
    assert p.returncode == 1 and "torch.export" in p.stderr


def test_tensorflow_inspect_verify_compile(tf_saved_model, tmp_path):
    assert "Conv2D" in relay("inspect", tf_saved_model).stdout
    assert "PARITY" in relay("verify", tf_saved_model).stdout
    relay("compile", tf_saved_model, "-o", tmp_path / "tf.relaylib")
    assert (tmp_path / "tf.relaylib" / "manifest.json").exists()


def test_input_shape_flag(tmp_path):
    out = relay("inspect", DEMO, "--input-shape", "image=1,3,32,32").stdout
    assert "Tensor[(1, 3, 32, 32)" in out
    p = relay("inspect", DEMO, "--input-shape", "image=a,b", check=False)
    assert p.returncode != 0 and "integers" in (p.stderr + p.stdout)


def test_dump_ir_prints_the_module_after_each_pass(tmp_path):
    p = relay("compile", DEMO, "-o", tmp_path / "a.relaylib", "--dump-ir", "--quiet")
    for name in ("InferType", "FoldConstant", "FuseOps"):
        assert f"after {name}" in p.stderr, p.stderr[-2000:]
    assert "nn.conv2d" in p.stderr and (tmp_path / "a.relaylib" / "lib.so").exists()
