"""`make bench` (benchmarks/run.py): a smoke run in --quick mode on one small model, and the
background load it starts being stopped again. No timing assertions: figures go to
benchmarks/RESULTS.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from benchmarks.run import Spinners

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_spinners_stop_on_exception():
    with pytest.raises(KeyboardInterrupt):
        with Spinners(2) as s:
            procs = list(s.procs)
            assert len(procs) == 2 and all(p.poll() is None for p in procs)
            raise KeyboardInterrupt
    assert all(p.poll() is not None for p in procs)


@pytest.mark.slow
def test_quick_run_writes_both_tables(tmp_path):
    out, raw = tmp_path / "results.md", tmp_path / "results.json"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "benchmarks.run", "--models", "lstm", "--batch", "1"]
    cmd += ["--quick", "--out", str(out), "--json", str(raw)]
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    text = out.read_text()
    assert "## Quiet machine" in text and "## Busy machine" in text
    assert "**geomean, batch 1**" in text
    (row,) = json.loads(raw.read_text())["rows"]
    # every runtime agreed with its reference, so every one was timed in both modes
    assert all(s == "ok" for s in row["status"].values()), row["status"]
    for mode in ("quiet", "busy"):
        assert set(row["modes"][mode]["ms"]) == {"ort", "ours_onnx", "ours_native", "framework"}
        assert len(row["modes"][mode]["ratio"]) == 3
