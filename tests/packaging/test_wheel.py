"""The wheel, installed as a user installs it: built with `pip wheel`, installed (not editable)
into a new virtual environment outside the checkout with only the ONNX extra, then the `relay`
command used there: demo, compile, run, verify, bench, --version, python -m relay_import.

One test (so that xdist workers do not each build a venv); pip takes the dependencies from its
cache. Cost measured on 2 busy cores: wheel ~6 s, venv + install ~17 s, the commands ~30 s (a
cold compile of the demo model).
"""

from __future__ import annotations

import configparser
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# What a source tree needs to build the wheel (a copy: setuptools' build/ in the checkout may
# hold stale files, and nothing from the checkout must leak into the installed package).
SOURCES = [
    "setup.py",
    "setup.cfg",
    "pyproject.toml",
    "MANIFEST.in",
    "README.md",
    "LICENSE",
    "CHANGELOG.md",
    "examples",
    "relay_core",
    "converters",
    "relay_import",
]

pytestmark = pytest.mark.slow


def _run(cmd, cwd, env, timeout=900):
    p = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    if p.returncode != 0:
        raise AssertionError(
            f"{' '.join(map(str, cmd))} -> {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
        )
    return p


def _install(base: Path):
    """(venv bin dir, a working directory outside the checkout, environment, the wheel)."""
    src = base / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "*.o")
    for name in SOURCES:
        p = ROOT / name
        if p.is_dir():
            shutil.copytree(p, src / name, ignore=ignore)
        else:
            shutil.copy2(p, src / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["RELAY_CACHE_DIR"] = str(base / "cache")  # cold: the C runtime compiles from the wheel
    dist = base / "dist"
    _run([sys.executable, "-m", "pip", "wheel", src, "--no-deps", "-w", dist, "-q"], base, env)
    (wheel,) = dist.glob("*.whl")
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], base, env)
    py = venv / "bin" / "python"
    _run(
        [sys.executable, "-m", "pip", "--python", py, "install", "-q", f"{wheel}[onnx]"], base, env
    )
    work = base / "work"
    work.mkdir()
    return venv / "bin", work, env, wheel


def test_wheel_installs_and_runs_outside_the_checkout(tmp_path):
    installed = _install(tmp_path)
    _check_package_data(installed)
    _check_installed_package(installed)
    _check_commands(installed)


def _check_package_data(installed):
    import zipfile

    *_, wheel = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    for want in (
        "relay_core/backend/c/relay_rt.c",
        "relay_import/examples/demo_cnn.onnx",
        "relay_import/examples/mlp_loop.relay",
        "relay_import/py.typed",
        "relay_core/py.typed",
        "converters/py.typed",
    ):
        assert want in names, want
    lic = next(n for n in names if n.endswith("LICENSE"))
    text = zipfile.ZipFile(wheel).read(lic).decode()
    assert "Apache License" in text and "Version 2.0" in text and "END OF TERMS" in text


def _check_installed_package(installed):
    bindir, work, env, _ = installed
    code = (
        "import json, relay_import, relay_core, sys; "
        "print(json.dumps([relay_import.__file__, relay_core.__file__, relay_import.__version__,"
        " sorted(m for m in ('torch', 'tensorflow') if m in sys.modules)]))"
    )
    files = json.loads(_run([bindir / "python", "-c", code], work, env).stdout)
    venv = str(bindir.parent)
    assert files[0].startswith(venv) and files[1].startswith(venv), files
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    assert cfg["metadata"]["version"] == "attr: relay_import.__version__"
    import relay_import

    assert files[2] == relay_import.__version__
    out = _run([bindir / "relay", "--version"], work, env).stdout
    assert out.startswith(f"relay {relay_import.__version__} (") and "onnxruntime" in out
    assert _run([bindir / "python", "-m", "relay_import", "--version"], work, env).stdout == out


def _check_commands(installed):
    bindir, work, env, _ = installed
    relay = bindir / "relay"
    p = _run([relay, "demo", "-o", "demo"], work, env)
    assert "== demo succeeded" in p.stdout and "PARITY" in p.stdout
    assert "compiling" in p.stderr  # progress lines, stderr not being a terminal
    assert (work / "demo" / "verify_report.html").exists()
    model = json.loads(
        _run(
            [
                bindir / "python",
                "-c",
                "import relay_import, json; "
                "print(json.dumps(str(relay_import.examples_dir() / 'demo_cnn.onnx')))",
            ],
            work,
            env,
        ).stdout
    )
    assert model.startswith(str(bindir.parent))  # found inside the installed package
    _run([relay, "compile", model, "-o", "cnn.relaylib"], work, env)
    assert (work / "cnn.relaylib" / "lib.so").exists()
    out = _run([relay, "run", "cnn.relaylib", "--fill", "random", "--print-time"], work, env)
    assert "probs: float32[1, 10]" in out.stdout and "first call:" in out.stdout
    v = _run([relay, "verify", model, "--per-layer"], work, env).stdout
    assert "PARITY with onnxruntime" in v and "per-layer comparison: 23 layers" in v
    b = _run([relay, "bench", model, "--runs", "5"], work, env).stdout
    assert "5 interleaved pairs" in b and "median" in b
