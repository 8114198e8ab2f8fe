"""Throughput and latency of `relay serve`: one process, and Ray Serve with two replicas.

8 clients (threads, keep-alive connections) send inference requests for the demo CNN (.npz in
and out) and, in a second run, the mixed good / bad traffic of the load test (without its slow
clients); each answer is checked against onnxruntime. Figures: requests per second, p50 and
p99 latency. The section "Service" of benchmarks/RESULTS.md is replaced.

    python -m benchmarks.serve_load [--requests 2000] [--clients 8] [--no-ray]
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import io
import os
import platform
import queue
import socket
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

from benchmarks.run import _load, _machine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "examples", "demo_cnn.onnx")
MARK = "<!-- section: serve -->"


def _npz(**arrays) -> bytes:
    b = io.BytesIO()
    np.savez(b, **arrays)
    return b.getvalue()


def _requests(kind: str, n: int, xs: list) -> list[tuple]:
    """(method, path, body, content type, expected status, index of x or None)."""
    good = [
        ("POST", "/v1/models/cnn/run", _npz(image=x), "application/octet-stream", 200, k)
        for k, x in enumerate(xs)
    ]
    if kind == "inference":
        return [good[k % len(good)] for k in range(n)]
    bad = [
        ("POST", "/v1/models/cnn/run", b"[1, 2]", "application/json", 400, None),
        ("POST", "/v1/models/cnn/run", b"", "application/octet-stream", 400, None),
        ("POST", "/v1/models/cnn/run", b"garbage", "application/octet-stream", 400, None),
        ("PUT", "/v1/models", b"x", "application/octet-stream", 405, None),
        ("GET", "/v1/nowhere", None, None, 404, None),
        ("GET", "/v1/models/cnn", None, None, 200, None),
        (
            "POST",
            "/v1/models/cnn/run",
            _npz(image=np.zeros((1, 3, 8, 8), np.float32)),
            "application/octet-stream",
            400,
            None,
        ),
    ]
    rng = np.random.default_rng(0)
    return [
        good[k % len(good)] if rng.random() < 0.6 else bad[rng.integers(len(bad))] for k in range(n)
    ]


def drive(url: str, reqs: list, clients: int, want: list) -> dict:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    q: queue.Queue = queue.Queue()
    for r in reqs:
        q.put(r)
    lat, errors = [], []
    lock = threading.Lock()

    def client():
        conn = http.client.HTTPConnection(host, int(port), timeout=300)
        while True:
            try:
                method, path, body, ctype, status, k = q.get_nowait()
            except queue.Empty:
                break
            headers = {"Content-Type": ctype} if ctype else {}
            t0 = time.perf_counter()
            for attempt in range(2):
                try:
                    conn.request(method, path, body=body, headers=headers)
                    r = conn.getresponse()
                    data = r.read()
                    break
                except (http.client.HTTPException, OSError):
                    conn.close()
                    conn = http.client.HTTPConnection(host, int(port), timeout=300)
                    if attempt:
                        raise
            dt = time.perf_counter() - t0
            ok = r.status == status
            if ok and k is not None:
                with np.load(io.BytesIO(data)) as z:
                    ok = np.allclose(z["probs"], want[k], rtol=1e-5, atol=1e-6)
            if r.getheader("connection", "").lower() == "close":
                conn.close()
                conn = http.client.HTTPConnection(host, int(port), timeout=300)
            with lock:
                lat.append(dt)
                if not ok:
                    errors.append((path, r.status, data[:200]))
        conn.close()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    lat.sort()
    return {
        "n": len(lat),
        "rps": len(lat) / wall,
        "p50": lat[len(lat) // 2] * 1e3,
        "p99": lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1e3,
        "errors": errors,
    }


def start_process(store: str, tmp: str):
    env = dict(os.environ, TMPDIR=tmp, PYTHONUNBUFFERED="1")
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "relay_import.cli",
            "serve",
            "--port",
            "0",
            "--quiet",
            "--model",
            f"cnn={DEMO}",
            "--store",
            store,
            "--max-inflight",
            "256",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    for line in p.stdout:
        if "listening on" in line:
            url = line.split("listening on", 1)[1].split()[0]
            break
    else:
        raise RuntimeError("relay serve did not start")
    _wait_ready(url)
    return p, url


def _wait_ready(url: str, timeout: float = 600) -> None:
    import urllib.error
    import urllib.request

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(url + "/ready", timeout=10) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.3)
    raise TimeoutError(url)


def start_ray(store: str, replicas: int):
    import ray

    from relay_import.service import Limits, ServiceConfig
    from relay_import.service.ray_serve import start

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        logging_level="WARNING",
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = ServiceConfig(
        port=port, store=store, models={"cnn": DEMO}, quiet=True, limits=Limits(max_inflight=256)
    )
    url = start(cfg, replicas=replicas)
    _wait_ready(url)
    return url


def write_section(path: str, text: str) -> None:
    old = open(path).read() if os.path.exists(path) else ""
    head = old.split(MARK, 1)[0].rstrip("\n")
    with open(path, "w") as f:
        f.write((head + "\n\n" if head else "") + MARK + "\n" + text.rstrip("\n") + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "RESULTS.md"))
    args = ap.parse_args()

    import onnxruntime as ort

    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((1, 3, 32, 32)).astype(np.float32) for _ in range(16)]
    sess = ort.InferenceSession(DEMO, providers=["CPUExecutionProvider"])
    want = [sess.run(None, {"image": x})[0] for x in xs]
    load_before = _load()
    rows = []
    with tempfile.TemporaryDirectory(prefix="relay-bench-") as tmp:
        store = os.path.join(tmp, "store")
        p, url = start_process(store, tmp)
        try:
            for kind in ("inference", "mixed"):
                drive(url, _requests(kind, 200, xs), args.clients, want)  # warm-up
                r = drive(url, _requests(kind, args.requests, xs), args.clients, want)
                rows.append(("one process (uvicorn)", kind, r))
                print(rows[-1][:2], {k: v for k, v in r.items() if k != "errors"}, flush=True)
        finally:
            p.terminate()
            p.wait(120)
        if not args.no_ray:
            url = start_ray(store, 2)
            try:
                for kind in ("inference", "mixed"):
                    drive(url, _requests(kind, 200, xs), args.clients, want)
                    r = drive(url, _requests(kind, args.requests, xs), args.clients, want)
                    rows.append(("Ray Serve, 2 replicas", kind, r))
                    print(rows[-1][:2], {k: v for k, v in r.items() if k != "errors"}, flush=True)
            finally:
                import ray
                from ray import serve

                serve.shutdown()
                ray.shutdown()
    bad = [(d, k, r["errors"][:3]) for d, k, r in rows if r["errors"]]
    import ray as _ray

    lines = [
        "## Service: `relay serve` under load",
        "",
        f"Date: {datetime.datetime.now():%Y-%m-%d %H:%M}  ",
        f"Machine: {_machine()}  ",
        f"Load average before / after: {load_before} / {_load()}  ",
        f"Versions: Python {platform.python_version()}, ray {_ray.__version__}, "
        f"onnxruntime {ort.__version__}",
        "",
        f"{args.clients} client threads on keep-alive connections, {args.requests} requests per "
        "row after 200 of warm-up, on loopback. `inference`: the demo CNN (1x3x32x32) with .npz "
        "in and out; `mixed`: 60% of those, 40% bad requests (JSON list body, empty body, "
        "garbage, PUT, unknown route, wrong shape) and model info. Every answer is checked "
        "(inference against onnxruntime). Clients, server and Ray share the same 2 cores.",
        "",
        "| deployment | traffic | requests/s | p50 (ms) | p99 (ms) | wrong answers |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for dep, kind, r in rows:
        lines.append(
            f"| {dep} | {kind} | {r['rps']:.0f} | {r['p50']:.1f} | {r['p99']:.1f} | "
            f"{len(r['errors'])} |"
        )
    lines.append("")
    lines.append("Command: `python -m benchmarks.serve_load`")
    write_section(args.out, "\n".join(lines))
    if bad:
        print("wrong answers:", bad, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
