"""`relay verify` as a user runs it: the true max relative error, weights shown as constants,
the per-layer view at parity, stored reference results, per-output tolerances, and an HTML
report that always has its plot and graph (without matplotlib)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from .clirun import DEMO, names_model, python, relay


def _max_rel(expected, actual) -> float:
    e = np.asarray(expected, np.float64)
    d = np.abs(np.asarray(actual, np.float64) - e)
    nz = e != 0
    return float((d[nz] / np.abs(e[nz])).max())


def test_max_rel_is_the_true_maximum(tmp_path):
    import onnxruntime as ort

    import relay_import as ri
    from relay_import.verifier import input_specs, make_inputs

    out = relay("verify", DEMO, "--seed", "3").stdout
    m = re.search(r"ok\s+probs .* max_rel=(\S+)", out)
    assert m, out
    # the same inputs as verify's, both runtimes run here
    feed = make_inputs(input_specs(ri.load(str(DEMO))), 3)
    want = ort.InferenceSession(str(DEMO), providers=["CPUExecutionProvider"]).run(None, feed)
    got = ri.compile(ri.load(str(DEMO)))(**feed)
    true = _max_rel(want[0], got[0])
    assert true > 0  # float32 softmax through 23 layers is never bit-exact here
    assert float(m.group(1)) == pytest.approx(true, rel=0.01)
    assert "pass: |relay - onnxruntime| <= atol + rtol * |onnxruntime|" in out
    assert "worst element [" in out


def test_weights_are_constants_and_per_layer_lists_every_layer_at_parity(tmp_path):
    out = relay("verify", DEMO, "--per-layer").stdout
    assert "PARITY" in out and "per-layer comparison: 23 layers, all within tolerance" in out
    assert "/layer2/conv1/Conv" in out and "/Softmax" in out  # the table lists them
    assert "float64[0]" not in out


def test_a_diverging_node_shows_its_weights_as_constants(tmp_path):
    code = """
import relay_import as ri
def bad_conv(ctx, x, w, b=None, **attrs):
    from converters.onnx.nn import Conv
    out = Conv(ctx, x, w, b, **attrs)
    return ctx.call("negative", out) if ctx.node_name == "/layer2/conv1/Conv" else out
r = ri.verify("examples/demo_cnn.onnx", custom_convert_map={"Conv": bad_conv})
print(r.summary())
"""
    out = python(code).stdout
    assert "first divergence: node '/layer2/conv1/Conv' (Conv)" in out, out
    w = re.search(r"input (onnx::Conv_\d+) \(constant\): float32\[32, 16, 3, 3\] min=", out)
    assert w, out
    assert "float64[0]" not in out


def test_save_then_load_results_also_for_an_artifact(tmp_path):
    ref = tmp_path / "ref.npz"
    relay("verify", DEMO, "--save-results", ref, "--per-layer", "-q")
    assert ref.exists()
    art = tmp_path / "cnn.relaylib"
    relay("compile", DEMO, "-o", art, "-q")
    # the deployed artifact against the stored onnxruntime results: no onnxruntime run
    out = relay("verify", art, "--load-results", ref).stdout
    assert "PARITY with onnxruntime (stored in ref.npz)" in out
    # the model itself, layer by layer against the stored layers
    out = relay("verify", DEMO, "--load-results", ref, "--per-layer").stdout
    assert "per-layer comparison: 23 layers, all within tolerance" in out
    # stored results one float32 step away from ours: within the default tolerance, but a
    # per-output tolerance of zero makes the comparison fail, naming that output (our output
    # can equal onnxruntime's bit for bit, so the stored one is moved)
    stored = dict(np.load(ref))
    stored["output_0"] = np.nextafter(stored["output_0"], np.float32(1))
    moved = tmp_path / "moved.npz"
    np.savez(moved, **stored)
    assert "PARITY" in relay("verify", art, "--load-results", moved).stdout
    p = relay(
        "verify",
        art,
        "--load-results",
        moved,
        "--rtol",
        "probs=0",
        "--atol",
        "probs=0",
        check=False,
    )
    assert p.returncode == 1 and "MISMATCH" in p.stdout
    assert "(probs: rtol=0 atol=0)" in p.stdout
    assert "DIFF probs" in p.stdout
    p = relay("verify", art, check=False)  # an artifact alone has nothing to compare with
    assert p.returncode == 1 and "--load-results" in p.stderr


def test_per_output_tolerances(tmp_path):
    model = names_model(tmp_path / "names.onnx")
    out = relay("verify", model, "--rtol", "1e-3", "--atol", "logits=0.5").stdout
    assert "rtol=0.001 atol=1e-05 (probs: rtol=0.001 atol=1e-05" not in out
    assert "logits: rtol=0.001 atol=0.5" in out and "PARITY" in out
    p = relay("verify", model, "--rtol", "probs=x", check=False)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1


def test_html_report_has_plot_and_graph_at_parity_without_matplotlib(tmp_path):
    html = tmp_path / "r.html"
    code = f"""
import sys
sys.modules["matplotlib"] = None  # as if it were not installed: import fails
from relay_import.cli import main
sys.exit(main(["verify", {str(DEMO)!r}, "--html", {str(html)!r}, "-q"]))
"""
    python(code)
    text = html.read_text()
    assert "<svg class='plot'" in text and "<svg class='graph'" in text
    assert text.count("<circle") == 23  # one point per layer
    assert "/layer3/Add" in text
