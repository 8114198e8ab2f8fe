"""`relay convert-batch MANIFEST`: convert, verify and compile many models into the store.

Locally the models go through the service's engine with a pool of worker processes; with
`--ray` each model is a Ray task (one CPU) that runs the same engine, with its own worker
process, on whichever node Ray picks, reading and writing the shared store. Results share the
service's keys, so a `relay serve` on the same store serves the artifacts at once. The run's
results and a summary table land under batches/<key>/ in the store.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .config import ServiceConfig
from .engine import FORMATS, Engine, detect_format
from .errors import ApiError
from .store import Store, build_version, content_id, digest


def read_manifest(path: str) -> list[dict]:
    """Entries {"path", "name", "format", "shapes", "rtol", "atol", "opt_level"}."""
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    if p.suffix.lower() == ".json":
        try:
            doc = json.loads(text)
        except ValueError as e:
            raise ValueError(f"{p.name}: not valid JSON ({e})") from None
        items = doc.get("models") if isinstance(doc, dict) else doc
        if not isinstance(items, list):
            raise ValueError(f'{p.name}: expected a list of models or {{"models": [...]}}')
    else:
        items = [ln.strip() for ln in text.splitlines()]
        items = [ln for ln in items if ln and not ln.startswith("#")]
    out, seen = [], set()
    for k, it in enumerate(items):
        e = {"path": it} if isinstance(it, str) else dict(it)
        if not isinstance(e.get("path"), str):
            raise ValueError(f"{p.name}: entry {k + 1} has no path")
        e["path"] = str((p.parent / e["path"]).resolve())
        name = e.get("name") or Path(e["path"]).stem
        while name in seen:
            name += f"-{k + 1}"
        seen.add(name)
        e["name"] = name
        e["format"] = e.get("format") or detect_format(e["path"])
        if e.get("shapes"):
            e["shapes"] = {n: tuple(int(d) for d in v) for n, v in e["shapes"].items()}
        out.append(e)
    return out


def model_bytes(path: str, fmt: str) -> bytes:
    if fmt == "savedmodel":
        b = io.BytesIO()
        with tarfile.open(fileobj=b, mode="w") as tf:
            tf.add(path, arcname=os.path.basename(os.path.normpath(path)))
        return b.getvalue()
    with open(path, "rb") as f:
        return f.read()


def process(engine: Engine, entry: dict, data: bytes) -> dict:
    """One model through inspect, verify and compile; never raises for the model's faults."""
    row = {"name": entry["name"], "file": os.path.basename(entry["path"]), "status": "error"}
    t0 = time.perf_counter()
    stage = "convert"
    try:
        info = engine.add_model(data, entry["format"], row["file"], trusted=True)
        row.update(
            id=info["id"],
            format=info["format"],
            ops=sum(info.get("source_ops", {}).values()),
            unsupported=info.get("unsupported_ops", []),
        )
        if not info.get("convertible", True):
            row["status"] = "unsupported"
            return row
        shapes = entry.get("shapes")
        stage = "verify"
        rep = engine.verify(info["id"], shapes, entry.get("rtol", 1e-4), entry.get("atol", 1e-5), 0)
        row.update(
            verified=rep["ok"],
            max_abs=max((o["max_abs"] for o in rep["outputs"] if _num(o["max_abs"])), default=0),
            report=rep["id"],
        )
        stage = "compile"
        meta = engine.compile(info["id"], shapes, int(entry.get("opt_level", 3)))
        row.update(artifact=meta["id"], compile_s=meta.get("build_seconds"))
        row["status"] = "ok" if rep["ok"] else "mismatch"
    except ApiError as e:
        row.update(stage=e.extra.get("stage", stage), error=f"{e.code}: {e.message}")
    except OSError as e:
        row.update(stage="read", error=f"cannot read the model: {e.strerror}")
    row["seconds"] = round(time.perf_counter() - t0, 2)
    return row


def _num(v) -> bool:
    return isinstance(v, (int, float))


