"""Running `relay` as a user types it: a subprocess (`python -m relay_import`), stdout and stderr
captured, stderr not a terminal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo_cnn.onnx"


def relay(*args, check: bool = True, env: dict | None = None, cwd=None, timeout: int = 600):
    full_env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    full_env.update(env or {})
    p = subprocess.run(
        [sys.executable, "-m", "relay_import", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env=full_env,
        timeout=timeout,
    )
    if check and p.returncode != 0:
        raise AssertionError(
            f"relay {' '.join(map(str, args))} -> {p.returncode}\n{p.stdout[-3000:]}\n"
            f"{p.stderr[-3000:]}"
        )
    return p


def python(code: str, *args, check: bool = True, timeout: int = 600):
    """A user's script, run as its own process."""
    p = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
        timeout=timeout,
    )
    if check and p.returncode != 0:
        raise AssertionError(f"script -> {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def names_model(path: Path) -> Path:
    """An ONNX model whose names a converter could lose: input `input.1` (not a Relay
    identifier) with a symbolic batch `batch`, two named outputs, a weight."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(
        np.random.default_rng(0).standard_normal((4, 3)).astype("float32"), "fc.weight"
    )
    g = helper.make_graph(
        [
            helper.make_node("MatMul", ["input.1", "fc.weight"], ["logits"]),
            helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
        ],
        "names",
        [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, ["batch", 4])],
        [
            helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 3]),
            helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 3]),
        ],
        [w],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    onnx.save(m, str(path))
    return path
