"""`relay serve`: an HTTP service over the same API (standard library only).

    GET  /health                       {"status": "ok"}
    GET  /models                       preloaded models with their input / output types
    POST /models/NAME/run              body: .npz of inputs by name (or JSON {"inputs": {...}});
                                       answers .npz (or JSON when the request was JSON)
    POST /convert[?shape=x=1,3,8,8]    body: ONNX model bytes; answers the Relay text
    POST /verify[?rtol=..&atol=..]     body: ONNX model bytes; answers the report as JSON

Bad requests get a JSON error with a 4xx status; an unexpected failure answers 500 and the
server keeps running. Uploads larger than `max_body` bytes are refused before they are read.
Uploaded models are ONNX only: pickled PyTorch files and SavedModels can carry code.
"""

from __future__ import annotations

import io
import json
import tempfile
import threading
import traceback
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import numpy as np

from relay_core.errors import RelayError

MAX_BODY = 512 * 1024 * 1024


class _Models:
    def __init__(self, paths: dict[str, str]):
        self.paths = dict(paths)
        self.libs: dict = {}
        self.lock = threading.Lock()

    def get(self, name: str):
        with self.lock:
            if name not in self.libs:
                if name not in self.paths:
                    raise KeyError(name)
                from . import api

                p = self.paths[name]
                if api.detect_framework(p) == "compiled":
                    self.libs[name] = api.load_compiled(p)
                else:
                    self.libs[name] = api.compile(api.load(p))
            return self.libs[name]


def _types(lib) -> dict:
    return {
        "inputs": [{"name": n, "type": str(t)} for n, t in zip(lib.input_names, lib.input_types)],
        "outputs": [
            {"name": n, "type": str(t)} for n, t in zip(lib.output_names, lib.output_types)
        ],
    }


