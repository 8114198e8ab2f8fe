"""`relay serve`: every route, parity of served results with onnxruntime, bad requests answered
with a 4xx and a message while the service keeps running, and the CLI entry point."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

import relay_core  # noqa: E402
from relay_import.service import make_server  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo_cnn.onnx"


@pytest.fixture(scope="module")
def server():
    srv = make_server("127.0.0.1", 0, models={"cnn": str(DEMO)}, max_body=4 << 20, quiet=True)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def request(url, body=None, ctype="application/octet-stream"):
    req = urllib.request.Request(url, data=body, headers={"Content-Type": ctype} if body else {})
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def ort_probs(x):
    import onnxruntime as ort

    sess = ort.InferenceSession(str(DEMO), providers=["CPUExecutionProvider"])
    return sess.run(None, {"image": x})[0]


def npz(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def test_health_and_models(server):
    assert request(server + "/health") == (200, b'{\n "status": "ok"\n}')
    status, body = request(server + "/models")
    assert status == 200
    info = json.loads(body)["cnn"]
    assert info["inputs"] == [{"name": "image", "type": "Tensor[(1, 3, 32, 32), float32]"}]
    assert info["outputs"][0]["name"] == "probs"


def test_run_npz_matches_onnxruntime(server):
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)
    status, body = request(server + "/models/cnn/run", npz(image=x))
    assert status == 200, body
    with np.load(io.BytesIO(body)) as z:
        np.testing.assert_allclose(z["probs"], ort_probs(x), rtol=1e-5, atol=1e-6)


def test_run_json_matches_onnxruntime(server):
    x = np.random.default_rng(2).standard_normal((1, 3, 32, 32)).astype(np.float32)
    body = json.dumps({"inputs": {"image": x.tolist()}}).encode()
    status, out = request(server + "/models/cnn/run", body, "application/json")
    assert status == 200, out
    got = np.asarray(json.loads(out)["outputs"]["probs"], np.float32)
    np.testing.assert_allclose(got, ort_probs(x), rtol=1e-5, atol=1e-6)


def test_concurrent_runs_are_independent(server):
    xs = [
        np.random.default_rng(10 + k).standard_normal((1, 3, 32, 32)).astype(np.float32)
        for k in range(8)
    ]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda x: request(server + "/models/cnn/run", npz(image=x)), xs))
    for x, (status, body) in zip(xs, results):
        assert status == 200
        with np.load(io.BytesIO(body)) as z:
            np.testing.assert_allclose(z["probs"], ort_probs(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "body, words",
    [
        (npz(images=np.zeros((1, 3, 32, 32), np.float32)), ["image"]),
        (npz(image=np.zeros((1, 3, 16, 16), np.float32)), ["shape", "image"]),
        (npz(image=np.zeros((1, 3, 32, 32), np.complex64)), ["image"]),
        (b"not an npz archive", ["npz"]),
    ],
    ids=["wrong-name", "wrong-shape", "wrong-dtype", "garbage"],
)
def test_bad_run_request_is_a_400(server, body, words):
    status, out = request(server + "/models/cnn/run", body)
    assert status == 400, out
    msg = json.loads(out)["error"]
    for w in words:
        assert w in msg, msg
    assert request(server + "/health")[0] == 200


def test_unknown_model_and_route(server):
    status, out = request(server + "/models/nope/run", npz())
    assert status == 404 and "nope" in json.loads(out)["error"]
    assert request(server + "/nowhere")[0] == 404


def test_convert_answers_parsable_relay(server):
    status, text = request(server + "/convert", DEMO.read_bytes())
    assert status == 200
    mod = relay_core.parse(text.decode())
    assert "nn.conv2d" in text.decode() and mod["main"] is not None


def test_convert_truncated_model_is_a_400(server):
    status, out = request(server + "/convert", DEMO.read_bytes()[:500])
    assert status == 400
    assert json.loads(out)["error"]
    assert request(server + "/health")[0] == 200


def test_verify_reports_parity(server):
    status, out = request(server + "/verify", DEMO.read_bytes())
    assert status == 200
    report = json.loads(out)
    assert report["ok"] is True and report["first_divergence"] is None
    assert report["outputs"][0]["name"] == "probs"


def test_body_over_the_limit_is_refused_before_it_is_read(server):
    import http.client
    from urllib.parse import urlparse

    u = urlparse(server)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    conn.putrequest("POST", "/convert")
    conn.putheader("Content-Length", str(5 << 20))  # announced, never sent
    conn.endheaders()
    r = conn.getresponse()
    assert r.status == 413 and "limit" in json.loads(r.read())["error"]
    conn.close()
    assert request(server + "/health")[0] == 200


def test_cli_serve_preloads_and_answers(tmp_path):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "relay_import.cli",
            "serve",
            "--port",
            "0",
            "--model",
            f"cnn={DEMO}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        url = None
        for line in p.stdout:
            if "listening on" in line:
                url = line.split("listening on", 1)[1].strip()
                break
        assert url, p.stderr.read()
        x = np.ones((1, 3, 32, 32), np.float32)
        status, body = request(url + "/models/cnn/run", npz(image=x))
        assert status == 200
        with np.load(io.BytesIO(body)) as z:
            np.testing.assert_allclose(z["probs"], ort_probs(x), rtol=1e-5, atol=1e-6)
    finally:
        p.terminate()
        p.wait(timeout=60)


def test_cli_serve_refuses_a_bad_model_at_start(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    p = subprocess.run(
        [sys.executable, "-m", "relay_import.cli", "serve", "--port", "0", "--model", f"m={bad}"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert p.returncode != 0
    assert "bad.onnx" in p.stderr and "Traceback" not in p.stderr
