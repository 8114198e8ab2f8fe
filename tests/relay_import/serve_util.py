"""Helpers of the service tests: a `relay serve` subprocess, raw HTTP, and small ONNX models
built here (including the hostile ones of issue 17)."""

from __future__ import annotations

import io
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo_cnn.onnx"


class Server:
    """`relay serve ARGS` in a subprocess; `url` once it listens."""

    def __init__(
        self,
        args: list[str],
        env: dict | None = None,
        tmp: str | None = None,
        log: str | None = None,
    ):
        self.tmp = tmp
        self.log = log
        e = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1", **(env or {}))
        if tmp:
            e["TMPDIR"] = tmp
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "relay_import.cli", "serve", "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=open(log, "w") if log else subprocess.PIPE,
            text=True,
            env=e,
            cwd=ROOT,
        )
        self.lines: list[str] = []
        self.url = None
        for line in self.proc.stdout:
            self.lines.append(line)
            if "listening on" in line:
                self.url = line.split("listening on", 1)[1].split()[0].strip()
                break
        if self.url is None:
            raise RuntimeError("relay serve did not start:\n" + self.stderr())
        self.port = int(self.url.rsplit(":", 1)[1])

    def wait_ready(self, timeout: float = 600) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if request(self.url + "/ready")[0] == 200:
                return
            if self.proc.poll() is not None:
                raise RuntimeError("relay serve exited:\n" + self.stderr())
            time.sleep(0.2)
        raise TimeoutError("relay serve did not get ready")

    def stderr(self) -> str:
        """What the server wrote to stderr (its log), the last 4,000 characters."""
        if self.log:
            return Path(self.log).read_text(errors="replace")[-4000:]
        return self.proc.stderr.read()[-4000:] if self.proc.poll() is not None else ""

    def errors(self, answer) -> str:
        """The tracebacks the server logged for the error ids in `answer` (an "unexpected
        error (id ...)" body), else the log's tail: what a failure's message should show."""
        ids = re.findall(r"\(id ([0-9a-f]{12})\)", str(answer))
        text = Path(self.log).read_text(errors="replace") if self.log else ""
        found = []
        for eid in ids:
            head = f"relay serve: error {eid} "
            if head in text:
                block = text[text.index(head) :].splitlines()
                end = next((i for i, ln in enumerate(block[2:], 2) if ln[:1].isalnum()), 1)
                found.append("\n".join(block[: end + 1]))
        return "\n".join(found)[-6000:] if found else self.stderr()

    def stop(self, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()

    def pids(self) -> list[int]:
        """The server and every process below it."""
        out, todo = [], [self.proc.pid]
        while todo:
            p = todo.pop()
            out.append(p)
            todo += children(p)
        return out

    def worker_pids(self) -> list[int]:
        """The worker processes: the children of the server's forkserver, or spawned."""
        out = []
        for p in children(self.proc.pid):
            try:
                cmd = Path(f"/proc/{p}/cmdline").read_bytes()
            except OSError:
                continue
            if b"forkserver" in cmd:
                out += children(p)
            elif b"spawn_main" in cmd:  # spawned workers (when the forkserver cannot start)
                out.append(p)
        return out

    def live_workers(self, timeout: float = 30) -> list[int]:
        """The worker pids once there is at least one. A listing can come back empty while the
        pool forks a replacement or the kernel's child list is read mid-change."""
        end = time.monotonic() + timeout
        while True:
            pids = self.worker_pids()
            if pids or time.monotonic() > end:
                return pids
            time.sleep(0.1)


def children(pid: int) -> list[int]:
    kids = []
    for task in Path(f"/proc/{pid}/task").glob("*"):  # children of every thread
        try:
            kids += [int(k) for k in (task / "children").read_text().split()]
        except OSError:
            pass
    return kids


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def request(
    url, body=None, ctype="application/octet-stream", method=None, headers=None, timeout=600
):
    h = dict(headers or {})
    if body is not None:
        h.setdefault("Content-Type", ctype)
    req = urllib.request.Request(url, data=body, headers=h, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def jrequest(url, body=None, **kw):
    status, out = request(url, body, **kw)
    try:
        return status, json.loads(out)
    except ValueError:
        return status, out


def raw(port: int, data: bytes, wait: float = 30.0, close_after: float | None = None) -> bytes:
    """Send raw bytes; read until the server closes (or `wait` seconds)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=wait)
    try:
        s.sendall(data)
        out = b""
        while True:
            try:
                b = s.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not b:
                break
            out += b
        return out
    finally:
        s.close()


def status_of(response: bytes) -> int:
    return int(response.split(b" ", 2)[1]) if response.startswith(b"HTTP/") else 0


def body_of(response: bytes):
    return json.loads(response.split(b"\r\n\r\n", 1)[1])


def npz(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def ort_run(model: bytes | Path, feed: dict) -> list[np.ndarray]:
    import onnxruntime as ort

    src = model.read_bytes() if isinstance(model, Path) else model
    return ort.InferenceSession(src, providers=["CPUExecutionProvider"]).run(None, feed)


# -- models --------------------------------------------------------------------------------------
def _model(nodes, inputs, outputs, inits=(), opset=17) -> bytes:
    from onnx import helper

    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


def tiny_relu() -> bytes:
    """x -> Relu, with free dims: a model of a few dozen bytes."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a", "b"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])
    return _model([helper.make_node("Relu", ["x"], ["y"])], [x], [y])