def make_handler(models: _Models, max_body: int = MAX_BODY, quiet: bool = False):
    class Handler(BaseHTTPRequestHandler):
        server_version = "relay-serve/0.1"

        def log_message(self, fmt, *args):
            if not quiet:
                super().log_message(fmt, *args)

        # -- responses -----------------------------------------------------------------------
        def _send(self, status: int, body: bytes, ctype: str):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, obj):
            self._send(status, json.dumps(obj, indent=1).encode(), "application/json")

        def _error(self, status: int, msg: str):
            self._json(status, {"error": msg})

        def _body(self) -> bytes:
            n = int(self.headers.get("Content-Length") or 0)
            if n > max_body:
                raise _TooLarge(f"request body of {n:,} bytes exceeds the limit of {max_body:,}")
            return self.rfile.read(n) if n else b""

        # -- routing -------------------------------------------------------------------------
        def do_GET(self):
            self._guard(self._get)

        def do_POST(self):
            self._guard(self._post)

        def _guard(self, fn):
            try:
                fn(urlparse(self.path))
            except _TooLarge as e:
                self.close_connection = True
                self._error(413, str(e))
            except (RelayError, ValueError, KeyError) as e:
                msg = f"unknown model {e}" if isinstance(e, KeyError) else str(e)
                self._error(404 if isinstance(e, KeyError) else 400, msg)
            except Exception as e:  # never take the service down
                if not quiet:
                    traceback.print_exc()
                self._error(500, f"internal error: {type(e).__name__}: {e}")

        def _get(self, url):
            if url.path == "/health":
                return self._json(200, {"status": "ok"})
            if url.path == "/models":
                out = {}
                for name in models.paths:
                    try:
                        out[name] = _types(models.get(name))
                    except Exception as e:
                        out[name] = {"error": str(e)}
                return self._json(200, out)
            self._error(404, f"no route {url.path}")

        def _post(self, url):
            q = {k: v[-1] for k, v in parse_qs(url.query).items()}
            parts = url.path.strip("/").split("/")
            if len(parts) == 3 and parts[0] == "models" and parts[2] == "run":
                return self._run(parts[1])
            if url.path == "/convert":
                return self._convert(q)
            if url.path == "/verify":
                return self._verify(q)
            self._error(404, f"no route {url.path}")

        def _run(self, name: str):
            lib = models.get(name)
            body = self._body()
            as_json = (self.headers.get("Content-Type") or "").startswith("application/json")
            if as_json:
                data = json.loads(body or b"{}").get("inputs", {})
                feed = {k: np.asarray(v) for k, v in data.items()}
            else:
                try:
                    with np.load(io.BytesIO(body), allow_pickle=False) as z:
                        feed = {k: z[k] for k in z.files}
                except (OSError, ValueError, zipfile.BadZipFile) as e:
                    raise ValueError(
                        f"the body is not an .npz archive of inputs ({e}); send np.savez output, "
                        'or JSON {"inputs": {...}} with Content-Type: application/json'
                    ) from None
            outs = lib(**feed)
            if as_json:
                return self._json(
                    200,
                    {
                        "outputs": {
                            n: np.asarray(v).tolist() for n, v in zip(lib.output_names, outs)
                        }
                    },
                )
            buf = io.BytesIO()
            np.savez(buf, **{n: np.asarray(v) for n, v in zip(lib.output_names, outs)})
            self._send(200, buf.getvalue(), "application/octet-stream")

        def _with_model_file(self, fn):
            body = self._body()
            if not body:
                raise ValueError("send the ONNX model as the request body")
            with tempfile.TemporaryDirectory(prefix="relay-serve-") as d:
                p = Path(d) / "model.onnx"
                p.write_bytes(body)
                return fn(str(p))

        def _convert(self, q):
            from . import api

            shapes = _shape_query(q.get("shape"))
            mod = self._with_model_file(lambda p: api.from_onnx(p, shapes=shapes))
            self._send(200, mod.astext().encode(), "text/plain; charset=utf-8")

        def _verify(self, q):
            from .verifier import verify

            r = self._with_model_file(
                lambda p: verify(
                    p,
                    rtol=float(q.get("rtol", 1e-4)),
                    atol=float(q.get("atol", 1e-5)),
                    shapes=_shape_query(q.get("shape")),
                )
            )
            fd = r.first_divergence
            self._json(
                200,
                {
                    "ok": r.ok,
                    "summary": r.summary(),
                    "outputs": [d.__dict__ for d in r.outputs],
                    "first_divergence": None
                    if fd is None
                    else {
                        "node": fd.node,
                        "op": fd.op,
                        "output": fd.output,
                        "max_abs": fd.diff.max_abs,
                    },
                },
            )

    Handler.models = models
    return Handler


class _TooLarge(Exception):
    pass


def _shape_query(s: str | None) -> dict | None:
    if not s:
        return None
    out = {}
    for item in s.split(";"):
        name, _, dims = item.partition("=")
        out[name] = tuple(int(d) for d in dims.split(",") if d)
    return out


def make_server(host="127.0.0.1", port=8000, models=None, max_body=MAX_BODY, quiet=False):
    """A ThreadingHTTPServer; call serve_forever() (or use `serve`)."""
    handler = make_handler(_Models(models or {}), max_body, quiet)
    srv = ThreadingHTTPServer((host, port), handler)
    srv.daemon_threads = True
    return srv


def serve(host="127.0.0.1", port=8000, models=None, quiet=False, preload=True) -> None:
    """Serve until interrupted. Models are compiled before listening (`preload`), so a model
    that cannot be served is an error at start, not at its first request."""
    srv = make_server(host, port, models, quiet=quiet)
    if preload:
        handler_models = srv.RequestHandlerClass.models
        for name in handler_models.paths:
            if not quiet:
                print(f"relay serve: compiling {name}", flush=True)
            handler_models.get(name)
    if not quiet:
        print(f"relay serve: listening on http://{host}:{srv.server_address[1]}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()
