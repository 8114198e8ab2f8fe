"""The ASGI application of `relay serve` (FastAPI): versioned routes over the Engine, JSON
errors with stable codes, bearer-token auth, a bound on requests in flight, metrics.

    GET  /health                          live (answers during start-up too)
    GET  /ready                           200 once every preloaded model is compiled, else 503
    GET  /metrics                         Prometheus exposition
    GET  /v1/models                       preloaded names and stored model ids
    POST /v1/models                       upload a model (body: its bytes) -> id, types, ops
    GET  /v1/models/{ref}                 the same for a stored model (ref: id or name)
    GET  /v1/models/{ref}/relay           the typed Relay program (?shape=x=1,3,8,8 &meta=false)
    POST /v1/models/{ref}/verify          parity with the source runtime -> report + HTML link
    POST /v1/models/{ref}/compile         -> artifact id, download and run links
    POST /v1/models/{ref}/run             inference on the model's default artifact
    GET  /v1/artifacts/{id}               artifact metadata
    GET  /v1/artifacts/{id}/download      the exported artifact, .tar.gz
    POST /v1/artifacts/{id}/run           inference: .npz in and out, or JSON in and out
    GET  /v1/reports/{id}[/html]          a stored verify report
    POST /v1/convert, POST /v1/verify     upload and convert / verify in one request
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import secrets
import sys
import tempfile
import time
import traceback
import uuid
from functools import partial
from typing import Annotated

import anyio
import numpy as np
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..io import _storable
from .config import ServiceConfig
from .engine import Engine, expected_inputs
from .errors import ApiError
from .limits import decode_json, decode_npz, parse_shapes, read_body
from .metrics import Metrics
from .store import digest

SHAPES = Annotated[list[str] | None, Query(description="NAME=D0,D1,... (repeatable)")]
OPEN_PATHS = {"/health", "/ready", "/docs", "/openapi.json"}
UNCOUNTED = {"/health", "/ready", "/metrics"}
_BINARY = {
    "requestBody": {
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    }
}
_INPUTS = {
    "requestBody": {
        "content": {
            "application/octet-stream": {
                "schema": {"type": "string", "format": "binary", "description": "np.savez"}
            },
            "application/json": {"schema": {"type": "object", "properties": {"inputs": {}}}},
        },
    }
}


def error_response(e: ApiError) -> JSONResponse:
    headers = {}
    if e.close:
        headers["Connection"] = "close"
    if "retry_after" in e.extra:
        headers["Retry-After"] = str(e.extra["retry_after"])
    if e.status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    return JSONResponse(e.body(), status_code=e.status, headers=headers)


class State:
    """What the routes share: the engine (set at start-up), readiness, in-flight count."""

    def __init__(self, cfg: ServiceConfig, metrics: Metrics):
        self.cfg = cfg
        self.metrics = metrics
        self.engine: Engine | None = None
        self.pending: list[str] = list(cfg.models)
        self.failed: dict[str, dict] = {}
        self.inflight = 0
        self.instance = uuid.uuid4().hex[:12]  # answers carry it: which replica answered
        self.instance_header = (b"x-relay-instance", self.instance.encode())
        self.exit_code = 0
        self.on_fatal = None  # called when a preloaded model cannot be served
        n = max(2, os.cpu_count() or 2)
        self.run_limiter = anyio.CapacityLimiter(n)
        self.job_limiter = anyio.CapacityLimiter(max(1, cfg.limits.max_jobs))

    @property
    def ready(self) -> bool:
        return self.engine is not None and not self.pending and not self.failed

    def need(self) -> Engine:
        if self.engine is None:
            raise ApiError("not_ready", "the service is starting; retry in a moment", retry_after=1)
        return self.engine

    async def job(self, fn, *args, **kw):
        return await anyio.to_thread.run_sync(partial(fn, *args, **kw), limiter=self.job_limiter)

    async def quick(self, fn, *args, **kw):
        return await anyio.to_thread.run_sync(partial(fn, *args, **kw), limiter=self.run_limiter)

    async def preload(self) -> None:
        eng = self.need()
        await anyio.to_thread.run_sync(eng.pool.start)
        for name, path in list(self.cfg.models.items()):
            if not self.cfg.quiet:
                print(f"relay serve: compiling {name}", flush=True)
            try:
                await self.job(eng.preload, name, path)
            except Exception as e:  # noqa: BLE001 - reported, then the service stops
                err = e if isinstance(e, ApiError) else ApiError("internal_error", type(e).__name__)
                self.failed[name] = err.body()
                print(
                    f"relay serve: cannot serve model {name} ({os.path.basename(path)}): "
                    f"{err.message}",
                    file=sys.stderr,
                    flush=True,
                )
                self.exit_code = 1
                if self.on_fatal:
                    self.on_fatal()
                return
            finally:
                if name in self.pending and name not in self.failed:
                    self.pending.remove(name)
        self.metrics.ready.set(1)
        if not self.cfg.quiet and self.cfg.models:
            print("relay serve: ready", flush=True)


class Guard:
    """Outermost middleware: auth, the in-flight bound, an early body-size check, metrics."""

    def __init__(self, app, state: State):
        self.app = app
        self.state = state

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        st, m = self.state, self.state.metrics
        path = scope["path"]
        status = [500]

        async def send_(msg):
            if msg["type"] == "http.response.start":
                status[0] = msg["status"]
                msg = dict(msg, headers=[*msg.get("headers", []), st.instance_header])
            await send(msg)

        t0 = time.perf_counter()
        counted = path not in UNCOUNTED
        try:
            err = self._refuse(scope, path, counted)
            if err is not None:
                m.rejected.labels(err.code).inc()
                await error_response(err)(scope, receive, send_)
                return
            if counted:
                st.inflight += 1
                m.inflight.inc()
            try:
                await self.app(scope, receive, send_)
            finally:
                if counted:
                    st.inflight -= 1
                    m.inflight.dec()
        finally:
            route = scope.get("route")
            label = getattr(route, "path", None) or "unmatched"
            m.requests.labels(scope["method"], label, str(status[0])).inc()
            m.latency.labels(label).observe(time.perf_counter() - t0)

    def _refuse(self, scope, path: str, counted: bool) -> ApiError | None:
        cfg = self.state.cfg
        if sum(len(k) + len(v) + 4 for k, v in scope["headers"]) > cfg.limits.max_header_bytes:
            return ApiError(
                "headers_too_large",
                f"the headers exceed {cfg.limits.max_header_bytes:,} bytes",
                close=True,
            )
        headers = dict(scope["headers"])
        if cfg.token and path not in OPEN_PATHS:
            auth = headers.get(b"authorization", b"").decode("latin-1")
            scheme, _, given = auth.partition(" ")
            if scheme.lower() != "bearer" or not secrets.compare_digest(
                given.strip().encode(), cfg.token.encode()
            ):
                return ApiError("unauthorized", "send Authorization: Bearer <token>", close=True)
        if counted and self.state.inflight >= cfg.limits.max_inflight:
            return ApiError(
                "too_many_requests",
                f"{self.state.inflight} requests are in flight; retry later",
                retry_after=1,
                close=True,
            )
        cl = headers.get(b"content-length")
        if cl is not None and cl.isdigit() and int(cl) > cfg.limits.max_body:
            return ApiError(
                "body_too_large",
                f"the request body of {int(cl):,} bytes exceeds the limit of "
                f"{cfg.limits.max_body:,} bytes",
                close=True,
            )
        return None


def _root(tmp_dir: str | None) -> str:
    """The instance's temp root, named after its pid; roots of dead instances are removed."""
    import glob
    import shutil

    base = tmp_dir or tempfile.gettempdir()
    for d in glob.glob(os.path.join(glob.escape(base), "relay-serve-*")):
        try:
            pid = int(os.path.basename(d).split("-")[2])
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
        except (ValueError, IndexError, PermissionError, OSError):
            pass
    return tempfile.mkdtemp(prefix=f"relay-serve-{os.getpid()}-", dir=base)


