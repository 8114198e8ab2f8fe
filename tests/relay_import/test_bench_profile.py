"""`relay bench --profile`: time per step (fused group) with its share and, where the group has
convolutions or matrix products, its FLOP count and GFLOP/s."""

from __future__ import annotations

import json
import os

import relay_core
from relay_core.backend.step_info import describe
from relay_import.bench import bench, profile_table

from .clirun import DEMO, relay

SRC = """#[version = "0.0.5"]
def @main(%x: Tensor[(8, 96), float32], %w: Tensor[(40, 96), float32],
          %img: Tensor[(1, 3, 20, 20), float32], %k: Tensor[(12, 3, 3, 3), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = nn.conv2d(%img, %k, strides=[2, 2], padding=[1, 1, 1, 1]);
  (nn.relu(%0), %1)
}
"""


def test_flop_counts_of_dense_and_conv():
    mod = relay_core.parse(SRC)
    assert describe(mod["main"]).flops > 0  # also counts an unfused function
    lib = relay_core.build(mod)
    with open(os.path.join(lib.path, "manifest.json")) as f:
        steps = json.load(f)["steps"]
    got = sorted(s["flops"] for s in steps)
    oh = (20 + 2 - 3) // 2 + 1
    want = sorted([2 * 8 * 40 * 96, 2 * 12 * oh * oh * 3 * 9])
    assert got == want
    # each step names its product with the operands' shapes (and the window's strides)
    sigs = sorted(s["shape"] for s in steps)
    assert sigs == ["conv2d 1x3x20x20 * 12x3x3x3 s2x2", "dense 8x96 * 40x96"], sigs


def test_bench_profile_report():
    r = bench(str(DEMO), runs=3, warmup=1, profile=True)
    assert r.profile and all(s["us"] >= 0 for s in r.profile)
    assert any(s["flops"] > 0 for s in r.profile)
    lines = profile_table(r.profile)
    assert "GFLOP/s" in "\n".join(lines)
    assert "profile:" in r.summary()


def test_cli_bench_profile():
    out = relay("bench", DEMO, "--runs", "3", "--profile").stdout
    assert "profile:" in out and "share" in out and "conv2d" in out


def test_generic_build_profiles_every_kernel_call(monkeypatch, tmp_path):
    """A shape-generic build (VM executor) times each kernel call site; a kernel shared by two
    call sites is two steps."""
    import numpy as np

    monkeypatch.setenv("RELAY_PROFILE", "1")
    mod = relay_core.parse(
        """#[version = "0.0.5"]
def @main(%x: Tensor[(?, 64), float32], %w: Tensor[(64, 64), float32]) {
  %0 = nn.relu(nn.dense(%x, %w));
  nn.relu(nn.dense(%0, %w))
}
"""
    )
    lib = relay_core.build(mod, cache=False, specialize=False)
    assert lib.manifest["kind"] != "graph" and lib.manifest["profile"]
    x, w = np.ones((5, 64), np.float32), np.full((64, 64), 0.01, np.float32)
    for _ in range(3):
        lib(x, w)
    steps = lib.profile()
    assert len(steps) == 2 and steps[0]["kernel"] == steps[1]["kernel"], steps
    assert all(s["us"] > 0 and "nn.dense" in s["ops"] for s in steps), steps
    # FLOP counts of the run-time batch: 5 rows x 64 x 64 multiply-adds per call
    assert [s["flops"] for s in steps] == [2 * 5 * 64 * 64] * 2, steps
    assert all(s["us"] == 0 and s["flops"] == 0 for s in lib.profile())  # read and reset
    assert "profile: 2 steps" in "\n".join(profile_table(steps))
    assert all(s["shape"] == "dense ?x64 * 64x64" for s in steps), steps
    assert "GFLOP per call" in "\n".join(profile_table(steps))
    for n in (2, 4):  # the mean batch of the calls since the last read
        lib(np.ones((n, 64), np.float32), w)
    assert [s["flops"] for s in lib.profile()] == [2 * 3 * 64 * 64] * 2
