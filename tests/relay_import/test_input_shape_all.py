"""`--input-shape NAME=D0,D1,...` / `shapes=` for every frontend: .onnx, .pt2, an nn.Module
(through the API: the CLI reads files), .keras and a SavedModel. Each pins the input, and
`relay verify` compares the compiled module with the source framework at that shape."""

from __future__ import annotations

import numpy as np
import pytest

from tests.require import require

from .clirun import DEMO, relay


@pytest.fixture(scope="module")
def torch_model():
    torch = require("torch")
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(4, 5),
    ).eval()


@pytest.fixture(scope="module")
def pt2(torch_model, tmp_path_factory):
    import torch

    dims = {0: torch.export.Dim("batch", min=1, max=16), 2: torch.export.Dim("h", min=4, max=32)}
    ep = torch.export.export(torch_model, (torch.randn(2, 3, 8, 8),), dynamic_shapes=(dims,))
    path = tmp_path_factory.mktemp("pt") / "dyn.pt2"
    torch.export.save(ep, str(path))
    return path


@pytest.fixture(scope="module")
def keras_model():
    keras = require("keras")
    keras.utils.set_random_seed(0)
    return keras.Sequential(
        [
            keras.Input((None, 8, 3), name="img"),  # batch and height unknown
            keras.layers.Conv2D(4, 3, padding="same", activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(5),
        ]
    )


@pytest.fixture(scope="module")
def keras_file(keras_model, tmp_path_factory):
    path = tmp_path_factory.mktemp("keras") / "m.keras"
    keras_model.save(str(path))
    return path


@pytest.fixture(scope="module")
def saved_model(keras_model, tmp_path_factory):
    path = tmp_path_factory.mktemp("tf") / "saved"
    keras_model.export(str(path), verbose=False)
    return path


def _pinned(model, name, shape):
    """`relay inspect` shows the pinned type; `relay verify` passes against the framework."""
    flag = f"{name}={','.join(map(str, shape))}"
    out = relay("inspect", model, "--input-shape", flag).stdout
    assert f"Tensor[({', '.join(map(str, shape))})" in out, out
    out = relay("verify", model, "--input-shape", flag).stdout
    assert "PARITY" in out, out


def test_onnx(tmp_path):
    _pinned(DEMO, "image", (1, 3, 32, 32))


def test_pt2(pt2, tmp_path):
    _pinned(pt2, "input", (3, 3, 12, 8))
    # the reported crash: compile with the flag
    relay("compile", pt2, "--input-shape", "input=1,3,16,8", "-o", tmp_path / "a.relaylib")
    assert (tmp_path / "a.relaylib" / "manifest.json").exists()


def test_pt2_static_dim_is_a_clear_error(pt2):
    p = relay("inspect", pt2, "--input-shape", "input=1,4,8,8", check=False)
    assert p.returncode == 1, p.stderr
    err = [ln for ln in p.stderr.splitlines() if "error" in ln]
    assert len(err) == 1 and "dynamic at export" in err[0], p.stderr
    assert "Traceback" not in p.stderr


def test_nn_module_api(torch_model):
    import torch

    import relay_import as ri

    mod = ri.load(torch_model, shapes={"input": (2, 3, 10, 10)})
    (p,) = mod["main"].params
    assert tuple(p.type_annotation.shape) == (2, 3, 10, 10)
    x = torch.randn(2, 3, 10, 10)
    with torch.no_grad():
        want = torch_model(x).numpy()
    got = ri.compile(mod)(x.numpy())[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_keras_file(keras_file):
    _pinned(keras_file, "img", (2, 6, 8, 3))


def test_saved_model(saved_model):
    _pinned(saved_model, "img", (3, 5, 8, 3))
