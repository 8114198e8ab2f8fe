"""The compiled-model cache is bounded ($RELAY_MODEL_CACHE_MB) through the shared `lru` helper:
least recently used model directories go first, a hit counts as a use, the model just built is
never evicted, a loaded model keeps running after its directory is evicted, and processes that
build and evict at once never see half an entry. Answers are compared with the interpreter."""

from __future__ import annotations

import os
import textwrap

import numpy as np
import pytest

import relay_core
from relay_core.backend import compiler
from relay_core.ir import Function, IRModule, call, const, var
from tests.backend.support import run_python


def _model(seed: int):
    """A small dense layer whose weights (in weights.bin) differ per seed: one cache key each."""
    rng = np.random.default_rng(seed)
    x = var("x", (2, 16))
    w = const(rng.standard_normal((8, 16)).astype("float32"))
    b = const(rng.standard_normal(8).astype("float32"))
    y = call("nn.relu", call("nn.bias_add", call("nn.dense", x, w), b))
    return relay_core.infer_type(IRModule.from_expr(Function((x,), y)))


def _check(lib, mod):
    x = np.random.default_rng(0).standard_normal((2, 16)).astype("float32")
    want = relay_core.evaluate(mod, x)
    got = lib(x)
    got = got[0] if isinstance(got, (list, tuple)) else got
    want = want[0] if isinstance(want, (list, tuple)) else want
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _entries(d) -> dict:
    return {os.path.basename(p): (t, s) for t, s, p in compiler.model_entries(d)}


def _set_limit(monkeypatch, nbytes: float):
    monkeypatch.setenv("RELAY_MODEL_CACHE_MB", repr(nbytes / (1024 * 1024)))


def test_entries_are_the_model_directories_only(cache_dir):
    mods = [_model(s) for s in range(2)]
    keys = set()
    for m in mods:
        lib = relay_core.build(m)
        keys.add(os.path.basename(lib.path))
    assert set(_entries(cache_dir)) == keys  # not kernels/, convert/, nor the runtime objects
    assert os.path.isdir(os.path.join(cache_dir, "kernels"))
    for _, size, p in compiler.model_entries(cache_dir):
        want = sum(os.path.getsize(os.path.join(p, f)) for f in os.listdir(p))
        assert size == want


def test_past_the_limit_the_least_recently_used_models_go(cache_dir, monkeypatch):
    mods = [_model(s) for s in range(5)]
    paths = []
    for i, m in enumerate(mods[:4]):
        lib = relay_core.build(m)
        paths.append(lib.path)
        os.utime(lib.path, (1000.0 + i, 1000.0 + i))  # built in this order, long ago
    sizes = {os.path.basename(p): s for _, s, p in compiler.model_entries(cache_dir)}
    assert len(sizes) == 4
    limit = sum(sizes.values())  # the fifth model overflows it
    _set_limit(monkeypatch, limit)
    lib = relay_core.build(mods[4])
    assert not lib.cache_hit
    _check(lib, mods[4])
    left = _entries(cache_dir)
    newest = os.path.basename(lib.path)
    assert newest in left
    # what is left: the newest entries, within 80% of the limit
    kept_old = [p for p in paths if os.path.basename(p) in left]
    assert kept_old == paths[len(paths) - len(kept_old) :]
    assert len(kept_old) < 4
    assert sum(s for _, s in left.values()) <= int(limit * 0.8)
    # removing one fewer would not have been enough
    gone = [p for p in paths if os.path.basename(p) not in left]
    assert sum(s for _, s in left.values()) + sizes[os.path.basename(gone[-1])] > int(limit * 0.8)
    assert not [n for n in os.listdir(cache_dir) if n.startswith(".evicted-")]


