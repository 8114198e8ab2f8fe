"""`relay serve`: every route against onnxruntime, the hostile requests of issue 17 answered
with a JSON 4xx (never a 500, never a server path) while the service keeps running, HTTP-level
limits, worker crashes, a shared store, auth and graceful shutdown."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import tarfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import relay_core
from tests.relay_import.serve_util import (
    DEMO,
    ROOT,
    Server,
    body_of,
    children,
    constant_of_shape,
    deep_json,
    jrequest,
    mlp,
    npz,
    npz_bomb,
    npz_lying_size,
    ort_run,
    raw,
    request,
    status_of,
    tiny_relu,
    unsupported,
)

pytestmark = pytest.mark.slow

LIMITS = ["--header-timeout", "2", "--read-timeout", "3", "--max-body", "8M"]
LIMITS += ["--max-input-bytes", "16M", "--max-tensor-bytes", "64M", "--max-text-bytes", "8M"]


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve")
    (tmp / "tmp").mkdir()
    s = Server(
        [
            "--model",
            f"cnn={DEMO}",
            "--store",
            str(tmp / "store"),
            "--quiet",
            "--allow-format",
            "keras",
            *LIMITS,
        ],
        env={"RELAY_CACHE_DIR": str(tmp / "cache")},
        tmp=str(tmp / "tmp"),
    )
    s.first = (request(s.url + "/health"), jrequest(s.url + "/ready"))
    s.wait_ready()
    s.store = tmp / "store"
    s.tmpdir = tmp / "tmp"
    yield s
    assert s.stop() == 0
    assert os.listdir(tmp / "tmp") == [], "temp files left behind"


@pytest.fixture(scope="module")
def demo(srv):
    status, info = jrequest(srv.url + "/v1/models?filename=demo_cnn.onnx", DEMO.read_bytes())
    assert status == 201, info
    return info


def x_image(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((1, 3, 32, 32)).astype(np.float32)


def assert_error(status, out, want_status, code, *words):
    assert status == want_status, out
    assert isinstance(out, dict) and out["code"] == code, out
    for w in words:
        assert w in out["message"], out
    text = json.dumps(out)
    assert "/tmp" not in text and str(ROOT) not in text and "Traceback" not in text


def test_health_answers_while_models_compile(srv):
    (hstatus, hbody), (rstatus, rbody) = srv.first
    assert (hstatus, json.loads(hbody)) == (200, {"status": "ok"})
    assert rstatus == 503 and rbody["code"] == "not_ready" and rbody["pending"] == ["cnn"]
    status, ready = jrequest(srv.url + "/ready")
    assert status == 200 and ready["models"]["cnn"]["artifact"]


def test_upload_gives_id_types_and_ops(srv, demo):
    assert demo["inputs"] == [
        {
            "name": "image",
            "shape": [1, 3, 32, 32],
            "dtype": "float32",
            "type": "Tensor[(1, 3, 32, 32), float32]",
        }
    ]
    assert demo["outputs"][0]["name"] == "probs" and demo["unsupported_ops"] == []
    assert demo["source_ops"]["Conv"] == 9 and demo["relay_ops"]["nn.conv2d"] == 9
    assert jrequest(srv.url + f"/v1/models/{demo['id']}")[1]["id"] == demo["id"]
    assert demo["id"] == jrequest(srv.url + "/v1/models/cnn")[1]["id"]  # the preloaded name


def test_upload_lists_every_unsupported_op(srv):
    status, info = jrequest(srv.url + "/v1/models", unsupported())
    assert status == 201 and info["convertible"] is False
    assert any("SVMRegressor" in op for op in info["unsupported_ops"])
    status, out = jrequest(srv.url + f"/v1/models/{info['id']}/compile", b"", method="POST")
    assert_error(status, out, 422, "unsupported_ops", "SVMRegressor")


def test_relay_text_parses_back(srv, demo):
    status, text = request(srv.url + f"/v1/models/{demo['id']}/relay")
    assert status == 200
    mod = relay_core.parse(text.decode())
    assert "nn.conv2d" in text.decode() and mod["main"] is not None


def test_verify_gives_a_report_and_its_html(srv, demo):
    status, rep = jrequest(srv.url + f"/v1/models/{demo['id']}/verify", b"", method="POST")
    assert status == 200, rep
    assert rep["ok"] is True and rep["first_divergence"] is None
    assert rep["outputs"][0]["name"] == "probs" and rep["outputs"][0]["max_abs"] < 1e-5
    assert "/tmp" not in json.dumps(rep)
    status, page = request(srv.url + rep["html"])
    assert status == 200 and b"<html" in page.lower() and b"demo_cnn.onnx" in page
    assert b"/tmp/" not in page
    assert jrequest(srv.url + f"/v1/reports/{rep['id']}")[1]["ok"] is True


def test_verify_on_given_inputs(srv, demo):
    x = x_image(5)
    status, rep = jrequest(
        srv.url + f"/v1/models/{demo['id']}/verify?rtol=1e-4", npz(image=x), method="POST"
    )
    assert status == 200 and rep["ok"], rep
    assert rep["inputs"]["image"]["max"] == pytest.approx(float(x.max()), rel=1e-6)


def test_compile_download_and_run_match_onnxruntime(srv, demo, tmp_path):
    import relay_import as ri

    status, art = jrequest(srv.url + f"/v1/models/{demo['id']}/compile", b"", method="POST")
    assert status == 200, art
    assert jrequest(srv.url + f"/v1/models/{demo['id']}/compile", b"", method="POST")[1] == art
    status, tgz = request(srv.url + art["download"])
    assert status == 200
    with tarfile.open(fileobj=io.BytesIO(tgz)) as tf:
        tf.extractall(tmp_path, filter="data")
    lib = ri.load_compiled(str(tmp_path / "model.relaylib"))
    x = x_image(1)
    want = ort_run(DEMO, {"image": x})[0]
    np.testing.assert_allclose(lib(x)[0], want, rtol=1e-5, atol=1e-6)

    status, out = request(srv.url + art["run"], npz(image=x))
    assert status == 200, out
    with np.load(io.BytesIO(out)) as z:
        np.testing.assert_allclose(z["probs"], want, rtol=1e-5, atol=1e-6)
    body = json.dumps({"inputs": {"image": x.tolist()}}).encode()
    status, out = jrequest(srv.url + "/v1/models/cnn/run", body, ctype="application/json")
    assert status == 200, out
    np.testing.assert_allclose(np.float32(out["outputs"]["probs"]), want, rtol=1e-5, atol=1e-6)


def test_concurrent_runs_are_independent(srv):
    xs = [x_image(10 + k) for k in range(8)]
    with ThreadPoolExecutor(8) as pool:
        results = list(
            pool.map(lambda x: request(srv.url + "/v1/models/cnn/run", npz(image=x)), xs)
        )
    for x, (status, body) in zip(xs, results):
        assert status == 200
        with np.load(io.BytesIO(body)) as z:
            np.testing.assert_allclose(
                z["probs"], ort_run(DEMO, {"image": x})[0], rtol=1e-5, atol=1e-6
            )


J = "application/json"
BAD_RUNS = {
    "json-list": (b"[1, 2]", J, 400, "invalid_inputs", ["JSON object"]),
    "json-empty": (b"", J, 400, "empty_body", []),
    "json-deep": (deep_json(), J, 400, "json_too_deep", ["100002"]),
    "json-garbage": (b'{"inputs": ', J, 400, "invalid_json", []),
    "json-ragged": (b'{"inputs": {"image": [[1], [1, 2]]}}', J, 400, "invalid_inputs", ["image"]),
    "npz-empty": (b"", "application/octet-stream", 400, "empty_body", []),
    "npz-wrong-name": (
        npz(images=np.zeros((1, 3, 32, 32), np.float32)),
        None,
        400,
        "invalid_inputs",
        ["images"],
    ),
    "npz-wrong-shape": (
        npz(image=np.zeros((1, 3, 16, 16), np.float32)),
        None,
        400,
        "invalid_inputs",
        ["shape"],
    ),
    "npz-wrong-dtype": (
        npz(image=np.zeros((1, 3, 32, 32), np.complex64)),
        None,
        400,
        "invalid_inputs",
        ["dtype"],
    ),
    "npz-garbage": (b"not an npz archive", None, 400, "invalid_inputs", ["npz"]),
    "npz-zip-bomb": (npz_bomb(), None, 413, "budget_exceeded", ["1,073,741,824"]),
    "npz-lying-size": (npz_lying_size(), None, 400, "invalid_inputs", ["size"]),
}


@pytest.mark.parametrize("case", list(BAD_RUNS))
def test_bad_run_request_is_a_json_4xx(srv, case):
    body, ctype, want, code, words = BAD_RUNS[case]
    status, out = jrequest(
        srv.url + "/v1/models/cnn/run",
        body,
        ctype=ctype or "application/octet-stream",
        method="POST",
    )
    assert_error(status, out, want, code, *words)
    assert request(srv.url + "/health")[0] == 200


def test_bad_routes_and_methods(srv, demo):
    assert_error(*jrequest(srv.url + "/v1/models", b"x", method="PUT"), 405, "method_not_allowed")
    assert_error(*jrequest(srv.url + "/nowhere"), 404, "not_found")
    assert_error(*jrequest(srv.url + "/v1/models/nope/run", npz()), 404, "not_found", "nope")
    assert_error(*jrequest(srv.url + "/v1/artifacts/" + "0" * 32), 404, "not_found")
    status, out = jrequest(srv.url + f"/v1/models/{demo['id']}/verify?rtol=abc", b"", method="POST")
    assert_error(status, out, 400, "invalid_parameter", "rtol")
    status, out = jrequest(srv.url + f"/v1/models/{demo['id']}/relay?shape=image=1,x")
    assert_error(status, out, 400, "invalid_parameter", "integers")
    status, out = jrequest(srv.url + "/v1/convert", b"\x08\x07garbage")
    assert_error(status, out, 400, "invalid_model")
    status, out = jrequest(srv.url + "/v1/models?format=pt2", b"PK\x03\x04")
    assert_error(status, out, 415, "unsupported_format", "--allow-format pt2")


def test_keras_upload_when_the_operator_allows_it(srv, tmp_path):
    import keras

    m = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4, activation="tanh")])
    m.save(tmp_path / "d.keras")
    status, info = jrequest(
        srv.url + "/v1/models?format=keras", (tmp_path / "d.keras").read_bytes()
    )
    assert status == 201, info
    assert info["inputs"][0]["shape"] == ["batch", 8] and info["format"] == "keras"
    name = info["inputs"][0]["name"]  # Keras numbers layer names per process: ask
    status, rep = jrequest(
        srv.url + f"/v1/models/{info['id']}/verify?shape={name}=2,8", b"", method="POST"
    )
    assert status == 200 and rep["ok"] is True, rep
    status, art = jrequest(srv.url + f"/v1/models/{info['id']}/compile", b"", method="POST")
    assert status == 200, art
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    status, out = request(srv.url + art["run"], npz(**{name: x}))
    assert status == 200, out
    with np.load(io.BytesIO(out)) as z:
        np.testing.assert_allclose(z[z.files[0]], m(x).numpy(), rtol=1e-5, atol=1e-6)


def test_requests_beyond_the_in_flight_bound_get_429(tmp_path):
    s = Server(
        [
            "--store",
            str(tmp_path / "store"),
            "--quiet",
            "--max-inflight",
            "2",
            "--read-timeout",
            "20",
        ],
        tmp=str(tmp_path),
    )
    try:
        s.wait_ready()
        held = []
        for _ in range(2):  # two uploads whose bodies never finish: both in flight
            c = socket.create_connection(("127.0.0.1", s.port))
            c.sendall(b"POST /v1/models HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab")
            held.append(c)
        time.sleep(0.5)
        status, out = jrequest(s.url + "/v1/models", tiny_relu())
        assert_error(status, out, 429, "too_many_requests")
        assert request(s.url + "/health")[0] == 200  # probes are not counted
        for c in held:
            c.close()
        time.sleep(0.5)
        assert jrequest(s.url + "/v1/models", tiny_relu())[0] == 201
    finally:
        assert s.stop() == 0


def test_hostile_models(srv):
    # 73 bytes verified at 8192 x 8192: refused by the input budget before any work
    m = tiny_relu()
    assert len(m) == 73
    status, info = jrequest(srv.url + "/v1/models", m)
    assert status == 201
    t0 = time.monotonic()
    status, out = jrequest(
        srv.url + f"/v1/models/{info['id']}/verify?shape=x=8192,8192", b"", method="POST"
    )
    assert_error(status, out, 413, "budget_exceeded", "268,435,456")
    assert time.monotonic() - t0 < 30
    # a ConstantOfShape model of ~120 bytes: its folded constant is over the tensor budget ...
    status, out = jrequest(srv.url + "/v1/convert", constant_of_shape(5000))
    assert_error(status, out, 413, "budget_exceeded")
    # ... or within it, but its text with the constants is over the answer limit
    status, out = jrequest(srv.url + "/v1/convert", constant_of_shape(3000))
    assert_error(status, out, 413, "response_too_large", "meta=false")
    status, text = request(srv.url + "/v1/convert?meta=false", constant_of_shape(3000))
    assert status == 200 and len(text) < 4096
    assert request(srv.url + "/health")[0] == 200


def test_http_level_limits(srv):
    port = srv.port
    r = raw(port, b"POST /v1/convert HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n")
    assert status_of(r) == 400 and body_of(r)["code"] == "bad_http"
    r = raw(
        port, b"POST /v1/convert HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"
    )
    assert status_of(r) == 400 and body_of(r)["code"] == "bad_http"
    r = raw(port, b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"X-Big: " + b"a" * 40000 + b"\r\n\r\n")
    assert status_of(r) in (400, 431)
    # announced over the limit: refused before a byte of the body is read
    r = raw(port, b"POST /v1/models HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n")
    assert status_of(r) == 413 and body_of(r)["code"] == "body_too_large"
    # chunked: refused once the streamed body passes the limit
    chunk = b"%x\r\n%s\r\n" % (1 << 20, b"\0" * (1 << 20))
    r = raw(
        port,
        b"POST /v1/models HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk * 9,
    )
    assert status_of(r) == 413 and body_of(r)["code"] == "body_too_large"
    # a chunked upload within the limit works
    data = DEMO.read_bytes()
    body = (
        b"".join(
            b"%x\r\n%s\r\n" % (len(data[i : i + 65536]), data[i : i + 65536])
            for i in range(0, len(data), 65536)
        )
        + b"0\r\n\r\n"
    )
    r = raw(
        port,
        b"POST /v1/convert?meta=false HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n" + body,
    )
    assert status_of(r) == 200 and b"nn.conv2d" in r


def test_slow_and_half_sent_requests_are_cut_off(srv):
    port = srv.port
    t0 = time.monotonic()
    r = raw(port, b"GET /health HTTP/1.1\r\nHo")  # headers never finish
    assert status_of(r) == 408 and body_of(r)["code"] == "request_timeout"
    r = raw(port, b"POST /v1/models HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nabc")
    assert status_of(r) == 408 and body_of(r)["code"] == "request_timeout"
    assert time.monotonic() - t0 < 30
    # 200 half-sent requests hold no thread: the service answers meanwhile, then drops them
    socks = []
    for _ in range(200):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"POST /v1/models HTTP/1.1\r\nHost: x\r\n")
        socks.append(s)
    assert request(srv.url + "/health", timeout=10)[0] == 200
    deadline = time.monotonic() + 30
    closed = 0
    for s in socks:
        s.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            while s.recv(4096):
                pass
            closed += 1
        except (TimeoutError, ConnectionResetError):
            pass
        s.close()
    assert closed == 200


def test_workers_killed_while_idle_are_replaced_before_the_next_job(srv):
    """A job sent right after its idle worker died goes to a fresh one: the dead worker's pipe
    is at end of file before its exit status reaches the forkserver (CI saw the job fail)."""
    model = mlp(seed=8, width=16, depth=2)
    status, info = jrequest(srv.url + "/v1/models", model)
    assert status == 201
    for _ in range(3):
        pids = srv.live_workers()
        assert pids, "no worker process under the service after 30 s:\n" + srv.stderr()
        for p in pids:
            os.kill(p, signal.SIGKILL)
        status, art = jrequest(srv.url + f"/v1/models/{info['id']}/compile", b"", method="POST")
        assert status == 200, art


def test_worker_killed_mid_compile_is_a_5xx_naming_the_stage(srv):
    model = mlp(seed=7, width=96, depth=12)
    status, info = jrequest(srv.url + "/v1/models", model)
    assert status == 201
    out = {}
    t = threading.Thread(
        target=lambda: out.update(
            r=jrequest(srv.url + f"/v1/models/{info['id']}/compile", b"", method="POST")
        )
    )
    t.start()
    start = sum(_cpu_total(p) for p in srv.worker_pids())
    for _ in range(1200):  # wait until the workers have spent CPU on the job: it is compiling
        if sum(_cpu_total(p) for p in srv.worker_pids()) - start > 0.5:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("no worker started working")
    for p in srv.worker_pids():
        os.kill(p, signal.SIGKILL)
    t.join(300)
    status, err = out["r"]
    assert_error(status, err, 500, "worker_crashed", "compile", "SIGKILL")
    assert err["stage"] == "compile"
    status, art = jrequest(srv.url + f"/v1/models/{info['id']}/compile", b"", method="POST")
    assert status == 200, art
    x = np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32)
    status, res = request(srv.url + art["run"], npz(x=x))
    with np.load(io.BytesIO(res)) as z:
        np.testing.assert_allclose(z[z.files[0]], ort_run(model, {"x": x})[0], rtol=1e-4, atol=1e-5)


_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_total(pid: int) -> float:
    """CPU seconds `pid` and its descendants have used (0 once gone): a worker compiles with
    helper processes of its own (the LLVM units), whose time counts as the worker's."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # own time, and the time of children already waited for
        total += (int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])) / _TICKS
        todo += children(p)
    return total


