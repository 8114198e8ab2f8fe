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


def test_a_same_size_rewrite_in_the_same_tick_is_not_served_stale(tmp_path, cache, conversions):
    """A file rewritten in place with the same size and the same modification time (as a
    rewrite within one timestamp tick leaves it) is hashed again: a fresh file's identity is
    never remembered."""
    path = tmp_path / "m.onnx"
    onnx.save(_model(2.0), str(path))
    before = os.stat(path)
    ri.load(str(path))
    assert not list((cache / "convert" / "index").glob("*"))
    onnx.save(_model(-3.0), str(path))
    assert os.stat(path).st_size == before.st_size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    mod = ri.load(str(path))
    _check(mod, path)
    assert conversions == ["onnx", "onnx"]


def test_a_still_file_is_not_read_again(tmp_path, cache, conversions, monkeypatch):
    """Once a file has been still for a while its identity (path, inode, size, times) stands
    for its content: a warm load does not hash it; a rewrite gives a new identity."""
    path = tmp_path / "m.onnx"
    onnx.save(_model(2.0), str(path))
    monkeypatch.setattr(convert_cache, "RACY_NS", -(10**12))  # as if written long ago
    hashed = []
    real = convert_cache._hash_source
    monkeypatch.setattr(
        convert_cache, "_hash_source", lambda h, p, *a: hashed.append(p) or real(h, p, *a)
    )
    ri.load(str(path))
    ri.load(str(path))
    assert len(hashed) == 1 and conversions == ["onnx"]
    onnx.save(_model(-3.0), str(path))
    _check(ri.load(str(path)), path)
    assert len(hashed) == 2 and conversions == ["onnx", "onnx"]


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


def _fill(tmp_path, n):
    """n models loaded once each, their entries used in order (entry i at time 1000 + i)."""
    paths, entries = [], []
    for i in range(n):
        path = tmp_path / f"m{i}.onnx"
        onnx.save(_model(float(i + 1)), str(path))
        ri.load(str(path))
        entry = convert_cache.cache_path(str(path), "onnx", {})
        os.utime(entry, (1000 + i, 1000 + i))
        paths.append(path)
        entries.append(entry)
    return paths, entries


def _limit_for(monkeypatch, entries, n):
    """A limit that holds about n of the entries."""
    size = max(os.path.getsize(e) for e in entries)
    monkeypatch.setenv("RELAY_CONVERT_CACHE_MB", repr(n * size / (1024 * 1024)))
    return convert_cache.limit_bytes()


def _total(cache):
    return sum(p.stat().st_size for p in (cache / "convert").glob("*.relaymod"))


def test_past_its_limit_the_least_recently_used_entries_go(
    tmp_path, cache, conversions, monkeypatch
):
    paths, entries = _fill(tmp_path, 5)
    _limit_for(monkeypatch, entries, 5.5)
    assert convert_cache.evict(os.path.dirname(entries[0])) == 0  # within the limit
    limit = _limit_for(monkeypatch, entries, 4.5)
    extra = tmp_path / "m5.onnx"
    onnx.save(_model(9.0), str(extra))
    _check(ri.load(str(extra)), extra)  # the store evicts
    monkeypatch.delenv("RELAY_CONVERT_CACHE_MB")
    assert _total(cache) <= limit * 0.8
    kept = [os.path.exists(e) for e in entries]
    assert kept == sorted(kept) and not kept[0] and kept[-1]  # the oldest go first
    assert os.path.exists(convert_cache.cache_path(str(extra), "onnx", {}))
    n = len(conversions)
    _check(ri.load(str(paths[-1])), paths[-1])
    assert len(conversions) == n  # kept: a hit
    _check(ri.load(str(paths[0])), paths[0])
    assert len(conversions) == n + 1  # evicted: converted again


def test_a_hit_makes_an_entry_recently_used(tmp_path, cache, conversions, monkeypatch):
    paths, entries = _fill(tmp_path, 4)
    ri.load(str(paths[0]))  # the oldest, used again
    assert len(conversions) == 4
    assert os.path.getmtime(entries[0]) > os.path.getmtime(entries[-1])
    _limit_for(monkeypatch, entries, 4.5)
    extra = tmp_path / "m4.onnx"
    onnx.save(_model(9.0), str(extra))
    ri.load(str(extra))
    assert os.path.exists(entries[0]) and not os.path.exists(entries[1])


def test_eviction_tolerates_entries_removed_meanwhile(tmp_path, cache, conversions):
    from relay_core.backend import lru

    paths, entries = _fill(tmp_path, 3)
    d = os.path.dirname(entries[0])
    seen = lru.scan(d, ".relaymod")
    assert sorted(p for _, _, p in seen) == sorted(entries)
    for e in entries[:2]:  # another process evicts these after our scan
        os.unlink(e)
    left = os.path.getsize(entries[2])
    assert lru.evict(seen, 0) == left  # only what it removed itself counts
    assert not lru.scan(d, ".relaymod")
    assert convert_cache.get(entries[0]) is None  # a read that lost the race is a miss
    _check(ri.load(str(paths[0])), paths[0])
    assert conversions == ["onnx"] * 4


def test_a_malformed_limit_is_reported(monkeypatch):
    from relay_core.errors import RelayError

    for bad in ("lots", "-1", "nan"):
        monkeypatch.setenv("RELAY_CONVERT_CACHE_MB", bad)
        with pytest.raises(RelayError, match="RELAY_CONVERT_CACHE_MB"):
            convert_cache.limit_bytes()


def test_processes_evicting_at_once(tmp_path, cache):
    """Several processes loading different models into a cache that holds about two: each
    store evicts what the others may be reading or evicting too."""
    paths = []
    for i in range(6):
        paths.append(tmp_path / f"m{i}.onnx")
        onnx.save(_model(float(i + 1)), str(paths[-1]))
    ri.load(str(paths[0]))
    size = os.path.getsize(convert_cache.cache_path(str(paths[0]), "onnx", {}))
    limit_mb = 2.5 * size / (1024 * 1024)
    code = (
        "import sys, relay_import as ri\n"
        "for k in range(12):\n"
        "    p = sys.argv[1 + (k + int(sys.argv[-1])) % (len(sys.argv) - 2)]\n"
        "    m = ri.load(p)\n"
        "    assert m.attrs['output_names']\n"
        "print('ok')\n"
    )
    env = dict(os.environ, RELAY_CACHE_DIR=str(cache), RELAY_CONVERT_CACHE_MB=repr(limit_mb))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, *map(str, paths), str(s)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for s in range(3)
    ]
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0 and out.strip() == "ok", err[-3000:]
    assert _total(cache) <= limit_mb * 1024 * 1024
    assert not list((cache / "convert").glob(".tmp-*"))
    for path in paths:
        _check(ri.load(str(path)), path)
