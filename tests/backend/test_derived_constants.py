"""Derived constants (backend/derived.py): a kernel layout larger than its weight (Winograd
F(2x2, 3x3)'s transformed 3x3 filters, 16/9 of the bytes) is not stored in the artifact; the
library's relay_prepare computes it at load time (C runtime relay_derive.c), bit for bit what the
kernels' numpy prepack gives. weights.bin holds each weight once."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

import relay_core
from relay_core.backend.kernels import conv_winograd, conv_winograd_cl
from relay_core.backend.kernels.gemm_core import gemm_tile
from relay_core.errors import ModelLoadError
from relay_core.ir import Function, If, IRModule, call, const, var

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
C_EXAMPLE = os.path.join(ROOT, "examples", "c", "run_model.c")


# n, c, size, o, data layout, kernel layout, weight scale ("wide": exponents over 2^+-40)
@pytest.fixture(autouse=True)
def _winograd(monkeypatch):
    """These small convolutions (few channels) go to conv_strips by the rules: Winograd here."""
    monkeypatch.setattr(conv_winograd, "worth_transforms", lambda P, C, O: True)


CASES = [
    (1, 32, 16, 32, "NCHW", "OIHW", 1.0),  # MR-row A panels of U
    (1, 17, 6, 40, "NCHW", "OIHW", 1.0),  # few tiles: NR-column panels of U^T, O % NR != 0
    (1, 20, 12, 37, "NHWC", "HWIO", 1.0),  # channel-last kernel
    (2, 24, 16, 24, "NCHW", "HWIO", 1e-3),  # weights read through permuted strides
    (1, 64, 8, 64, "NCHW", "OIHW", "wide"),
]


def _conv_module(n, c, size, o, layout, klayout, scale, seed=0):
    rng = np.random.default_rng(seed)
    wc = rng.standard_normal((o, c, 3, 3)).astype("float32")
    if scale == "wide":
        wc = (wc * np.exp2(rng.integers(-40, 40, wc.shape))).astype("float32")
    else:
        wc = (wc * scale).astype("float32")
    w = np.ascontiguousarray(wc.transpose(["OIHW".index(ch) for ch in klayout]))
    xs = (n, c, size, size) if layout == "NCHW" else (n, size, size, c)
    x = var("x", xs)
    y = call(
        "nn.conv2d",
        x,
        const(w),
        padding=(1, 1, 1, 1),
        data_layout=layout,
        kernel_layout=klayout,
        channels=o,
        kernel_size=(3, 3),
    )
    mod = relay_core.infer_type(IRModule.from_expr(Function((x,), y)))
    return mod, wc, rng.standard_normal(xs).astype("float32")


def _derived(lib) -> list:
    return [(k, c) for k, c in enumerate(lib.manifest["constants"]) if "derived" in c]


def _slot(lib, k: int, n: int) -> np.ndarray:
    p = ctypes.cast(int(lib._const_table[k]), ctypes.POINTER(ctypes.c_uint32))
    return np.ctypeslib.as_array(p, shape=(n,)).copy()


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[4]}-{c[5]}-{c[1]}x{c[3]}")
def test_winograd_weights_derived_at_load_bit_for_bit(case):
    mod, wc, x = _conv_module(*case)
    lib = relay_core.build(mod)
    np.testing.assert_allclose(
        lib(x)[0], np.asarray(relay_core.evaluate(mod, x)), rtol=2e-5, atol=2e-5 * np.abs(wc).max()
    )
    derived = _derived(lib)
    assert len(derived) == 1
    k, entry = derived[0]
    assert entry["derived"]["routine"] == "winograd_f23"
    assert lib.manifest["derived_bytes"] >= 16 * (wc.size // 9) * 4
    # the file holds the weight once, not its transform
    assert os.path.getsize(os.path.join(lib.path, "weights.bin")) <= 1.05 * wc.nbytes
    t = gemm_tile()
    b_panels = entry["derived"]["params"][0] == 1
    ref = (conv_winograd_cl.prepack if b_panels else conv_winograd.prepack)(wc[:, :, None], t=t)
    assert list(ref.shape) == entry["shape"]
    got = _slot(lib, k, ref.size)
    assert np.array_equal(got, ref.view(np.uint32).ravel())


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_derived_constants_with_any_number_of_threads(threads):
    """Two Winograd convolutions' weights: every panel of both is computed, however many
    threads share the work (one thread: the pool runs the region inline as one shard)."""
    rng = np.random.default_rng(3)
    w1 = rng.standard_normal((80, 48, 3, 3)).astype("float32")
    w2 = rng.standard_normal((40, 80, 3, 3)).astype("float32")
    x = var("x", (1, 48, 20, 20))
    h = call("nn.conv2d", x, const(w1), padding=(1, 1, 1, 1), channels=80, kernel_size=(3, 3))
    y = call("nn.conv2d", h, const(w2), padding=(1, 1, 1, 1), channels=40, kernel_size=(3, 3))
    mod = relay_core.infer_type(IRModule.from_expr(Function((x,), y)))
    lib = relay_core.build(mod, num_threads=threads)
    derived = _derived(lib)
    assert len(derived) == 2
    t = gemm_tile()
    for (k, entry), w in zip(derived, (w1, w2)):
        b_panels = entry["derived"]["params"][0] == 1
        fn = conv_winograd_cl.prepack if b_panels else conv_winograd.prepack
        ref = fn(w[:, :, None], t=t).view(np.uint32).ravel()
        assert np.array_equal(_slot(lib, k, ref.size), ref)
    xv = rng.standard_normal((1, 48, 20, 20)).astype("float32")
    want = np.asarray(relay_core.evaluate(mod, xv))
    np.testing.assert_allclose(lib(xv)[0], want, rtol=1e-4, atol=1e-3)


def test_vm_module_with_derived_constants():
    """The general path (control flow) reads the same constant table."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((32, 32, 3, 3)).astype("float32")
    x, c = var("x", (1, 32, 12, 12)), var("c", (), "bool")
    conv = call("nn.conv2d", x, const(w), padding=(1, 1, 1, 1), channels=32, kernel_size=(3, 3))
    body = If(c, call("nn.relu", conv), call("negative", x))
    mod = relay_core.infer_type(IRModule.from_expr(Function((x, c), body)))
    lib = relay_core.build(mod)
    assert lib.kind == "vm"
    xv = rng.standard_normal((1, 32, 12, 12)).astype("float32")
    for flag in (True, False):
        want = np.asarray(relay_core.evaluate(mod, xv, np.bool_(flag)))
        np.testing.assert_allclose(lib(xv, np.bool_(flag))[0], want, rtol=1e-4, atol=1e-4)
    assert _derived(lib), "the Winograd weights are derived in the VM module too"
    assert os.path.getsize(os.path.join(lib.path, "weights.bin")) <= 1.05 * w.nbytes


