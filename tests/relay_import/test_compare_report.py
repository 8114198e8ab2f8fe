"""Comparison statistics and the verify report (text and HTML)."""

from __future__ import annotations

import numpy as np

from relay_import.compare import compare, stats
from relay_import.report import LayerDiff, VerifyReport


def test_compare_within_tolerance():
    a = np.linspace(-1, 1, 100).astype("float32")
    d = compare("y", a, a + 1e-7, rtol=1e-5, atol=1e-6)
    assert d.ok and d.mismatch == 0.0 and d.max_abs <= 2e-7


def test_compare_counts_mismatches_and_errors():
    a = np.zeros(10, "float32")
    b = a.copy()
    b[3] = 0.5
    d = compare("y", a, b, rtol=1e-5, atol=1e-6)
    assert not d.ok
    assert d.mismatch == 0.1
    assert d.max_abs == 0.5


def test_compare_nan_inf_positions():
    a = np.array([1.0, np.nan, np.inf, -np.inf], "float32")
    assert compare("y", a, a.copy(), 0, 0).ok
    b = np.array([1.0, 1.0, np.inf, np.inf], "float32")
    d = compare("y", a, b, 1e-3, 1e-3)
    assert not d.ok and "NaN" in d.nan_inf and "Inf" in d.nan_inf


def test_compare_shape_mismatch_is_reported():
    d = compare("y", np.zeros((2, 3)), np.zeros((3, 2)), 1e-3, 1e-3)
    assert not d.ok and "shape" in d.note


def test_compare_integers_and_bools():
    assert compare("i", np.arange(5), np.arange(5), 0, 0).ok
    assert not compare("b", np.array([True, False]), np.array([True, True]), 0, 0).ok


def test_report_text_and_html(tmp_path):
    ok = compare("out", np.ones(3), np.ones(3), 1e-5, 1e-6)
    bad = compare("mid", np.ones(3), -np.ones(3), 1e-5, 1e-6)
    layer0 = LayerDiff(0, "conv_0", "Conv", "c0", ok, [("x", stats(np.ones(3)))])
    layer1 = LayerDiff(1, "neg_1", "Neg", "mid", bad, [("c0", stats(np.ones(3)))])
    r = VerifyReport(
        "m.onnx",
        "onnx",
        1e-5,
        1e-6,
        [bad],
        layers=[layer0, layer1],
        first_divergence=layer1,
        neighbours={"inputs": [("conv_0", "Conv")], "outputs": [("relu_2", "Relu")]},
    )
    assert not r.ok and not bool(r)
    text = r.summary()
    assert (
        "MISMATCH" in text and "first divergence: node 'neg_1' (Neg)" in text and "conv_0" in text
    )
    path = r.write_html(tmp_path / "r.html")
    html = path.read_text()
    # the error plot and the graph are inline SVG: no plotting library needed
    assert "neg_1" in html and "<svg class='plot'" in html and "<svg class='graph'" in html
    assert r.html_path == str(path)