def test_a_hit_makes_a_model_recently_used(cache_dir):
    a, b, c = (_model(s) for s in (10, 11, 12))
    paths = [relay_core.build(m).path for m in (a, b, c)]
    for i, p in enumerate(paths):
        os.utime(p, (1000.0 * (i + 1),) * 2)  # a oldest, then b, then c
    lib = relay_core.build(a)
    assert lib.cache_hit
    _check(lib, a)
    e = _entries(cache_dir)
    na, nb, nc = (os.path.basename(p) for p in paths)
    assert e[na][0] > e[nc][0] > e[nb][0]
    # a limit that one eviction satisfies when it removes b: a, the oldest before its hit, stays
    limit = int((e[na][1] + e[nc][1]) / 0.8) + 1
    assert sum(s for _, s in e.values()) > limit
    compiler.evict_models(cache_dir, limit=limit)
    assert set(_entries(cache_dir)) == {na, nc}


def test_the_model_just_built_is_never_evicted(cache_dir, monkeypatch):
    monkeypatch.setenv("RELAY_MODEL_CACHE_MB", "0")
    mods = [_model(s) for s in (20, 21)]
    for m in mods:
        lib = relay_core.build(m)
        _check(lib, m)
        assert list(_entries(cache_dir)) == [os.path.basename(lib.path)]


def test_a_loaded_model_runs_after_its_directory_is_evicted(cache_dir):
    m = _model(30)
    lib = relay_core.build(m)
    assert lib.manifest["constants"]  # its weights are read from weights.bin
    _check(lib, m)
    removed = compiler.evict_models(cache_dir, limit=0)
    assert removed > 0 and not os.path.exists(lib.path)
    _check(lib, m)  # lib.so and weights.bin stay mapped
    art = lib.export(os.path.join(cache_dir, "..", "exported"))  # from what is loaded
    _check(relay_core.load_module(art), m)
    again = relay_core.build(m)  # compiled again, then a hit
    assert not again.cache_hit
    _check(again, m)
    hit = relay_core.build(m)
    assert hit.cache_hit
    _check(hit, m)
    _check(lib, m)


def test_a_malformed_limit_is_reported(cache_dir, monkeypatch):
    monkeypatch.setenv("RELAY_MODEL_CACHE_MB", "lots")
    with pytest.raises(relay_core.errors.RelayError, match="RELAY_MODEL_CACHE_MB"):
        relay_core.build(_model(40))


def test_processes_building_and_evicting_at_once_under_a_tiny_limit(cache_dir):
    code = textwrap.dedent(
        """
        import sys
        from tests.backend.test_model_cache_lru import _check, _model
        import relay_core
        first = int(sys.argv[1])
        for seed in [first, first + 1, first + 2, first, first + 1]:
            m = _model(50 + seed)
            _check(relay_core.build(m), m)
        print("ok")
        """
    )
    env = dict(os.environ, RELAY_CACHE_DIR=cache_dir, RELAY_MODEL_CACHE_MB="0.001")
    # overlapping seeds: the same keys built and evicted concurrently
    outs = run_python([["-c", code, k] for k in ("0", "1", "2")], env)
    assert [o.strip() for o in outs] == ["ok"] * 3
    for _, _, p in compiler.model_entries(cache_dir):  # no half-written or half-evicted entry
        assert sorted(os.listdir(p)) == ["lib.so", "manifest.json", "weights.bin"]
    leftovers = [n for n in os.listdir(cache_dir) if n.startswith((".evicted-", "relay-build-"))]
    assert not leftovers


def test_uncached_build_removes_its_files_with_the_module():
    """A build outside the cache (cache=False) lives in a temporary directory: it stays while the
    module is alive (export reads it) and goes when the module is collected, so a long-running
    process compiling uncached models does not fill the disk."""
    import gc

    mod = _model(7)
    lib = relay_core.build(mod, cache=False)
    path = lib.path
    assert os.path.exists(os.path.join(path, "lib.so"))
    _check(lib, mod)
    del lib
    gc.collect()
    assert not os.path.exists(path)


def test_cached_build_keeps_its_entry_after_the_module_goes(tmp_path, monkeypatch):
    import gc

    monkeypatch.setenv("RELAY_CACHE_DIR", str(tmp_path))
    mod = _model(8)
    lib = relay_core.build(mod)
    path = lib.path
    assert os.path.dirname(path) == str(tmp_path)
    del lib
    gc.collect()
    assert os.path.exists(os.path.join(path, "manifest.json"))