def test_metrics(srv):
    status, text = request(srv.url + "/metrics")
    assert status == 200
    text = text.decode()
    assert 'relay_http_requests_total{method="GET",route="/health",status="200"}' in text
    assert 'relay_worker_jobs_total{outcome="ok",stage="compile"}' in text
    assert "relay_ready 1.0" in text and "relay_worker_jobs_pending 0.0" in text


def test_a_second_instance_reuses_the_store(srv, demo, tmp_path):
    art = jrequest(srv.url + f"/v1/models/{demo['id']}/compile", b"", method="POST")[1]
    other = Server(["--store", str(srv.store), "--quiet"], tmp=str(tmp_path))
    try:
        other.wait_ready()
        status, art2 = jrequest(other.url + f"/v1/models/{demo['id']}/compile", b"", method="POST")
        assert status == 200 and art2["id"] == art["id"]
        x = x_image(3)
        status, out = request(other.url + "/v1/models/cnn/run", npz(image=x))  # name from store
        assert status == 200
        with np.load(io.BytesIO(out)) as z:
            np.testing.assert_allclose(
                z["probs"], ort_run(DEMO, {"image": x})[0], rtol=1e-5, atol=1e-6
            )
        metrics = request(other.url + "/metrics")[1].decode()
        assert "relay_worker_jobs_total" not in metrics.replace(
            "# HELP relay_worker_jobs_total", ""
        ).replace("# TYPE relay_worker_jobs_total", "")
        assert 'relay_store_lookups_total{kind="artifact",result="hit"}' in metrics
    finally:
        assert other.stop() == 0