async def _trim_memory(period: float = 5.0) -> None:
    """Give freed heap back to the system now and then: request bodies of megabytes, freed in
    many threads' malloc arenas, would otherwise stay resident (glibc only)."""
    try:
        import ctypes

        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return
    while True:
        await asyncio.sleep(period)
        await anyio.to_thread.run_sync(trim, 0)


def create_app(cfg: ServiceConfig, metrics: Metrics | None = None) -> FastAPI:
    """The service as an ASGI app. Start-up only creates the engine and starts compiling the
    preloaded models in the background, so the port answers /health at once."""
    state = State(cfg, metrics or Metrics())

    @contextlib.asynccontextmanager
    async def lifespan(app):
        state.engine = Engine(cfg, _root(cfg.tmp_dir), state.metrics)
        task = asyncio.create_task(state.preload())
        trim = asyncio.create_task(_trim_memory())
        try:
            yield
        finally:
            task.cancel()
            trim.cancel()
            await anyio.to_thread.run_sync(state.engine.close, 5.0)

    app = FastAPI(
        title="Relay converter service",
        version="1",
        description="Convert, verify, compile and run ONNX models (and, when the operator "
        "allows, Keras / PyTorch / TensorFlow models). Errors are JSON {code, message}.",
        lifespan=lifespan,
        redoc_url=None,
    )
    app.state.relay = state
    app.add_middleware(Guard, state=state)

    @app.exception_handler(ApiError)
    async def _api_error(request, e: ApiError):
        return error_response(e)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request, e: StarletteHTTPException):
        if e.status_code == 404:
            err = ApiError("not_found", f"no route {request.method} {request.url.path}; see /docs")
        elif e.status_code == 405:
            err = ApiError(
                "method_not_allowed", f"{request.method} is not allowed on {request.url.path}"
            )
        else:
            err = ApiError("bad_request", "bad request", status=e.status_code)
        resp = error_response(err)
        if e.headers and "Allow" in e.headers:
            resp.headers["Allow"] = e.headers["Allow"]
        return resp

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request, e: RequestValidationError):
        parts = []
        for x in e.errors()[:5]:
            loc = ".".join(str(p) for p in x.get("loc", ())[1:]) or "request"
            parts.append(f"{loc}: {x.get('msg', 'invalid')}")
        return error_response(ApiError("invalid_parameter", "; ".join(parts)))

    @app.exception_handler(Exception)
    async def _unexpected(request, e: Exception):
        eid = uuid.uuid4().hex[:12]
        print(f"relay serve: error {eid} on {request.method} {request.url.path}:", file=sys.stderr)
        traceback.print_exception(e, file=sys.stderr)
        return error_response(
            ApiError("internal_error", f"an unexpected error (id {eid}); the server log has it")
        )

    _routes(app, state)
    return app


