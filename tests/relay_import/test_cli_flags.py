"""Flags that apply everywhere or are refused, one-line errors, quiet closed pipes, `print(mod)`
with large constants elided, and `relay run --fill --print-time`."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from .clirun import DEMO, ROOT, names_model, python, relay


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return names_model(tmp_path_factory.mktemp("flags") / "names.onnx")


@pytest.mark.parametrize("command", ["inspect", "convert", "compile", "run", "verify", "bench"])
def test_dump_ir_on_every_building_command(command, small, tmp_path):
    extra = {
        "compile": ["-o", tmp_path / "a.relaylib"],
        "run": ["--fill", "ones"],
        "bench": ["--runs", "2", "--warmup", "1"],
    }.get(command, [])
    p = relay(command, small, "--dump-ir", *extra)
    assert "// ---- after conversion ----" in p.stderr or "// ---- after InferType ----" in p.stderr
    if command not in ("inspect", "convert"):  # these compile: every pass is shown
        assert "// ---- after FuseOps ----" in p.stderr, p.stderr[-2000:]


def test_convert_opt_level_optimises_before_writing(tmp_path):
    p = relay("convert", DEMO, "--opt-level", "3", "--dump-ir", "-o", tmp_path / "o.relay")
    assert "// ---- after FoldConstant ----" in p.stderr


@pytest.mark.parametrize(
    "args, where",
    [
        (
            ["compile", DEMO, "-o", "x", "--opt-level", "9"],
            "relay compile: error: argument --opt-level",
        ),
        (["inspect", DEMO, "--opt-level", "1"], "relay inspect: error: unrecognized arguments"),
        (["serve", "--dump-ir"], "relay serve: error: unrecognized arguments"),
        (["bench", DEMO, "--runs", "0"], "relay bench: error: argument --runs"),
    ],
)
def test_flags_that_do_not_apply_are_refused_in_one_line(args, where):
    p = relay(*args, check=False)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and p.stderr.startswith(where), p.stderr


def _unsupported(path):
    import onnx
    from onnx import TensorProto, helper

    g = helper.make_graph(
        [
            helper.make_node("FancyOpA", ["x"], ["y"], domain="custom.a"),
            helper.make_node("FancyOpB", ["y"], ["z"], domain="custom.b"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1])],
    )
    ops = [helper.make_opsetid("", 17), helper.make_opsetid("custom.a", 1)]
    onnx.save(helper.make_model(g, opset_imports=ops + [helper.make_opsetid("custom.b", 1)]), path)
    return path


def test_every_error_is_one_line_with_a_hint(tmp_path, small):
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x00\x01 not a model")
    np.save(tmp_path / "x.npy", np.ones((1, 4), "float32"))
    cases = [
        (["compile", tmp_path / "missing.onnx", "-o", tmp_path / "o"], "check the path"),
        (["convert", junk], "relay reads .onnx files"),
        (["compile", _unsupported(tmp_path / "u.onnx"), "-o", tmp_path / "o"], "FancyOpB"),
        (["run", small, "--input", f"image={tmp_path / 'x.npy'}"], "--input NAME=FILE.npy"),
    ]
    for args, hint in cases:
        p = relay(*args, "--quiet", check=False)
        assert p.returncode == 1, (args, p.stderr)
        assert p.stderr.count("\n") == 1 and p.stderr.startswith(f"relay {args[0]}: error: ")
        assert hint in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_internal_errors_are_one_line_too():
    code = """
import sys
import relay_import.api as api
def broken(*a, **k):
    raise ZeroDivisionError("deep inside")
api.load = broken
from relay_import.cli import main
sys.exit(main(["convert", sys.argv[1], "-q"]))
"""
    p = python(code, DEMO, check=False)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert p.stderr.strip() == (
        "relay convert: error: internal error: ZeroDivisionError: deep inside (this is a bug: "
        "rerun with RELAY_DEBUG=1 for the traceback and report it)"
    )


def test_a_closed_pipe_ends_quietly():
    # `relay convert` writes ~400 KB: more than a pipe holds, so the writer meets the closed end
    p = subprocess.run(
        ["bash", "-c", f"python -m relay_import convert {DEMO} | head -1"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={
            **__import__("os").environ,
            "PATH": f"{__import__('sys').executable.rsplit('/', 1)[0]}:"
            + __import__("os").environ.get("PATH", ""),
        },
        timeout=300,
    )
    assert p.stdout.strip() == '#[version = "0.0.5"]'
    assert "Traceback" not in p.stderr and "Broken pipe" not in p.stderr, p.stderr


def test_print_elides_large_constants_and_the_full_text_parses(tmp_path):
    code = """
import relay_core, relay_import as ri
mod = ri.load("examples/demo_cnn.onnx")
short, full = str(mod), mod.astext()
print(len(short), len(full))
assert "meta[Constant][0] /* float32[16, 3, 3, 3], 1.7 KB */" in short, short[:600]
assert relay_core.parse(full).astext() == full  # print -> parse -> print is the identity
try:
    relay_core.parse(short)
except relay_core.ParseError as e:
    print("refused:", e)
"""
    out = python(code).stdout
    short, full = map(int, out.split()[:2])
    assert short < 10_000 < 300_000 < full  # 314 KB of weights: elided vs base64
    assert "refused:" in out and "mod.astext()" in out
    # the CLI writes the full form: it reads back and compiles
    relay("convert", DEMO, "-o", tmp_path / "m.relay", "-q")
    relay("compile", tmp_path / "m.relay", "-o", tmp_path / "m.relaylib", "-q")


def test_run_fill_and_print_time(tmp_path, small):
    import onnxruntime as ort

    out = relay("run", DEMO, "--fill", "random", "--print-time", "--repeat", "3").stdout
    assert "probs: float32[1, 10]" in out and "first call:" in out
    assert "then 3 runs (ms): mean" in out
    relay("run", DEMO, "--fill", "zeros", "-o", tmp_path / "z.npz", "-q")
    want = ort.InferenceSession(str(DEMO), providers=["CPUExecutionProvider"]).run(
        None, {"image": np.zeros((1, 3, 32, 32), "float32")}
    )[0]
    with np.load(tmp_path / "z.npz") as z:
        np.testing.assert_allclose(z["probs"], want, rtol=1e-5, atol=1e-6)
    art = tmp_path / "small.relaylib"
    relay("compile", small, "-o", art, "-q")
    p = relay("run", art, "--fill", "ones")
    assert "filled input.1: ones [1, 4]" in p.stderr  # `batch` is 1 when filled
    assert "probs: float32[1, 3]" in p.stdout and "logits: float32[1, 3]" in p.stdout
    p = relay("run", art, "--fill", "ones", "--opt-level", "1", check=False)
    assert p.returncode == 1 and "already compiled" in p.stderr
    manifest = json.loads((art / "manifest.json").read_text())
    assert manifest["inputs"][0]["name"] == "input.1"
