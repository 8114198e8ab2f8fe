"""CLI errors on the TensorFlow path are one line: TF's own log lines (C++ start-up notices,
Python loggers) are dropped while converting (issue 11). `relay` runs as a user types it, with
no TF_CPP_MIN_LOG_LEVEL in its environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _relay(*args):
    env = {
        k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "RELAY_TF_LOGS")
    }
    return subprocess.run(
        [sys.executable, "-m", "relay_import", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )


def _bad_saved_model(tmp_path: Path) -> Path:
    d = tmp_path / "sm"
    d.mkdir()
    (d / "saved_model.pb").write_bytes(b"\x08\x96\x01 not a SavedModel " * 20)
    return d


def _bad_keras(tmp_path: Path) -> Path:
    p = tmp_path / "m.keras"
    p.write_bytes(b"PK\x03\x04 truncated zip")
    return p


@pytest.mark.slow
@pytest.mark.parametrize("make", [_bad_saved_model, _bad_keras], ids=["saved_model", "keras"])
def test_bad_tf_model_error_is_one_line(tmp_path, make):
    model = make(tmp_path)
    p = _relay("convert", "-q", model)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 1, p.stderr
    assert len(lines) == 1 and lines[0].startswith("relay convert: error:"), p.stderr
    assert "Traceback" not in p.stderr and str(model) in lines[0]


@pytest.mark.slow
def test_progress_and_error_only(tmp_path):
    """Without --quiet: our progress line, then the error; nothing of TF's in between."""
    p = _relay("inspect", _bad_saved_model(tmp_path))
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 1
    assert len(lines) == 2, p.stderr
    assert lines[0].startswith("converting") and lines[1].startswith("relay inspect: error:")
