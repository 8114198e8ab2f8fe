"""A convert-batch manifest of models built here, and checks of its results against
onnxruntime."""

from __future__ import annotations

import io
import json
import tarfile

import numpy as np

from tests.relay_import.serve_util import DEMO, mlp, ort_run, tiny_relu, unsupported


def write_manifest(d) -> tuple[str, dict]:
    models = {"mlp.onnx": mlp(11), "relu.onnx": tiny_relu(), "svm.onnx": unsupported()}
    for name, data in models.items():
        (d / name).write_bytes(data)
    models["cnn"] = DEMO.read_bytes()
    entries = [
        {"path": str(DEMO), "name": "cnn"},
        {"path": "mlp.onnx"},
        {"path": "relu.onnx", "shapes": {"x": [2, 3]}},
        {"path": "svm.onnx"},
        {"path": "missing.onnx"},
    ]
    (d / "manifest.json").write_text(json.dumps({"models": entries}))
    return str(d / "manifest.json"), models


FEEDS = {
    "cnn": lambda rng: {"image": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)},
    "mlp": lambda rng: {"x": rng.standard_normal((4, 16)).astype(np.float32)},
    "relu": lambda rng: {"x": rng.standard_normal((2, 3)).astype(np.float32)},
}


def check_results(result: dict, store_url: str, models: dict, tmp) -> None:
    import relay_import as ri
    from relay_import.service.store import Store

    rows = {r["name"]: r for r in result["rows"]}
    assert {n: r["status"] for n, r in rows.items()} == {
        "cnn": "ok",
        "mlp": "ok",
        "relu": "ok",
        "svm": "unsupported",
        "missing": "error",
    }, result["table"]
    assert rows["svm"]["unsupported"] == ["ai.onnx.ml SVMRegressor 3"]
    assert rows["missing"]["stage"] == "read" and result["ok"] is False
    store = Store(store_url)
    assert json.loads(store.get(result["key"] + "/results.json")) == result["rows"]
    summary = store.get(result["key"] + "/summary.md").decode()
    assert summary.strip() == result["table"] and "SVMRegressor" in summary
    rng = np.random.default_rng(0)
    for name, src in (("cnn", "cnn"), ("mlp", "mlp.onnx"), ("relu", "relu.onnx")):
        r = rows[name]
        assert r["verified"] is True and r["report"]
        tgz = store.get(f"artifacts/{r['artifact']}/artifact.tar.gz")
        dest = tmp / name
        with tarfile.open(fileobj=io.BytesIO(tgz)) as tf:
            tf.extractall(dest, filter="data")
        lib = ri.load_compiled(str(dest / "model.relaylib"))
        feed = FEEDS[name](rng)
        want = ort_run(models[src], feed)
        for got, exp in zip(lib(**feed), want):
            np.testing.assert_allclose(got, exp, rtol=1e-4, atol=1e-5)
