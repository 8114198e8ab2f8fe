"""Deployment: an exported artifact runs in a fresh virtual environment that has only numpy
(no llvmlite, no ML framework), and gives the outputs the compiled module gave."""

from __future__ import annotations

import json
import os
import subprocess
import venv
from pathlib import Path

import numpy as np
import pytest

import relay_import as ri

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo_cnn.onnx"

_CHILD = """
import json, sys
import numpy as np
import relay_import as ri
lib = ri.load_compiled(sys.argv[1])
x = np.load(sys.argv[2])
np.save(sys.argv[3], lib(x)[0])
heavy = sorted({m.split('.')[0] for m in sys.modules} & {'llvmlite', 'onnx', 'onnxruntime', 'torch',
               'tensorflow', 'keras', 'ml_dtypes', 'scipy'})
print(json.dumps({"heavy": heavy, "names": [lib.input_names, lib.output_names]}))
"""


@pytest.fixture(scope="module")
def numpy_only_python(tmp_path_factory):
    """A new venv with no packages, plus a directory on its path that holds only numpy."""
    d = tmp_path_factory.mktemp("npenv")
    venv.EnvBuilder(with_pip=False).create(d / "venv")
    site = Path(np.__file__).resolve().parents[1]
    only = d / "only_numpy"
    only.mkdir()
    for name in ("numpy", "numpy.libs"):
        if (site / name).exists():
            (only / name).symlink_to(site / name)
    return d / "venv" / "bin" / "python", only


def test_artifact_runs_with_only_numpy(tmp_path, numpy_only_python):
    python, only = numpy_only_python
    lib = ri.compile(ri.load(str(DEMO)))
    art = lib.export(str(tmp_path / "demo.relaylib"))
    x = np.random.default_rng(3).standard_normal((1, 3, 32, 32)).astype("float32")
    np.save(tmp_path / "x.npy", x)
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": f"{only}{os.pathsep}{ROOT}",
        "PYTHONNOUSERSITE": "1",
    }
    p = subprocess.run(
        [str(python), "-c", _CHILD, str(art), str(tmp_path / "x.npy"), str(tmp_path / "y.npy")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout.strip().splitlines()[-1])
    assert info["heavy"] == []
    assert info["names"] == [["image"], ["probs"]]
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), lib(x)[0])


def test_fresh_venv_cannot_import_frameworks(numpy_only_python):
    python, only = numpy_only_python
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(only), "PYTHONNOUSERSITE": "1"}
    p = subprocess.run([str(python), "-c", "import llvmlite"], capture_output=True, env=env)
    assert p.returncode != 0  # the environment really lacks the compiler