def _links(aid: str) -> dict:
    return {"download": f"/v1/artifacts/{aid}/download", "run": f"/v1/artifacts/{aid}/run"}


def _wants_json(request: Request) -> bool:
    ctype = request.headers.get("content-type", "")
    return ctype.startswith("application/json") or "json" in request.query_params.get("format", "")


def _routes(app: FastAPI, state: State) -> None:
    cfg = state.cfg

    @app.get("/health", tags=["ops"])
    async def health():
        return {"status": "ok"}

    @app.get("/ready", tags=["ops"])
    async def ready():
        if state.ready:
            names = dict(state.engine.names)
            for n in cfg.store_names:
                names.setdefault(n, state.engine.named(n))
            return {"status": "ready", "models": names}
        return error_response(
            ApiError(
                "not_ready",
                "models are still compiling" if not state.failed else "a model failed",
                pending=state.pending,
                failed=state.failed,
            )
        )

    @app.get("/metrics", tags=["ops"])
    async def metrics():
        body, ctype = state.metrics.render()
        return Response(body, media_type=ctype)

    @app.get("/v1/models", tags=["models"])
    async def list_models():
        eng = state.need()
        return await state.quick(eng.list_models)

    @app.post("/v1/models", status_code=201, tags=["models"], openapi_extra=_BINARY)
    async def upload(request: Request, format: str = "onnx", filename: str | None = None):
        eng = state.need()
        data = await read_body(request, cfg.limits)
        info = await state.job(eng.add_model, data, format, filename)
        return JSONResponse(info, status_code=201, headers={"Location": f"/v1/models/{info['id']}"})

    @app.get("/v1/models/{ref}", tags=["models"])
    async def model(ref: str):
        eng = state.need()
        return await state.quick(eng.model_info, ref)

    @app.get("/v1/models/{ref}/relay", tags=["models"])
    async def relay(ref: str, shape: SHAPES = None, meta: bool = True):
        eng = state.need()
        text = await state.job(eng.relay_text, ref, parse_shapes(shape or []), meta)
        return Response(text, media_type="text/plain; charset=utf-8")

    async def _inputs_of_body(request: Request, expected: dict):
        data = await read_body(request, cfg.limits)
        if not data:
            return None
        if _wants_json(request):
            return await state.quick(decode_json, data, expected, cfg.limits)
        return await state.quick(decode_npz, data, expected, cfg.limits.max_input_bytes)

    def _expected_of(info: dict) -> dict:
        out = {}
        for i in info.get("inputs", []):
            try:
                dt = np.dtype(i["dtype"]) if i.get("dtype") else None
            except TypeError:
                dt = None
            out[i["name"]] = (i.get("shape"), dt)
        return out

    @app.post("/v1/models/{ref}/verify", tags=["models"], openapi_extra=_INPUTS)
    async def verify(
        ref: str,
        request: Request,
        shape: SHAPES = None,
        rtol: float = 1e-4,
        atol: float = 1e-5,
        seed: int = 0,
    ):
        eng = state.need()
        info = await state.quick(eng.model_info, ref)
        inputs = await _inputs_of_body(request, _expected_of(info))
        rep = await state.job(eng.verify, ref, parse_shapes(shape or []), rtol, atol, seed, inputs)
        return {**rep, "html": f"/v1/reports/{rep['id']}/html"}

    @app.post("/v1/models/{ref}/compile", tags=["models"])
    async def compile_(ref: str, shape: SHAPES = None, opt_level: int = 3):
        eng = state.need()
        meta = await state.job(eng.compile, ref, parse_shapes(shape or []), opt_level)
        return {**meta, **_links(meta["id"])}

    @app.get("/v1/reports/{rid}", tags=["reports"])
    async def report(rid: str):
        return await state.quick(state.need().report, rid)

    @app.get("/v1/reports/{rid}/html", tags=["reports"])
    async def report_html(rid: str):
        data = await state.quick(state.need().report, rid, True)
        return Response(data, media_type="text/html; charset=utf-8")

    @app.get("/v1/artifacts/{aid}", tags=["artifacts"])
    async def artifact(aid: str):
        meta = await state.quick(state.need().artifact_meta, aid)
        return {**meta, **_links(meta["id"])}

    @app.get("/v1/artifacts/{aid}/download", tags=["artifacts"])
    async def download(aid: str):
        eng = state.need()
        key = await state.quick(eng.artifact_key, aid)
        size = await state.quick(eng.store.size, key)
        f = await state.quick(eng.store.open, key)

        async def chunks():
            try:
                while True:
                    b = await state.quick(f.read, 1 << 20)
                    if not b:
                        break
                    yield b
            finally:
                f.close()

        name = f"{key.split('/')[1]}.relaylib.tar.gz"
        return StreamingResponse(
            chunks(),
            media_type="application/gzip",
            headers={
                "Content-Length": str(size),
                "Content-Disposition": f'attachment; filename="{name}"',
            },
        )

    async def _run(aid: str, request: Request):
        eng = state.need()
        lib = await state.quick(eng.lib, aid)
        feed = await _inputs_of_body(request, expected_inputs(lib))
        if feed is None:
            raise ApiError(
                "empty_body",
                "send the inputs: an .npz archive, or JSON with Content-Type: application/json",
            )
        runner = (
            state.job
            if (cfg.isolate_inference or lib.manifest.get("kind") != "graph")
            else (state.quick)
        )
        names, outs = await runner(eng.run, aid, feed)
        if _wants_json(request) or "json" in request.headers.get("accept", ""):
            body = {"outputs": {n: np.asarray(v).tolist() for n, v in zip(names, outs)}}
            return Response(json.dumps(body).encode(), media_type="application/json")
        buf = io.BytesIO()
        np.savez(buf, **{n: _storable(v) for n, v in zip(names, outs)})
        return Response(buf.getvalue(), media_type="application/octet-stream")

    @app.post("/v1/artifacts/{aid}/run", tags=["artifacts"], openapi_extra=_INPUTS)
    async def run_artifact(aid: str, request: Request):
        return await _run(aid, request)

    @app.post("/v1/models/{ref}/run", tags=["models"], openapi_extra=_INPUTS)
    async def run_model(ref: str, request: Request):
        eng = state.need()
        rec = await state.quick(eng.named, ref)
        if rec is not None:
            return await _run(rec["artifact"], request)
        info = await state.quick(eng.model_info, ref)
        aid = digest(info["id"], "compile", None, 3, eng.version)
        if not await state.quick(eng.store.exists, f"artifacts/{aid}/meta.json"):
            raise ApiError(
                "not_compiled",
                f"model {info['id']} has no compiled artifact; POST /v1/models/{ref}/compile first",
            )
        return await _run(aid, request)

    @app.post("/v1/convert", tags=["one-shot"], openapi_extra=_BINARY)
    async def convert_once(request: Request, shape: SHAPES = None, meta: bool = True):
        eng = state.need()
        data = await read_body(request, cfg.limits)
        info = await state.job(eng.add_model, data, "onnx")
        text = await state.job(eng.relay_text, info["id"], parse_shapes(shape or []), meta)
        return Response(text, media_type="text/plain; charset=utf-8")

    @app.post("/v1/verify", tags=["one-shot"], openapi_extra=_BINARY)
    async def verify_once(
        request: Request,
        shape: SHAPES = None,
        rtol: float = 1e-4,
        atol: float = 1e-5,
        seed: int = 0,
    ):
        eng = state.need()
        data = await read_body(request, cfg.limits)
        info = await state.job(eng.add_model, data, "onnx")
        rep = await state.job(eng.verify, info["id"], parse_shapes(shape or []), rtol, atol, seed)
        return {**rep, "html": f"/v1/reports/{rep['id']}/html"}
