"""The compile cache never changes an answer (issue 11): pairs of models that differ in exactly
one thing the cache key must cover — input names and order, output names, input types,
attributes, constants, options, target features, compiler version — are compiled with one
cache directory, and each answer is checked against onnxruntime; then the same through
`relay run` as a subprocess."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
import relay_import as ri
from relay_core.backend import compiler
from tests.require import require

from .clirun import relay

onnx = require("onnx")
ort = require("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

_F = {"float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE}


def _model(nodes, inputs, outputs, dtype="float32", inits=(), shape=(2,)):
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, _F[dtype], list(shape)) for n in inputs],
        [helper.make_tensor_value_info(n, _F[dtype], list(shape)) for n in outputs],
        list(inits),
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _sub(a, b, inputs, out="z", dtype="float32"):
    return _model([helper.make_node("Sub", [a, b], [out])], inputs, [out], dtype)


def _const_add(c):
    w = numpy_helper.from_array(np.full((2,), c, np.float32), "c")
    return _model([helper.make_node("Add", ["x", "c"], ["z"])], ["x"], ["z"], inits=[w])


def _leaky(alpha):
    return _model([helper.make_node("LeakyRelu", ["x"], ["z"], alpha=alpha)], ["x"], ["z"])


FEEDS = {
    "x": np.array([1.0, -3.0]),
    "y": np.array([5.0, 0.5]),
    "a": np.array([2.0, 7.0]),
    "b": np.array([-1.0, 4.0]),
}

# (what differs, model A, model B): each pair is equal but for that one thing.
PAIRS = [
    ("input names and order", _sub("x", "y", ["x", "y"]), _sub("y", "x", ["y", "x"])),
    ("input names", _sub("x", "y", ["x", "y"]), _sub("a", "b", ["a", "b"])),
    ("output names", _sub("x", "y", ["x", "y"], "z"), _sub("x", "y", ["x", "y"], "w")),
    ("input types", _sub("x", "y", ["x", "y"]), _sub("x", "y", ["x", "y"], dtype="float64")),
    ("attributes", _leaky(0.1), _leaky(0.5)),
    ("constants", _const_add(1.0), _const_add(2.0)),
]


def _inputs(model):
    dt = {v: k for k, v in _F.items()}
    return {
        i.name: FEEDS[i.name].astype(dt[i.type.tensor_type.elem_type]) for i in model.graph.input
    }


def _check(lib, model):
    feeds = _inputs(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    got = lib(**feeds)
    assert lib.output_names == [o.name for o in model.graph.output]
    assert lib.input_names == [i.name for i in model.graph.input]
    for w, g in zip(want, got):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6)


@pytest.mark.parametrize("what,a,b", PAIRS, ids=[p[0] for p in PAIRS])
def test_pairs_differing_in_one_thing(what, a, b, tmp_path, monkeypatch):
    monkeypatch.setenv("RELAY_CACHE_DIR", str(tmp_path))
    la = ri.compile(ri.load(a))
    lb = ri.compile(ri.load(b))
    assert not lb.cache_hit and lb.path != la.path, what
    _check(la, a)
    _check(lb, b)
    assert ri.compile(ri.load(b)).cache_hit  # the same model again does hit


def test_options_target_and_compiler_version_are_in_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("RELAY_CACHE_DIR", str(tmp_path))
    model = _sub("x", "y", ["x", "y"])
    mod = ri.load(model)
    base = ri.compile(mod)
    _check(base, model)
    o1 = ri.compile(mod, opt_level=1)
    assert not o1.cache_hit and o1.path != base.path
    _check(o1, model)
    # A masked CPU feature is another target: another entry, built without it.
    feats = relay_core.backend.llvm_target.host()[2].split(",")
    masked = "sse4.2" if "+sse4.2" in feats else None
    if masked:
        monkeypatch.setenv("RELAY_CPU_FEATURES", f"-{masked}")
        t = ri.compile(mod)
        assert not t.cache_hit and t.path != base.path
        assert f"+{masked}" not in t.manifest["target"]["features"].split(",")
        assert "+avx2" not in t.manifest["target"]["features"].split(",")  # builds on sse4.2
        _check(t, model)
        monkeypatch.delenv("RELAY_CPU_FEATURES")
    # A changed compiler (its sources or library versions) never reuses an entry.
    monkeypatch.setattr(compiler, "compiler_fingerprint", lambda: "another-compiler")
    v = ri.compile(mod)
    assert not v.cache_hit and v.path != base.path
    _check(v, model)


def test_cpu_feature_mask_refuses_adding_and_unknown_features(monkeypatch):
    from relay_core.backend.llvm_target import host
    from relay_core.errors import RelayError

    monkeypatch.setenv("RELAY_CPU_FEATURES", "+avx512f")
    with pytest.raises(RelayError, match="only remove"):
        host()
    monkeypatch.setenv("RELAY_CPU_FEATURES", "-no-such-feature")
    with pytest.raises(RelayError, match="not a feature"):
        host()


@pytest.mark.slow
def test_relay_run_pairs_share_a_cache(tmp_path):
    """`relay run` on model A then on B (Sub with inputs swapped; then output renamed), one
    cache directory: B's outputs are B's, under B's names."""
    env = {"RELAY_CACHE_DIR": str(tmp_path / "cache")}
    np.save(tmp_path / "x.npy", FEEDS["x"].astype(np.float32))
    np.save(tmp_path / "y.npy", FEEDS["y"].astype(np.float32))
    models = [
        _sub("x", "y", ["x", "y"]),
        _sub("y", "x", ["y", "x"]),
        _sub("x", "y", ["x", "y"], "w"),
    ]
    for k, m in enumerate(models):
        path = tmp_path / f"m{k}.onnx"
        onnx.save(m, str(path))
        out = tmp_path / f"out{k}.npz"
        relay(
            "run", path, "--input", f"x={tmp_path / 'x.npy'}", "--input",
            f"y={tmp_path / 'y.npy'}", "-o", out, env=env,
        )  # fmt: skip
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        want = sess.run(None, _inputs(m))
        got = np.load(out)
        assert list(got.keys()) == [o.name for o in m.graph.output]
        for name, w in zip(got.keys(), want):
            np.testing.assert_allclose(got[name], w, rtol=1e-6)
