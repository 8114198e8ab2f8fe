"""The conversion cache (relay_import.convert_cache): a model file converted once is read back
from the cache directory, keyed by its content and the load options; answers are checked
against onnxruntime."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import relay_core
import relay_import as ri
from relay_core.ir.structural import structural_equal
from relay_import import api, convert_cache
from tests.require import require

onnx = require("onnx")
ort = require("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _model(c: float, batch=None):
    w = numpy_helper.from_array(np.full((3,), c, np.float32), "w")
    g = helper.make_graph(
        [helper.make_node("Mul", ["x", "w"], ["y"]), helper.make_node("Relu", ["y"], ["z"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch or "n", 3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [batch or "n", 3])],
        [w],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("RELAY_CACHE_DIR", str(d))
    return d


@pytest.fixture
def conversions(monkeypatch):
    """How many times the converter ran."""
    calls = []
    real = api._convert

    def counted(*a, **k):
        calls.append(a[1])
        return real(*a, **k)

    monkeypatch.setattr(api, "_convert", counted)
    return calls


def _check(mod, path):
    x = np.array([[1.0, -2.0, 3.0], [-0.5, 0.25, 4.0]], np.float32)
    want = ort.InferenceSession(str(path)).run(None, {"x": x})[0]
    got = relay_core.evaluate(mod, x)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_second_load_is_read_from_the_cache(tmp_path, cache, conversions):
    path = tmp_path / "m.onnx"
    onnx.save(_model(2.0), str(path))
    first = ri.load(str(path))
    second = ri.load(str(path))
    assert conversions == ["onnx"]
    assert structural_equal(first, second)
    assert second.attrs["output_names"] == first.attrs["output_names"]
    assert set(second.attrs) == set(first.attrs)
    _check(second, path)
    entries = list((cache / "convert").glob("*.relaymod"))
    assert len(entries) == 1


def test_changed_file_and_options_make_new_entries(tmp_path, cache, conversions):
    path = tmp_path / "m.onnx"
    onnx.save(_model(2.0), str(path))
    ri.load(str(path))
    onnx.save(_model(-3.0), str(path))  # same path, new content
    mod = ri.load(str(path))
    _check(mod, path)
    shaped = ri.load(str(path), shapes={"x": (2, 3)})
    assert shaped["main"].params[0].type_annotation.shape == (2, 3)
    ri.load(str(path), shapes={"x": (2, 3)})
    assert conversions == ["onnx", "onnx", "onnx"]
    assert len(list((cache / "convert").glob("*.relaymod"))) == 3


def test_no_cache_dir_or_cache_false_always_converts(tmp_path, monkeypatch, conversions):
    path = tmp_path / "m.onnx"
    onnx.save(_model(2.0), str(path))
    monkeypatch.setenv("RELAY_CACHE_DIR", "")
    ri.load(str(path))
    ri.load(str(path))
    monkeypatch.setenv("RELAY_CACHE_DIR", str(tmp_path / "c"))
    ri.load(str(path), cache=False)
    assert conversions == ["onnx"] * 3
    assert not (tmp_path / "c").exists()


def test_options_that_are_not_plain_values_are_not_cached(tmp_path, cache, conversions):
    path = tmp_path / "m.onnx"
    onnx.save(_model(2.0), str(path))
    assert convert_cache.cache_path(str(path), "onnx", {"custom_convert_map": {"Foo": len}}) is None
    assert convert_cache.cache_path(str(path), "onnx", {"shapes": {"x": (1, 3)}}) is not None


def test_a_damaged_entry_is_replaced(tmp_path, cache, conversions):
    path = tmp_path / "m.onnx"
    onnx.save(_model(2.0), str(path))
    ri.load(str(path))
    (entry,) = (cache / "convert").glob("*.relaymod")
    entry.write_bytes(entry.read_bytes()[:40])
    mod = ri.load(str(path))
    _check(mod, path)
    assert conversions == ["onnx", "onnx"]
    assert ri.load(str(path)) is not None and conversions == ["onnx", "onnx"]


def test_processes_filling_the_cache_at_once(tmp_path, cache):
    path = tmp_path / "m.onnx"
    onnx.save(_model(1.5), str(path))
    code = (
        "import sys, relay_import as ri; m = ri.load(sys.argv[1]); print(m.attrs['output_names'])"
    )
    env = dict(os.environ, RELAY_CACHE_DIR=str(cache))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(path)], env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert len(set(outs)) == 1
    assert len(list((cache / "convert").glob("*.relaymod"))) == 1
    assert not list((cache / "convert").glob(".tmp-*"))
    _check(ri.load(str(path)), path)
