"""Scale-out on Ray, end to end on a local Ray instance (2 CPUs, loopback only, one per
module): `convert-batch --ray` as Ray tasks, from this process and from the CLI against the
cluster's address; and the service on Ray Serve with two replicas sharing a store."""

from __future__ import annotations

import io
import subprocess
import sys
import urllib.request

import numpy as np
import pytest

from tests.relay_import.batch_util import check_results, write_manifest
from tests.relay_import.serve_util import DEMO, ROOT, jrequest, mlp, npz, ort_run, request

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@pytest.fixture(scope="module")
def ray_cluster():
    import ray

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        logging_level="WARNING",
    )
    yield ray.get_runtime_context().gcs_address
    from ray import serve

    serve.shutdown()
    ray.shutdown()


def test_convert_batch_as_ray_tasks(ray_cluster, tmp_path):
    from relay_import.service import ServiceConfig
    from relay_import.service.batch import convert_batch

    manifest, models = write_manifest(tmp_path)
    cfg = ServiceConfig(store=str(tmp_path / "store"), quiet=True)
    result = convert_batch(manifest, cfg, use_ray=True)
    check_results(result, cfg.store, models, tmp_path)

    # the CLI, connecting to the running cluster: every result comes from the store
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "relay_import.cli",
            "convert-batch",
            manifest,
            "--ray",
            "--address",
            ray_cluster,
            "--store",
            cfg.store,
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert result["table"] in p.stdout


def test_ray_serve_two_replicas_share_the_store(ray_cluster, tmp_path):
    import socket

    from relay_import.service import ServiceConfig
    from relay_import.service.ray_serve import start, stop

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = ServiceConfig(
        port=port, store=str(tmp_path / "store"), models={"cnn": str(DEMO)}, quiet=True
    )
    url = start(cfg, replicas=2)
    try:
        x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
        want = ort_run(DEMO, {"image": x})[0]
        seen = set()
        for _ in range(16):
            req = urllib.request.Request(url + "/v1/models/cnn/run", data=npz(image=x))
            with urllib.request.urlopen(req, timeout=300) as r:
                seen.add(r.headers["x-relay-instance"])
                with np.load(io.BytesIO(r.read())) as z:
                    np.testing.assert_allclose(z["probs"], want, rtol=1e-5, atol=1e-6)
        assert len(seen) == 2, seen  # both replicas answered
        with urllib.request.urlopen(url + "/ready", timeout=60) as r:
            import json

            assert "cnn" in json.load(r)["models"]  # the driver's preloaded name, from the store
        model = mlp(21)
        status, info = jrequest(url + "/v1/models", model)
        assert status == 201, info
        status, art = jrequest(url + f"/v1/models/{info['id']}/compile", b"", method="POST")
        assert status == 200, art
        xm = np.random.default_rng(1).standard_normal((4, 16)).astype(np.float32)
        for _ in range(4):  # whichever replica answers loads the artifact from the store
            status, out = request(url + art["run"], npz(x=xm))
            assert status == 200
            with np.load(io.BytesIO(out)) as z:
                np.testing.assert_allclose(
                    z[z.files[0]], ort_run(model, {"x": xm})[0], rtol=1e-4, atol=1e-5
                )
        status, err = jrequest(url + "/v1/models/cnn/run", b"[1]", ctype="application/json")
        assert status == 400 and err["code"] == "invalid_inputs"
    finally:
        stop()


def test_cli_serve_on_ray_drains_on_sigterm(ray_cluster, tmp_path):
    """`relay serve --ray` as typed, joining the running cluster: it answers, and SIGTERM (even
    as it starts) drains the deployment and exits 0 instead of dying in Ray's own handler."""
    import os
    import signal
    import socket
    import time

    from ray import serve

    serve.shutdown()  # Serve keeps its first HTTP options; the CLI starts its own on its port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "relay_import", "serve", "--ray", "--address", ray_cluster]
    cmd += ["--port", str(port), "--store", str(tmp_path / "store"), "--model", f"cnn={DEMO}"]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "listening on" in line:
                break
        assert any("listening on" in x for x in lines), "".join(lines)
        x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/models/cnn/run", data=npz(image=x)
        )
        with urllib.request.urlopen(req, timeout=300) as r, np.load(io.BytesIO(r.read())) as z:
            np.testing.assert_allclose(
                z["probs"], ort_run(DEMO, {"image": x})[0], rtol=1e-5, atol=1e-6
            )
        os.kill(p.pid, signal.SIGTERM)
        out, _ = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    text = "".join(lines) + out
    assert p.returncode == 0, text
    assert "draining" in text and "SIGTERM received" not in text, text
