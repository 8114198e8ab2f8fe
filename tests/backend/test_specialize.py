"""Where a lowering cannot take an unknown extent, `build` returns a module that compiles one
version per concrete input shape at its first call (cached on disk), instead of failing."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
from relay_core.backend.runtime import CompiledModule
from relay_core.backend.specialize import SpecializingModule
from relay_core.errors import InputError, RelayError
from relay_core.ir import Any, Function, IRModule, TensorType, Var, call


def _static_only_module():
    # one_hot's lowering takes its extents from the type (tests/backend/
    # unknown_dims_expected_failures.txt; sort, the example until session 25, takes run-time
    # dims now): 2 * one_hot(x > 0, depth 2)
    x = Var("x", TensorType((Any, 5), "float32"))
    idx = call("cast", call("greater", x, relay_core.ir.const(np.float32(0))), dtype="int64")
    on, off = relay_core.ir.const(np.float32(1)), relay_core.ir.const(np.float32(0))
    y = call("one_hot", idx, on, off, depth=2)
    return relay_core.infer_type(IRModule.from_expr(Function((x,), call("add", y, y))))


def _want(x):
    return 2 * np.eye(2, dtype=np.float32)[(x > 0).astype(np.int64)]


def test_build_specialises_instead_of_failing(tmp_path, monkeypatch):
    monkeypatch.setenv("RELAY_CACHE_DIR", str(tmp_path))
    mod = _static_only_module()
    with pytest.raises(RelayError, match="unknown at compile time"):
        relay_core.build(mod, specialize=False)
    lib = relay_core.build(mod)
    assert isinstance(lib, SpecializingModule)
    assert [i.shape for i in lib.get_inputs()] == [[None, 5]]
    rng = np.random.default_rng(0)
    for n in (2, 7, 2):
        x = rng.normal(size=(n, 5)).astype("float32")
        (got,) = lib(x)
        np.testing.assert_allclose(got, _want(x), rtol=1e-6)
    assert lib.versions == [((7, 5),), ((2, 5),)]  # least recently used first
    (got,) = lib.run(None, {"x": np.ones((3, 5), "float32")})
    assert got.shape == (3, 5, 2)
    with pytest.raises(InputError, match="shape"):
        lib(np.ones((2, 4), "float32"))
    with pytest.raises(RelayError, match="shape"):
        lib.export(str(tmp_path / "out"))
    # the versions went through the on-disk cache: a new module loads them
    again = relay_core.build(mod)
    again(np.ones((7, 5), "float32"))
    assert again._versions[((7, 5),)].cache_hit


def test_lru_keeps_max_versions(tmp_path, monkeypatch):
    monkeypatch.setenv("RELAY_CACHE_DIR", str(tmp_path))
    lib = relay_core.build(_static_only_module())
    lib.max_versions = 2
    for n in (1, 2, 3):
        lib(np.ones((n, 5), "float32"))
    assert lib.versions == [((2, 5),), ((3, 5),)]
    assert all(isinstance(v, CompiledModule) for v in lib._versions.values())


def test_budget_reaches_every_version(tmp_path, monkeypatch):
    monkeypatch.setenv("RELAY_CACHE_DIR", str(tmp_path))
    lib = relay_core.build(_static_only_module())
    lib.max_iterations, lib.timeout = 10, 2.5
    lib(np.ones((2, 5), "float32"))
    (version,) = lib._versions.values()
    assert (version.max_iterations, version.timeout) == (10, 2.5)


@pytest.mark.parametrize("op", ["conv", "pool"])
def test_same_padding_over_unknown_spatial_dims_specialises(tmp_path, monkeypatch, op):
    """A Keras application saved with input_shape (None, None, 3): SAME padding over unknown
    spatial extents cannot be resolved at compile time; the build specialises per input shape
    (it failed with a TypeError inside the convolution's rule)."""
    monkeypatch.setenv("RELAY_CACHE_DIR", str(tmp_path))
    x = Var("x", TensorType((Any, 3, Any, Any), "float32"))
    if op == "conv":
        w = relay_core.ir.const(np.random.default_rng(1).normal(size=(4, 3, 3, 3)).astype("f4"))
        y = call("nn.conv2d", x, w, strides=(2, 2), auto_pad="SAME_UPPER")
    else:
        y = call("nn.max_pool2d", x, pool_size=(3, 3), strides=(2, 2), auto_pad="SAME_UPPER")
    mod = relay_core.infer_type(IRModule.from_expr(Function((x,), y)))
    lib = relay_core.build(mod)
    assert isinstance(lib, SpecializingModule)
    for shape in ((1, 3, 9, 7), (2, 3, 8, 8)):
        xv = np.random.default_rng(0).normal(size=shape).astype("float32")
        got = lib(xv)
        got = got[0] if isinstance(got, (list, tuple)) else got
        want = np.asarray(relay_core.evaluate(mod, xv))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_rule_that_fails_on_a_run_time_extent_specialises(tmp_path, monkeypatch):
    """adaptive_avg_pool2d's rule plans its windows from Python ints: with unknown spatial dims
    it raised a raw TypeError out of `build` (RAFT's grid_sample did the same). A rule that
    fails on a `?` extent is a LoweringError now, and the build compiles per input shape."""
    from relay_core.ops import all_ops

    monkeypatch.setenv("RELAY_CACHE_DIR", str(tmp_path))
    x = Var("x", TensorType((Any, 3, Any, Any), "float32"))
    y = call("nn.adaptive_avg_pool2d", x, output_size=(2, 3))
    mod = relay_core.infer_type(IRModule.from_expr(Function((x,), y)))
    with pytest.raises(RelayError, match="needs static extents"):
        relay_core.build(mod, specialize=False)
    lib = relay_core.build(mod)
    assert isinstance(lib, SpecializingModule)
    op = all_ops()["nn.adaptive_avg_pool2d"]
    for shape in [(1, 3, 5, 7), (2, 3, 4, 4)]:
        a = np.random.default_rng(0).normal(size=shape).astype("float32")
        want = op.ref([a], op.make_attrs(output_size=(2, 3)))
        np.testing.assert_allclose(lib(a)[0], want, rtol=1e-5, atol=1e-6)