def constant_of_shape(n: int) -> bytes:
    """A few bytes that fold to an n x n float constant (added to the input)."""
    from onnx import TensorProto, helper, numpy_helper

    shape = numpy_helper.from_array(np.array([n, n], np.int64), "s")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])
    return _model(
        [
            helper.make_node("ConstantOfShape", ["s"], ["c"]),
            helper.make_node("Add", ["c", "x"], ["y"]),
        ],
        [x],
        [y],
        [shape],
    )


def unsupported() -> bytes:
    """Relu then an ai.onnx.ml SVMRegressor, which has no converter."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1])
    svm = helper.make_node(
        "SVMRegressor",
        ["r"],
        ["y"],
        domain="ai.onnx.ml",
        coefficients=[1.0],
        support_vectors=[0.5, 0.5],
        n_supports=1,
        rho=[0.0],
        kernel_type="LINEAR",
    )
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]), svm], "g", [x], [y])
    m = helper.make_model(
        g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)]
    )
    m.ir_version = 8
    return m.SerializeToString()


def mlp(seed: int, width: int = 24, depth: int = 3) -> bytes:
    """A small MLP whose sizes depend on `seed` (so its kernels are new to a compile cache)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    w = width + seed % 17
    nodes, inits, prev, cin = [], [], "x", 16
    for k in range(depth):
        cout = w + 3 * k
        inits += [
            numpy_helper.from_array(
                (rng.standard_normal((cin, cout)) / np.sqrt(cin)).astype(np.float32), f"w{k}"
            ),
            numpy_helper.from_array(rng.standard_normal(cout).astype(np.float32), f"b{k}"),
        ]
        nodes += [
            helper.make_node("MatMul", [prev, f"w{k}"], [f"m{k}"]),
            helper.make_node("Add", [f"m{k}", f"b{k}"], [f"a{k}"]),
            helper.make_node("Tanh", [f"a{k}"], [f"h{k}"]),
        ]
        prev, cin = f"h{k}", cout
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])
    y = helper.make_tensor_value_info(prev, TensorProto.FLOAT, [4, cin])
    return _model(nodes, [x], [y], inits)


def _zip_one(name: str, deflated: bytes, crc: int, size: int) -> bytes:
    """A one-member zip archive around an already deflated stream."""
    import struct

    n = name.encode()
    local = (
        struct.pack(
            "<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, len(deflated), size, len(n), 0
        )
        + n
    )
    central = (
        struct.pack(
            "<IHHHHHHIIIHHHHHII",
            0x02014B50,
            20,
            20,
            0,
            8,
            0,
            0x21,
            crc,
            len(deflated),
            size,
            len(n),
            0,
            0,
            0,
            0,
            0,
            0,
        )
        + n
    )
    end = struct.pack(
        "<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central), len(local) + len(deflated), 0
    )
    return local + deflated + central + end


def npz_bomb(declared: tuple = (16384, 16384)) -> bytes:
    """An .npz of ~1 MB whose one member decompresses to `declared` float32 zeros (1 GiB):
    one deflated block of zeros repeated, so building it costs no gigabyte of compression."""
    import zlib

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f4", "fortran_order": False, "shape": declared}
    )
    head = header.getvalue()
    n = int(np.prod(declared)) * 4
    chunk = bytes(min(1 << 22, n))
    reps, rest = divmod(n, len(chunk))
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = c.compress(head) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    stream = first + block * reps + c.compress(bytes(rest)) + c.flush()
    crc = zlib.crc32(head)
    for _ in range(reps):
        crc = zlib.crc32(chunk, crc)
    crc = zlib.crc32(bytes(rest), crc)
    return _zip_one("image.npy", stream, crc, len(head) + n)


def npz_lying_size() -> bytes:
    """A member whose header declares a small array but whose data is far longer."""
    buf = io.BytesIO()
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f4", "fortran_order": False, "shape": (1, 3, 32, 32)}
    )
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        with z.open("image.npy", "w", force_zip64=True) as f:
            f.write(header.getvalue())
            f.write(bytes(64 << 20))
    return buf.getvalue()


def deep_json(depth: int = 100_000) -> bytes:
    return b'{"inputs": {"image": ' + b"[" * depth + b"]" * depth + b"}}"
