"""Progress lines on stderr (plain in a log, rich on a terminal, none with --quiet), stage events
from the core through a hook, and `relay bench`'s exact run count, spread and load warning."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from .clirun import DEMO, ROOT, python, relay


def test_one_line_per_stage_when_stderr_is_a_log(tmp_path):
    env = {"RELAY_CACHE_DIR": str(tmp_path / "cache")}  # cold: every stage runs
    p = relay("compile", DEMO, "-o", tmp_path / "a.relaylib", env=env)
    lines = p.stderr.splitlines()
    assert re.fullmatch(r"converting demo_cnn\.onnx… \d+\.\d+ s", lines[0]), p.stderr
    assert any(re.fullmatch(r"optimising… \d+\.\d+ s", ln) for ln in lines), p.stderr
    assert any(re.fullmatch(r"compiling \d+ kernels… \d+\.\d+ s", ln) for ln in lines), p.stderr
    assert p.stdout.strip() == f"wrote {tmp_path / 'a.relaylib'}"
    p = relay("compile", DEMO, "-o", tmp_path / "b.relaylib", env=env)
    assert re.search(r"^compiling… cache hit \d+\.\d+ s$", p.stderr, re.M), p.stderr
    p = relay("compile", DEMO, "-o", tmp_path / "c.relaylib", "--quiet", env=env)
    assert p.stderr == "" and p.stdout == ""


def test_rich_progress_on_a_terminal(tmp_path):
    import pty

    master, slave = pty.openpty()
    env = dict(os.environ, RELAY_CACHE_DIR=str(tmp_path / "cache"), COLUMNS="120")
    proc = subprocess.Popen(
        [sys.executable, "-m", "relay_import", "compile", str(DEMO), "-o", str(tmp_path / "a")],
        stdout=subprocess.PIPE,
        stderr=slave,
        cwd=ROOT,
        env=env,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=600)
    os.close(master)
    screen = b"".join(chunks).decode(errors="replace")
    assert proc.returncode == 0
    assert "✓" in screen and "converting demo_cnn.onnx" in screen and "compiling" in screen


def test_core_announces_stages_through_a_hook_without_importing_the_front_end(tmp_path):
    code = """
import sys, numpy as np
import relay_core
from relay_core import events
mod = relay_core.parse('def @main(%x: Tensor[(4), float32]) { nn.relu(%x) }')
seen = []
with events.listening(lambda e: seen.append((e.kind, e.stage))):
    relay_core.build(mod, cache=False)
assert ("start", "optimising") in seen and ("end", "compiling") in seen, seen
assert not {"rich", "relay_import"} & set(sys.modules), sorted(sys.modules)
print("ok")
"""
    assert python(code).stdout.strip() == "ok"


def test_bench_runs_exactly_and_reports_spread():
    out = relay("bench", DEMO, "--runs", "7", "--warmup", "2").stdout
    assert "bench " in out and "7 interleaved pairs" in out
    rows = {}
    for name in ("relay", "onnxruntime"):
        m = re.search(rf"^\s+{name}\s+(\S+)\s+(\S+)\s+(\S+)\s*$", out, re.M)
        assert m, out
        rows[name] = [float(v) for v in m.groups()]
        assert rows[name][0] <= rows[name][1] <= rows[name][2]  # p10 <= median <= p90
    m = re.search(r"median (\S+) \(p10 (\S+), p90 (\S+)\)", out)
    assert m and float(m.group(2)) <= float(m.group(1)) <= float(m.group(3)), out
    assert "not timed: build" in out and "first call relay" in out


def test_bench_warns_when_the_machine_is_busy():
    code = """
import os, sys
os.getloadavg = lambda: (float(sys.argv[1]), 0.0, 0.0)
from relay_import.cli import main
sys.exit(main(["bench", sys.argv[2], "--runs", "3", "-q"]))
"""
    busy = python(code, "9.5", DEMO).stdout
    assert "warning: the machine is busy (load average 9.5" in busy
    quiet = python(code, "0.0", DEMO).stdout
    assert "warning" not in quiet