def test_c_program_computes_derived_constants(tmp_path):
    """examples/c/run_model.c calls relay_prepare: the same outputs as the Python loader."""
    mod, _, x = _conv_module(1, 32, 16, 48, "NCHW", "OIHW", 1.0, seed=7)
    lib = relay_core.build(mod)
    art = str(tmp_path / "conv.relaylib")
    lib.export(art)
    header = open(os.path.join(art, "model.h")).read()
    assert "RELAY_PREPARE" in header
    assert f"#define RELAY_DERIVED_BYTES {lib.manifest['derived_bytes']}LL" in header
    exe = str(tmp_path / "run_model")
    cc = shutil.which("cc") or shutil.which("gcc")
    subprocess.run(
        [cc, "-O2", "-Wall", "-Werror", "-I", art, C_EXAMPLE, "-ldl", "-o", exe], check=True
    )
    x.tofile(tmp_path / "in0.bin")
    r = subprocess.run(
        [exe, art, str(tmp_path / "in0.bin"), str(tmp_path / "out0.bin")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    got = np.fromfile(tmp_path / "out0.bin", np.float32).reshape(1, 48, 16, 16)
    np.testing.assert_allclose(got, lib(x)[0], rtol=1e-6, atol=1e-6)


def _rewrite_manifest(path: str, edit) -> None:
    mpath = os.path.join(path, "manifest.json")
    with open(mpath) as f:
        m = json.load(f)
    edit(m)
    with open(mpath, "w") as f:
        json.dump(m, f)


def test_format_1_artifact_still_loads(tmp_path):
    """An artifact of format 1 (every constant in weights.bin, no relay_prepare called) loads
    and runs: the loader fills the table from the offsets."""
    rng = np.random.default_rng(2)
    w = rng.standard_normal((24, 40)).astype("float32")
    x = var("x", (3, 40))
    mod = relay_core.infer_type(
        IRModule.from_expr(Function((x,), call("tanh", call("nn.dense", x, const(w)))))
    )
    lib = relay_core.build(mod)
    assert not _derived(lib)
    art = str(tmp_path / "old.relaylib")
    lib.export(art)

    def to_v1(m):
        m["format_version"] = 1
        del m["derived_bytes"], m["prepare"]

    _rewrite_manifest(art, to_v1)
    old = relay_core.load_module(art)
    xv = rng.standard_normal((3, 40)).astype("float32")
    assert np.array_equal(old(xv)[0], lib(xv)[0])


def test_unknown_format_version_is_a_clear_error(tmp_path):
    mod, _, _ = _conv_module(1, 16, 8, 16, "NCHW", "OIHW", 1.0)
    art = str(tmp_path / "future.relaylib")
    relay_core.build(mod).export(art)
    _rewrite_manifest(art, lambda m: m.update(format_version=99))
    with pytest.raises(ModelLoadError, match="format version 99.*recompile"):
        relay_core.load_module(art)