def table(rows: list[dict]) -> str:
    head = "| model | id | ops | verify (max abs err) | compile s | artifact | status |"
    lines = [head, "|---|---|---:|---|---:|---|---|"]
    for r in rows:
        ver = "" if "verified" not in r else ("parity" if r["verified"] else "MISMATCH")
        if "max_abs" in r:
            ver += f" ({r['max_abs']:.2g})"
        status = r["status"]
        if r.get("error"):
            status += f" at {r.get('stage')}: {r['error']}"
        if r.get("unsupported"):
            status += ": " + ", ".join(r["unsupported"])
        cs = r.get("compile_s")
        lines.append(
            f"| {r['name']} | {r.get('id', '')[:12]} | {r.get('ops', '')} | {ver} | "
            f"{'' if cs is None else f'{cs:.1f}'} | {r.get('artifact', '')[:12]} | "
            f"{status.replace('|', '/')} |"
        )
    return "\n".join(lines)


def convert_batch(
    manifest: str, cfg: ServiceConfig, use_ray: bool = False, address: str | None = None
) -> dict:
    """Run a manifest; returns {"key", "rows", "table", "ok"} and writes them to the store."""
    entries = read_manifest(manifest)
    store = Store(cfg.store)
    datas: list[bytes | None] = []
    for e in entries:
        try:
            datas.append(model_bytes(e["path"], e["format"]))
        except OSError:
            datas.append(None)
    if use_ray:
        rows = _run_ray(entries, datas, cfg, store, address)
    else:
        rows = _run_local(entries, datas, cfg)
    key = digest(
        [(e["name"], d and content_id(d), e.get("shapes")) for e, d in zip(entries, datas)],
        build_version(),
    )
    tab = table(rows)
    store.put_json(f"batches/{key}/results.json", rows)
    store.put(f"batches/{key}/summary.md", (tab + "\n").encode())
    return {
        "key": f"batches/{key}",
        "rows": rows,
        "table": tab,
        "ok": all(r["status"] == "ok" for r in rows),
    }


def _missing(e: dict) -> dict:
    return {
        "name": e["name"],
        "file": os.path.basename(e["path"]),
        "status": "error",
        "stage": "read",
        "error": "cannot read the model file",
    }


def _run_local(entries, datas, cfg: ServiceConfig) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="relay-batch-") as root:
        engine = Engine(cfg, root)
        try:
            with ThreadPoolExecutor(max(1, cfg.workers)) as ex:
                futs = [
                    ex.submit(process, engine, e, d) if d is not None else None
                    for e, d in zip(entries, datas)
                ]
                return [f.result() if f else _missing(e) for f, e in zip(futs, entries)]
        finally:
            engine.close()


def _ray_task(cfg_dict: dict, entry: dict, mid: str) -> dict:
    cfg = ServiceConfig.from_dict(cfg_dict)
    with tempfile.TemporaryDirectory(prefix="relay-batch-") as root:
        engine = Engine(cfg, root)
        try:
            data = engine.store.get(f"models/{mid}/model{FORMATS[entry['format']]}")
            return process(engine, entry, data)
        finally:
            engine.close()


def _run_ray(entries, datas, cfg: ServiceConfig, store: Store, address) -> list[dict]:
    import ray

    if not store.shared:
        raise ValueError(f"{cfg.store}: Ray tasks need a store they can all reach, not memory://")
    init_ray(address)
    cfg_dict = dict(cfg.to_dict(), workers=1)
    task = ray.remote(num_cpus=1, max_retries=0)(_ray_task)
    refs = []
    for e, d in zip(entries, datas):
        if d is None:
            refs.append(None)
            continue
        mid = content_id(d)
        key = f"models/{mid}/model{FORMATS.get(e['format'], '.onnx')}"
        if not store.exists(key):
            store.put(key, d)
        refs.append(task.remote(cfg_dict, e, mid))
    rows = []
    for ref, e in zip(refs, entries):
        if ref is None:
            rows.append(_missing(e))
            continue
        try:
            rows.append(ray.get(ref))
        except ray.exceptions.RayError as err:  # the task's process died
            rows.append(
                {
                    "name": e["name"],
                    "file": os.path.basename(e["path"]),
                    "status": "error",
                    "stage": "ray",
                    "error": f"worker_crashed: the Ray task failed ({type(err).__name__})",
                }
            )
    return rows


def init_ray(address: str | None = None) -> None:
    """Connect to `address` (a cluster) or start a local Ray; reuse one already started."""
    import ray

    if ray.is_initialized():
        return
    env = {k: os.environ[k] for k in ("RELAY_CACHE_DIR",) if k in os.environ}
    kw = {"include_dashboard": False, "_node_ip_address": "127.0.0.1"} if address is None else {}
    ray.init(
        address=address,
        log_to_driver=False,
        logging_level="WARNING",
        runtime_env={"env_vars": env} if env else None,
        **kw,
    )
