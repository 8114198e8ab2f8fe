"""`relay convert-batch` without Ray: a process pool converts, verifies and compiles a
manifest into the store; the artifacts match onnxruntime and a service on the same store
serves them by name without compiling."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.relay_import.batch_util import check_results, write_manifest
from tests.relay_import.serve_util import ROOT

pytestmark = pytest.mark.slow


def test_convert_batch_locally(tmp_path):
    manifest, models = write_manifest(tmp_path)
    store = tmp_path / "store"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "relay_import.cli",
            "convert-batch",
            manifest,
            "--store",
            str(store),
            "--workers",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert p.returncode == 1, p.stderr  # one model is unsupported, one missing
    assert "| cnn |" in p.stdout and "SVMRegressor" in p.stdout and "Traceback" not in p.stderr
    key = p.stdout.strip().splitlines()[-1].split("results: ", 1)[1].split(str(store) + "/")[1]
    rows = json.loads((store / key / "results.json").read_text())
    table = (store / key / "summary.md").read_text().strip()
    check_results(
        {"key": key, "rows": rows, "table": table, "ok": False}, str(store), models, tmp_path
    )
