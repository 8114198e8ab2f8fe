"""Code generation in units (issue 14): one LLVM module per kernel and per shared helper,
compiled in parallel, cached per unit across models; `build(timings=True)` reports each stage.
Every answer is compared with the reference interpreter."""

from __future__ import annotations

import os
import textwrap

import numpy as np
import pytest

import relay_core
from relay_core.backend import kernel_cache, split
from relay_core.backend.kernel_cache import KernelCache
from relay_core.ir import Function, IRModule, Tuple, call, const, var
from relay_core.ir.types import Any
from relay_core.passes import PassContext
from tests.backend.support import run_python
from tests.require import require


def _conv_relu(h, rng, cin, cout, stride=1):
    w = const(rng.standard_normal((cout, cin, 3, 3)).astype("float32") * 0.3)
    b = const(rng.standard_normal(cout).astype("float32"))
    h = call("nn.conv2d", h, w, strides=(stride, stride), padding=(1, 1))
    return call("nn.relu", call("nn.bias_add", h, b))


def _model(seed: int, tail: str):
    """A shared stem (conv 3->8 + relu on 1x3x16x16: same shapes, other weights per seed) and a
    tail that differs between the models."""
    rng = np.random.default_rng(seed)
    x = var("x", (1, 3, 16, 16))
    h = _conv_relu(x, rng, 3, 8)
    if tail == "pool":
        h = call("nn.max_pool2d", h, pool_size=(2, 2), strides=(2, 2))
        h = call("nn.global_avg_pool2d", _conv_relu(h, rng, 8, 16))
        y = call("nn.softmax", call("reshape", h, newshape=(1, 16)))
    else:
        h = _conv_relu(h, rng, 8, 8, 2)
        y = call("sigmoid", call("nn.global_avg_pool2d", h))
    return relay_core.infer_type(IRModule.from_expr(Function((x,), Tuple((y, h)))))


def _check(lib, mod, seed=1):
    x = np.random.default_rng(seed).standard_normal((1, 3, 16, 16)).astype("float32")
    want = relay_core.evaluate(mod, x)
    got = lib(x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def _units(lib) -> dict:
    return {u["name"]: u for u in lib.timings.units if u["name"] != "(entry)"}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_split_build_matches_interpreter(cache_dir, monkeypatch, jobs):
    monkeypatch.setenv("RELAY_COMPILE_JOBS", jobs)
    for tail in ("pool", "stride"):
        mod = _model(0, tail)
        lib = relay_core.build(mod)
        _check(lib, mod)
        where = {u["where"] for u in lib.timings.units}
        assert where <= {"here", "worker", "cache"}
        if jobs == "1":
            assert "worker" not in where


def test_kernel_cache_shared_across_models(cache_dir):
    a = relay_core.build(_model(0, "pool"))
    ua = _units(a)
    assert ua and all(u["where"] != "cache" for u in ua.values())
    mod_b = _model(7, "stride")  # the same stem layer, other weights, another tail
    b = relay_core.build(mod_b)
    _check(b, mod_b)
    ub = _units(b)
    shared = set(ua) & set(ub)
    assert shared, "the stem's kernel and the GEMM helpers are the same units"
    assert all(ub[n]["where"] == "cache" for n in shared)
    assert any(u["where"] != "cache" for u in ub.values()), "the new tail is compiled"
    # an identical rebuild bypassing the model cache compiles nothing
    ctx = PassContext(opt_level=3, dump_ir=lambda n, m: None)  # a hook: past the model cache
    c = relay_core.build(_model(0, "pool"), pass_context=ctx)
    assert all(u["where"] == "cache" for u in _units(c).values())


def test_identical_kernels_are_one_unit():
    x = var("x", (1, 64))
    rng = np.random.default_rng(3)

    def layer(h, k):  # the same shapes and ops: one kernel, called twice
        w = const(rng.standard_normal((64, 64)).astype("float32") * 0.1)
        return call("tanh", call("nn.dense", h, w))

    y = layer(layer(x, 0), 1)
    mod = relay_core.infer_type(IRModule.from_expr(Function((x,), y)))
    lib = relay_core.build(mod, cache=False)
    names = [u["name"] for u in lib.timings.units]
    assert len(names) == len(set(names))
    xv = rng.standard_normal((1, 64)).astype("float32")
    np.testing.assert_allclose(lib(xv)[0], relay_core.evaluate(mod, xv), rtol=1e-5, atol=1e-6)


def test_unit_symbols_do_not_depend_on_kernel_numbering():
    """The same layer, numbered k0 in one module and k2 in another, is the same unit."""
    from llvmlite import ir

    def module(prefix_kernels: int):
        m = ir.Module("m")
        names = []
        for k in range(prefix_kernels + 1):
            fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [ir.IntType(32)]), f"k{k}")
            fn.linkage = "internal"
            b = ir.IRBuilder(fn.append_basic_block("entry"))
            helper = m.globals.get(f"k{k}.par.{k + 1}") or ir.Function(
                m, ir.FunctionType(ir.VoidType(), [ir.IntType(32)]), f"k{k}.par.{k + 1}"
            )
            helper.linkage = "internal"
            hb = ir.IRBuilder(helper.append_basic_block("entry"))
            hb.ret_void()
            b.call(helper, [ir.Constant(ir.IntType(32), 7 if k == prefix_kernels else k)])
            b.ret_void()
            names.append(fn.name)
        entry = ir.Function(m, ir.FunctionType(ir.VoidType(), []), "relay_run")
        b = ir.IRBuilder(entry.append_basic_block("entry"))
        for n in names:
            b.call(m.globals[n], [ir.Constant(ir.IntType(32), 1)])
        b.ret_void()
        return m, names

    m1, n1 = module(0)
    m2, n2 = module(2)
    _, u1 = split.split_module(m1, n1)
    main2, u2 = split.split_module(m2, n2)
    assert u1[0].name in {u.name for u in u2}
    assert u1[0].text in {u.text for u in u2}
    assert all(u.name in main2.text for u in u2)


