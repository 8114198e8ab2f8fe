"""The service's work, without HTTP: store lookups, worker jobs, loaded artifacts.

Every method is synchronous and thread-safe; the ASGI app calls them from threads and
`convert-batch` calls them directly. Derived objects are looked up in the store first, so a
result computed once (by this instance, an earlier one, or another sharing the store) is
never computed again; concurrent requests for the same key wait for one computation.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import tarfile
import threading
import uuid
from collections import OrderedDict

import numpy as np

from ..io import read_npz
from .config import ServiceConfig
from .errors import ApiError
from .limits import check_shapes
from .metrics import Metrics
from .pool import WorkerPool
from .store import Store, build_version, content_id, digest

FORMATS = {"onnx": ".onnx", "keras": ".keras", "pt2": ".pt2", "savedmodel": ".tar"}
_ID = re.compile(r"^[0-9a-f]{32}$")
# errors that the same bytes and build always give again (not limits of this instance)
_DETERMINISTIC = ("invalid_model", "budget_exceeded", "conversion_failed", "type_error")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


def detect_format(path: str) -> str:
    """The upload format of a local model path (for preloaded models)."""
    if os.path.isdir(path):
        return "savedmodel"
    ext = os.path.splitext(path)[1].lower()
    return {".keras": "keras", ".pt2": "pt2"}.get(ext, "onnx")


class Engine:
    def __init__(self, cfg: ServiceConfig, root: str, metrics: Metrics | None = None):
        self.cfg = cfg
        self.limits = cfg.limits
        self.root = root
        os.makedirs(root, exist_ok=True)
        self.store = Store(cfg.store)
        self.metrics = metrics or Metrics()
        lim = cfg.limits
        self.pool = WorkerPool(
            cfg.workers,
            os.path.join(root, "workers"),
            memory=lim.worker_memory,
            cpu=lim.worker_cpu,
            timeout=lim.worker_timeout,
            max_jobs=lim.max_jobs,
            mp_context=cfg.mp_context,
            on_event=self.metrics.pool_event,
        )
        self.metrics.queued.set_function(lambda: self.pool.pending)
        self.version = build_version()
        self.names: dict[str, dict] = {}  # preloaded name -> {"model", "artifact"}
        self._loaded: OrderedDict[str, object] = OrderedDict()
        self._lock = threading.Lock()
        self._keylocks: dict[str, threading.Lock] = {}

    def close(self, timeout: float = 10.0) -> None:
        self.pool.close(timeout)
        with self._lock:
            self._loaded.clear()
        shutil.rmtree(self.root, ignore_errors=True)

    # -- helpers -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _keylock(self, key: str):
        with self._lock:
            lk = self._keylocks.setdefault(key, threading.Lock())
        with lk:
            yield
        with self._lock:
            if not lk.locked():
                self._keylocks.pop(key, None)

    @contextlib.contextmanager
    def _job(self):
        d = os.path.join(self.root, "jobs", uuid.uuid4().hex)
        os.makedirs(d)
        try:
            yield d
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def _cached(self, kind: str, key: str, load):
        v = load(key)
        self.metrics.store.labels(kind, "hit" if v is not None else "miss").inc()
        return v

    def _model_file(self, mid: str, info: dict, job: str) -> str:
        ext = FORMATS[info["format"]]
        path = os.path.join(job, "model" + ext)
        if not self.store.get_file(f"models/{mid}/model{ext}", path):
            raise ApiError("not_found", f"the bytes of model {mid} are missing from the store")
        return path

    # -- models --------------------------------------------------------------------------------
    def add_model(
        self, data: bytes, fmt: str | None = None, filename: str | None = None, trusted=False
    ) -> dict:
        """Store an uploaded model and inspect it in a worker: id, types, ops, unsupported ops.
        Formats that can carry code need the operator's consent (or a `trusted` caller)."""
        fmt = (fmt or "onnx").lower()
        if fmt not in FORMATS:
            raise ApiError(
                "unsupported_format", f"unknown format {fmt!r}; formats are {list(FORMATS)}"
            )
        if fmt != "onnx" and fmt not in self.cfg.allow_formats and not trusted:
            raise ApiError(
                "unsupported_format",
                f"this server accepts ONNX models only: {fmt} files can carry code. The "
                f"operator can allow them with `relay serve --allow-format {fmt}`",
            )
        if not data:
            raise ApiError("empty_body", "send the model file as the request body")
        mid = content_id(data)
        key = f"models/{mid}/info.json"
        info = self._cached("model", key, self.store.get_json)
        if info is not None and info.get("version") == self.version:
            return info
        # a model refused once is refused again from the store (same build, same budget)
        bad = f"models/{mid}/error-{digest(self.version, self.limits.max_tensor_bytes)}.json"
        err = self.store.get_json(bad)
        if err is not None:
            raise ApiError(**err)
        with self._keylock(mid):
            info = self.store.get_json(key)
            if info is not None and info.get("version") == self.version:
                return info
            with self._job() as job:
                path = os.path.join(job, "model" + FORMATS[fmt])
                with open(path, "wb") as f:
                    f.write(data)
                try:
                    res = self.pool.run(
                        "convert",
                        "inspect",
                        {
                            "model": path,
                            "framework": fmt,
                            "byte_budget": self.limits.max_tensor_bytes,
                        },
                    )
                except ApiError as e:
                    if e.code in _DETERMINISTIC:
                        self.store.put_json(bad, {"code": e.code, "message": e.message, **e.extra})
                    raise
            name = os.path.basename(filename or "") or "model" + FORMATS[fmt]
            info = {"id": mid, "format": fmt, "bytes": len(data), "filename": name, **res}
            info["version"] = self.version
            if not self.store.exists(f"models/{mid}/model{FORMATS[fmt]}"):
                self.store.put(f"models/{mid}/model{FORMATS[fmt]}", data)
            self.store.put_json(key, info)
        return info

    def named(self, ref: str) -> dict | None:
        """{"model", "artifact"} of a preloaded model's name (this instance's, or one recorded
        in the store by another instance or by convert-batch)."""
        if ref not in self.names and _NAME.match(ref) and not _ID.match(ref):
            rec = self.store.get_json(f"names/{ref}.json")
            if rec is not None:
                self.names[ref] = rec
        return self.names.get(ref)

    def resolve(self, ref: str) -> str:
        """A model id from an id or a preloaded model's name."""
        rec = self.named(ref)
        if rec is not None:
            return rec["model"]
        if _ID.match(ref):
            return ref
        raise ApiError(
            "not_found",
            f"no model {ref!r}; upload one with POST /v1/models, or list GET /v1/models",
        )

    def model_info(self, ref: str) -> dict:
        mid = self.resolve(ref)
        info = self.store.get_json(f"models/{mid}/info.json")
        if info is None:
            raise ApiError("not_found", f"no model {mid}; upload it with POST /v1/models")
        return info

    def list_models(self, limit: int = 1000) -> dict:
        names = [n.removesuffix(".json") for n in self.store.list("names")[:limit]]
        return {
            "names": {n: self.named(n) for n in names},
            "models": self.store.list("models")[:limit],
        }

    # -- derived objects -----------------------------------------------------------------------
    def relay_text(self, ref: str, shapes: dict | None, meta: bool) -> bytes:
        info = self.model_info(ref)
        check_shapes(info, shapes, self.limits)
        self._convertible(info)
        key = f"relay/{digest(info['id'], 'relay', shapes, meta, self.version)}.txt"
        data = self._cached("relay", key, self.store.get)
        if data is not None:
            return data
        with self._keylock(key), self._job() as job:
            data = self.store.get(key)
            if data is not None:
                return data
            out = os.path.join(job, "model.relay")
            self.pool.run(
                "convert",
                "relay_text",
                {
                    "model": self._model_file(info["id"], info, job),
                    "framework": info["format"],
                    "out": out,
                    "shapes": shapes,
                    "meta": meta,
                    "byte_budget": self.limits.max_tensor_bytes,
                    "max_bytes": self.limits.max_text_bytes,
                },
            )
            with open(out, "rb") as f:
                data = f.read()
            self.store.put(key, data)
            return data

    def verify(
        self,
        ref: str,
        shapes: dict | None = None,
        rtol: float = 1e-4,
        atol: float = 1e-5,
        seed: int = 0,
        inputs: dict | None = None,
    ) -> dict:
        info = self.model_info(ref)
        if inputs is None:
            check_shapes(info, shapes, self.limits)
        self._convertible(info)
        buf = None
        if inputs is not None:
            b = io.BytesIO()
            np.savez(b, **inputs)
            buf = b.getvalue()
        rid = digest(
            info["id"], "verify", shapes, rtol, atol, seed, buf and content_id(buf), self.version
        )
        key = f"reports/{rid}/report.json"
        rep = self._cached("report", key, self.store.get_json)
        if rep is not None:
            return rep
        with self._keylock(key), self._job() as job:
            rep = self.store.get_json(key)
            if rep is not None:
                return rep
            ipath = None
            if buf is not None:
                ipath = os.path.join(job, "inputs.npz")
                with open(ipath, "wb") as f:
                    f.write(buf)
            html = os.path.join(job, "report.html")
            rep = self.pool.run(
                "verify",
                "verify",
                {
                    "model": self._model_file(info["id"], info, job),
                    "framework": info["format"],
                    "name": info.get("filename") or info["id"],
                    "html": html,
                    "shapes": shapes,
                    "rtol": rtol,
                    "atol": atol,
                    "seed": seed,
                    "inputs": ipath,
                    "byte_budget": self.limits.max_tensor_bytes,
                },
            )
            rep = {"id": rid, "model": info["id"], **rep}
            self.store.put_file(f"reports/{rid}/report.html", html)
            self.store.put_json(key, rep)
            return rep

    def report(self, rid: str, html: bool = False):
        if not _ID.match(rid):
            raise ApiError("not_found", f"no report {rid!r}")
        if html:
            data = self.store.get(f"reports/{rid}/report.html")
        else:
            data = self.store.get_json(f"reports/{rid}/report.json")
        if data is None:
            raise ApiError("not_found", f"no report {rid}")
        return data

    def compile(self, ref: str, shapes: dict | None = None, opt_level: int = 3) -> dict:
        info = self.model_info(ref)
        check_shapes(info, shapes, self.limits)
        self._convertible(info)
        if not 0 <= opt_level <= 3:
            raise ApiError("invalid_parameter", "opt_level is 0, 1, 2 or 3")
        aid = digest(info["id"], "compile", shapes, opt_level, self.version)
        key = f"artifacts/{aid}/meta.json"
        meta = self._cached("artifact", key, self.store.get_json)
        if meta is not None:
            return meta
        with self._keylock(key), self._job() as job:
            meta = self.store.get_json(key)
            if meta is not None:
                return meta
            out = os.path.join(job, "artifact.tar.gz")
            res = self.pool.run(
                "compile",
                "compile",
                {
                    "model": self._model_file(info["id"], info, job),
                    "framework": info["format"],
                    "out": out,
                    "shapes": shapes,
                    "opt_level": opt_level,
                    "byte_budget": self.limits.max_tensor_bytes,
                },
            )
            meta = {
                "id": aid,
                "model": info["id"],
                "shapes": {k: list(v) for k, v in (shapes or {}).items()},
                "opt_level": opt_level,
                "version": self.version,
                **res,
            }
            self.store.put_file(f"artifacts/{aid}/artifact.tar.gz", out)
            self.store.put_json(key, meta)  # written last: its presence means complete
            return meta

    def _convertible(self, info: dict) -> None:
        if not info.get("convertible", True):
            raise ApiError(
                "unsupported_ops",
                f"model {info['id']} uses unsupported operators: "
                + ", ".join(info.get("unsupported_ops", [])),
                unsupported_ops=info.get("unsupported_ops", []),
            )

    # -- artifacts -----------------------------------------------------------------------------
    def artifact_meta(self, aid: str) -> dict:
        rec = self.named(aid)
        if rec is not None and rec.get("artifact"):
            aid = rec["artifact"]
        meta = self.store.get_json(f"artifacts/{aid}/meta.json") if _ID.match(aid) else None
        if meta is None:
            raise ApiError("not_found", f"no artifact {aid!r}; compile a model first")
        return meta

    def artifact_key(self, aid: str) -> str:
        return f"artifacts/{self.artifact_meta(aid)['id']}/artifact.tar.gz"

    def lib(self, aid: str):
        """The artifact loaded for inference (kept in an LRU of `max_loaded`)."""
        aid = self.artifact_meta(aid)["id"]
        with self._lock:
            lib = self._loaded.get(aid)
            if lib is not None:
                self._loaded.move_to_end(aid)
                return lib
        with self._keylock("load/" + aid):
            with self._lock:
                if aid in self._loaded:
                    return self._loaded[aid]
            import relay_import as ri

            dest = os.path.join(self.root, "artifacts", aid)
            if not os.path.isdir(dest):
                tmp = dest + ".part"
                shutil.rmtree(tmp, ignore_errors=True)
                os.makedirs(tmp)
                with self.store.open(f"artifacts/{aid}/artifact.tar.gz") as f:
                    with tarfile.open(fileobj=f, mode="r:gz") as tf:
                        tf.extractall(tmp, filter="data")
                os.replace(tmp, dest)
            lib = ri.load_compiled(os.path.join(dest, "model.relaylib"))
            lib.timeout = self.limits.worker_timeout  # a model's loops stop in time too
            with self._lock:
                self._loaded[aid] = lib
                while len(self._loaded) > self.cfg.max_loaded:
                    old, _ = self._loaded.popitem(last=False)
                    shutil.rmtree(os.path.join(self.root, "artifacts", old), ignore_errors=True)
                self.metrics.loaded.set(len(self._loaded))
            return lib

    def run(self, aid: str, feed: dict) -> tuple[list[str], list[np.ndarray]]:
        """Inference. A module with static output shapes runs here once its outputs are known
        to fit the budget; one whose sizes depend on the inputs (or every one, with
        `isolate_inference`) runs in a worker, under its memory limit."""
        from relay_core.errors import InputError, RelayError, ResourceLimitError

        lib = self.lib(aid)
        if self.cfg.isolate_inference or not _static_outputs(lib):
            return self._run_isolated(lib, feed)
        nbytes = sum(
            int(np.prod(o["shape"], dtype=np.int64)) * _itemsize(o["dtype"])
            for o in lib.manifest["outputs"]
        )
        if nbytes > self.limits.max_output_bytes:
            raise ApiError(
                "budget_exceeded",
                f"the outputs take {nbytes:,} bytes; an answer may take "
                f"{self.limits.max_output_bytes:,}",
            )
        try:
            outs = lib(**feed)
        except InputError as e:
            raise ApiError("invalid_inputs", str(e)) from None
        except ResourceLimitError as e:
            raise ApiError("budget_exceeded", str(e)) from None
        except RelayError as e:
            raise ApiError("invalid_inputs", f"the model failed on these inputs: {e}") from None
        return list(lib.output_names), outs

    def _run_isolated(self, lib, feed: dict):
        with self._job() as job:
            ipath, opath = os.path.join(job, "inputs.npz"), os.path.join(job, "outputs.npz")
            np.savez(ipath, **feed)
            res = self.pool.run(
                "run",
                "run",
                {
                    "artifact": lib.path,
                    "inputs": ipath,
                    "out": opath,
                    "max_output_bytes": self.limits.max_output_bytes,
                },
            )
            outs = read_npz(opath, self.limits.max_output_bytes)  # not np.load: see read_npz
            return res["outputs"], [outs[n] for n in res["outputs"]]

    # -- preloaded models ----------------------------------------------------------------------
    def preload(self, name: str, path: str) -> dict:
        """Register an operator's model under `name`: stored, inspected and compiled (any
        format: the operator's own files are trusted)."""
        fmt = detect_format(path)
        if fmt == "savedmodel":
            b = io.BytesIO()
            with tarfile.open(fileobj=b, mode="w") as tf:
                tf.add(path, arcname=os.path.basename(os.path.normpath(path)))
            data = b.getvalue()
        else:
            with open(path, "rb") as f:
                data = f.read()
        info = self.add_model(data, fmt, os.path.basename(path), trusted=True)
        self._convertible(info)
        meta = self.compile(info["id"])
        rec = {"model": info["id"], "artifact": meta["id"]}
        if not _NAME.match(name):
            raise ApiError("invalid_parameter", f"a model name is letters, digits, _ . -: {name!r}")
        self.store.put_json(f"names/{name}.json", rec)
        self.names[name] = rec
        self.lib(meta["id"])
        return rec


def _itemsize(dtype: str) -> int:
    from relay_core.ir import dtype as dt

    return 8 if dtype == "string" else dt.itemsize(dtype)


def _static_outputs(lib) -> bool:
    outs = lib.manifest["outputs"]
    if lib.manifest.get("kind", "graph") != "graph":
        return False
    return all(
        isinstance(o.get("shape"), list)
        and all(isinstance(d, int) for d in o["shape"])
        and o.get("dtype")
        for o in outs
    )


def expected_inputs(lib) -> dict:
    """{input name: (shape with str for free dims, numpy dtype or None)} of a compiled module."""
    out = {}
    for i in lib.manifest["inputs"]:
        try:
            dt = np.dtype(i.get("dtype")) if i.get("dtype") else None
        except TypeError:
            dt = None
        out[i["name"]] = (tuple(i["shape"]) if "shape" in i else None, dt)
    return out