def test_auth_is_required_when_configured():
    from starlette.testclient import TestClient

    from relay_import.service import ServiceConfig, create_app

    app = create_app(ServiceConfig(store="memory://auth-test", token="s3cret", workers=1))
    with TestClient(app) as c:
        assert c.get("/health").status_code == 200
        r = c.get("/v1/models")
        assert r.status_code == 401 and r.json()["code"] == "unauthorized"
        assert r.headers["www-authenticate"] == "Bearer"
        assert c.get("/v1/models", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert c.get("/v1/models", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        assert c.get("/metrics").status_code == 401
        paths = c.get("/openapi.json").json()["paths"]  # the OpenAPI description is open
        assert "/v1/models/{ref}/verify" in paths and "/v1/artifacts/{aid}/run" in paths


def test_refuses_to_listen_off_loopback_without_a_token():
    import subprocess
    import sys

    p = subprocess.run(
        [sys.executable, "-m", "relay_import.cli", "serve", "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "RELAY_SERVE_TOKEN"},
    )
    assert p.returncode == 2 and "--token" in p.stderr and "Traceback" not in p.stderr


def test_bad_preloaded_model_stops_the_service(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    s = Server(["--model", f"m={bad}", "--store", str(tmp_path / "store")], tmp=str(tmp_path))
    code = s.proc.wait(300)
    err = s.proc.stderr.read()
    assert code == 1 and "bad.onnx" in err and "Traceback" not in err


def test_sigterm_finishes_requests_in_flight_and_cleans_up(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    s = Server(
        ["--store", str(tmp_path / "store"), "--quiet"],
        env={"RELAY_CACHE_DIR": str(tmp_path / "cache")},
        tmp=str(tmp),
        log=str(tmp_path / "server.log"),
    )
    try:
        s.wait_ready()
        out = {}
        t = threading.Thread(target=lambda: out.update(r=jrequest(s.url + "/v1/verify", mlp(3))))
        t.start()
        time.sleep(1.0)  # the verify job is running
        kids = s.pids()[1:]
        s.proc.send_signal(signal.SIGTERM)
        t.join(300)
        status, rep = out["r"]
        assert status == 200 and rep["ok"] is True, (rep, s.stderr())
        assert s.proc.wait(120) == 0
        assert os.listdir(tmp) == [], "temp files left behind"
        time.sleep(0.5)
        assert not [
            p
            for p in kids
            if os.path.exists(f"/proc/{p}") and "zombie" not in open(f"/proc/{p}/status").read()
        ]
    finally:
        s.stop()