def test_kernel_cache_evicts_least_recently_used(tmp_path):
    kc = KernelCache(str(tmp_path), "salt", limit=3000)
    keys = [kc.key(f"unit {i}", 3) for i in range(5)]
    for i, k in enumerate(keys):
        kc.put(k, bytes(1000))
        os.utime(kc._path(k), (1000 + i, 1000 + i))
    os.utime(kc._path(keys[0]), (5000, 5000))  # used last
    assert kc.evict() > 0
    left = {k for k in keys if os.path.exists(kc._path(k))}
    assert sum(os.path.getsize(kc._path(k)) for k in left) <= 3000 * 0.8
    assert keys[0] in left and keys[1] not in left
    # another process evicting the same files meanwhile: nothing raises
    ents = kc.entries()
    for _, _, p in ents:
        os.unlink(p)
    kc.entries = lambda: ents
    kc.limit = 0
    assert kc.evict() == 0
    assert kc.get(keys[0]) is None


def test_build_keeps_kernel_cache_within_its_limit(cache_dir, monkeypatch):
    monkeypatch.setenv("RELAY_KERNEL_CACHE_MB", "0.02")
    mod = _model(0, "pool")
    lib = relay_core.build(mod)
    _check(lib, mod)
    kc = KernelCache(cache_dir, "", limit=kernel_cache.limit_bytes())
    assert sum(s for _, s, _ in kc.entries()) <= kc.limit
    assert lib.timings.notes["evicted_bytes"] > 0
    mod2 = _model(5, "stride")
    _check(relay_core.build(mod2), mod2)


def test_empty_cache_dir_disables_kernel_cache(monkeypatch):
    monkeypatch.setenv("RELAY_CACHE_DIR", "")
    mod = _model(0, "pool")
    for _ in range(2):
        lib = relay_core.build(mod)
        assert all(u["where"] != "cache" for u in lib.timings.units)
    _check(lib, mod)


_BUILDER = textwrap.dedent(
    """
    import sys
    import numpy as np
    import relay_core
    from relay_core.passes import PassContext
    from tests.backend.test_split_build import _model, _check
    for k in range(3):
        mod = _model(int(sys.argv[1]) + k, ("pool", "stride")[k % 2])
        ctx = PassContext(opt_level=3, dump_ir=lambda n, m: None)  # past the model cache
        _check(relay_core.build(mod, pass_context=ctx), mod)
    print("ok")
    """
)


def test_concurrent_builders_share_the_kernel_cache(cache_dir, monkeypatch):
    monkeypatch.setenv("RELAY_KERNEL_CACHE_MB", "0.04")  # evicting while the other reads
    outs = run_python([["-c", _BUILDER, s] for s in ("0", "1")])
    assert [o.strip() for o in outs] == ["ok"] * 2
    left = [f for _, _, f in KernelCache(cache_dir, "").entries()]
    kernels = os.path.join(cache_dir, "kernels")
    half_written = [f for _, _, fs in os.walk(kernels) for f in fs if f.endswith(".tmp")]
    assert left and not half_written


_STAGES = (
    "passes",
    "lower + generate IR",
    "split into units",
    "llvm",
    "optimise (cpu",
    "emit objects (cpu",
    "link",
    "weights + manifest",
    "total",
)


def test_timings_report_every_stage(cache_dir, capsys):
    mod = _model(0, "pool")
    lib = relay_core.build(mod, timings=True)
    err = capsys.readouterr().err
    for stage in _STAGES:
        assert stage in err, stage
    assert "FuseOps" in err and "largest kernels by IR size" in err and "nn.conv2d" in err
    names = [s[0] for s in lib.timings.stages]
    assert names.index("passes") < names.index("llvm") < names.index("link")
    assert lib.timings.total >= sum(s for _, s, _ in lib.timings.stages) * 0.5
    hit = relay_core.build(mod, timings=True)
    assert hit.cache_hit and "load (model cache hit)" in capsys.readouterr().err
    _check(hit, mod)


def test_timings_name_the_ops_of_dynamic_shape_kernels(cache_dir, capsys):
    """A model with an unknown batch builds a VM plan: its kernels are named with their ops too
    (they were all counted as shared helpers, and the kernel table was empty)."""
    rng = np.random.default_rng(0)
    x = var("x", (Any, 3, 16, 16))
    mod = relay_core.infer_type(IRModule.from_expr(Function((x,), _conv_relu(x, rng, 3, 8))))
    lib = relay_core.build(mod, timings=True)
    err = capsys.readouterr().err
    kernels = [u for u in lib.timings.units if u["ops"]]
    assert kernels and all("nn.conv2d" in u["ops"] for u in kernels), lib.timings.units
    assert "the 0 largest" not in err and "nn.conv2d" in err
    xs = rng.standard_normal((2, 3, 16, 16)).astype("float32")
    np.testing.assert_allclose(lib(xs)[0], relay_core.evaluate(mod, xs), rtol=1e-4, atol=1e-5)


def test_nested_constant_loops_are_not_fully_unrolled(cache_dir, monkeypatch):
    """An NHWC batch-norm + ReLU kernel (loops of 14 x 14 x 704 floats) compiles at O3 to a
    few KB of code; O3's default unroll threshold had flattened the two inner loops into ~70 KB
    (0.5 s of LLVM time per kernel; DenseNet121 has 58 of them)."""
    from relay_core.backend import llvm_worker
    from relay_core.backend.llvm_target import host

    texts = {}
    real = split.split_module

    def spy(llmod, kernels):
        main, units = real(llmod, kernels)
        texts.update((u.name, u.text) for u in units if u.kernels)
        return main, units

    monkeypatch.setattr(split, "split_module", spy)
    rng = np.random.default_rng(0)
    x = var("x", (1, 14, 14, 704))
    scale = const(rng.standard_normal(704).astype("float32"))
    shift = const(rng.standard_normal(704).astype("float32"))
    y = call("nn.relu", call("add", call("multiply", x, scale), shift))
    mod = relay_core.infer_type(IRModule.from_expr(Function((x,), y)))
    lib = relay_core.build(mod)
    (text,) = texts.values()
    obj = llvm_worker.compile_text(text, *host(), 3)[0]
    assert len(obj) < 8192, len(obj)  # 16 KB with O3's default threshold
    xs = rng.standard_normal((1, 14, 14, 704)).astype("float32")
    np.testing.assert_allclose(lib(xs)[0], relay_core.evaluate(mod, xs), rtol=1e-5, atol=1e-6)


def test_cli_compile_timings(cache_dir, tmp_path):
    onnx = require("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype("float32"), "w")
    g = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["y"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        [w],
    )
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    out_dir = str(tmp_path / "art")
    (out,) = run_python(
        [["-m", "relay_import.cli", "compile", str(path), "-o", out_dir, "--timings"]]
    )
    for stage in ("convert", *_STAGES, "export"):
        assert stage in out, stage
