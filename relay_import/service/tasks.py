"""What runs inside a worker process (see pool.py): each task takes paths in its job directory
and plain options, writes large results to files there, and returns a small JSON-able dict.
Errors a client caused are raised as RelayError / ApiError; pool.py turns them into answers."""

from __future__ import annotations

import os
import tarfile
import zipfile
from collections import Counter

import numpy as np

from .errors import ApiError


def _load(path: str, framework: str, shapes: dict | None, byte_budget: int):
    import relay_import as ri

    if framework == "onnx":
        return ri.from_onnx(path, shapes=shapes, byte_budget=byte_budget)
    if framework == "savedmodel":
        path = _unpack_savedmodel(path, byte_budget)
    kw = {"shapes": shapes} if shapes else {}
    try:
        return ri.load(path, **kw)
    except TypeError as e:
        if "shapes" in str(e):
            raise ApiError(
                "invalid_parameter", f"shape overrides are not supported for {framework} models"
            ) from None
        raise


def _unpack_savedmodel(archive: str, budget: int) -> str:
    """Extract an uploaded SavedModel archive (.tar[.gz] or .zip) safely: no absolute paths,
    no `..`, no links, total size within the budget; returns the SavedModel directory."""
    dest = os.path.join(os.path.dirname(archive), "savedmodel")
    os.makedirs(dest, exist_ok=True)
    total = 0
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as z:
            infos = z.infolist()
            for i in infos:
                _check_member(i.filename, i.file_size, total, budget)
                total += i.file_size
            z.extractall(dest)
    else:
        try:
            tf = tarfile.open(archive)
        except tarfile.TarError:
            raise ApiError(
                "invalid_model", "a SavedModel upload must be a .tar, .tar.gz or .zip archive"
            ) from None
        with tf:
            for m in tf.getmembers():
                if not (m.isfile() or m.isdir()):
                    raise ApiError("invalid_model", f"archive member {m.name!r} is not a file")
                _check_member(m.name, m.size, total, budget)
                total += m.size
            tf.extractall(dest, filter="data")
    for root, _dirs, files in os.walk(dest):
        if "saved_model.pb" in files or "saved_model.pbtxt" in files:
            return root
    raise ApiError("invalid_model", "the archive holds no saved_model.pb")


def _check_member(name: str, size: int, total: int, budget: int) -> None:
    parts = name.replace("\\", "/").split("/")
    if name.startswith("/") or ".." in parts:
        raise ApiError("invalid_model", f"archive member {name!r} points outside the archive")
    if total + size > budget:
        raise ApiError("budget_exceeded", f"the archive unpacks to more than {budget:,} bytes")


def _tensor_info(name: str, t) -> dict:
    from relay_core.ir import TensorType
    from relay_core.ir.types import AnyDim

    if isinstance(t, TensorType):
        shape = [
            d if isinstance(d, int) else "?" if isinstance(d, AnyDim) else str(d) for d in t.shape
        ]
        return {"name": name, "shape": shape, "dtype": t.dtype, "type": str(t)}
    return {"name": name, "shape": None, "dtype": None, "type": str(t)}


def inspect(model: str, framework: str, byte_budget: int) -> dict:
    """Types, op summary and unsupported ops of an uploaded model."""
    from relay_core.errors import UnsupportedOpsError
    from relay_core.ir import Call, Op, TupleType
    from relay_core.ir.visitor import post_order

    info: dict = {"framework": framework, "unsupported_ops": [], "convertible": True}
    try:
        mod = _load(model, framework, None, byte_budget)
    except UnsupportedOpsError as e:
        info["convertible"] = False
        info["unsupported_ops"] = [
            " ".join(str(x) for x in op if x not in (None, "")) for op in e.ops
        ]
        info.update(inputs=[], outputs=[], source_ops={}, relay_ops={}, functions=0)
        return info
    main = mod["main"]
    info["inputs"] = [_tensor_info(p.name_hint, p.checked_type) for p in main.params]
    ret = main.body.checked_type
    names = mod.attrs.get("output_names") or []
    outs = ret.fields if isinstance(ret, TupleType) else (ret,)
    info["outputs"] = [
        _tensor_info(names[i] if i < len(names) else f"output{i}", t) for i, t in enumerate(outs)
    ]
    src = Counter(op for _, op, _, _ in mod.attrs.get("source_nodes", []))
    rel: Counter = Counter()
    for _, f in mod.functions.items():
        for node in post_order(f):
            if type(node) is Call and type(node.op) is Op:
                rel[node.op.name] += 1
    info["source_ops"] = dict(src.most_common())
    info["relay_ops"] = dict(rel.most_common())
    info["functions"] = len(mod.functions)
    return info


def relay_text(
    model: str, framework: str, out: str, shapes, meta: bool, byte_budget: int, max_bytes: int
) -> dict:
    mod = _load(model, framework, shapes, byte_budget)
    text = mod.astext(show_meta_data=meta) + "\n"
    data = text.encode()
    if len(data) > max_bytes:
        hint = "ask without the constants (?meta=false)" if meta else "download the artifact"
        raise ApiError(
            "response_too_large",
            f"the Relay text is {len(data):,} bytes, over the limit of {max_bytes:,}; {hint}",
        )
    with open(out, "wb") as f:
        f.write(data)
    return {"bytes": len(data)}


def verify(
    model: str,
    framework: str,
    name: str,
    html: str,
    shapes,
    rtol: float,
    atol: float,
    seed: int,
    inputs: str | None,
    byte_budget: int,
) -> dict:
    import dataclasses

    from relay_import.verifier import verify as _verify

    feed = None
    if inputs:
        with np.load(inputs, allow_pickle=False) as z:
            feed = {k: z[k] for k in z.files}
    kw = {"byte_budget": byte_budget} if framework == "onnx" else {}
    src = _unpack_savedmodel(model, byte_budget) if framework == "savedmodel" else model
    report = _verify(src, inputs=feed, rtol=rtol, atol=atol, seed=seed, shapes=shapes, **kw)
    report.source = name
    report.write_html(html)
    report.html_path = None
    fd = report.first_divergence
    return {
        "ok": report.ok,
        "summary": report.summary(),
        "rtol": rtol,
        "atol": atol,
        "outputs": [_jsonable(dataclasses.asdict(d)) for d in report.outputs],
        "inputs": _jsonable(report.inputs),
        "first_divergence": None
        if fd is None
        else {
            "node": fd.node,
            "op": fd.op,
            "output": fd.output,
            "layer": fd.index + 1,
            "layers": len(report.layers),
            "max_abs": _num(fd.diff.max_abs),
            "max_rel": _num(fd.diff.max_rel),
        },
        "notes": report.notes,
        "timings": {k: round(v, 4) for k, v in report.timings.items()},
    }


def compile_model(
    model: str, framework: str, out: str, shapes, opt_level: int, byte_budget: int
) -> dict:
    import relay_import as ri

    mod = _load(model, framework, shapes, byte_budget)
    lib = ri.compile(mod, opt_level=opt_level)
    art = os.path.join(os.path.dirname(out), "model.relaylib")
    lib.export(art)
    with tarfile.open(out, "w:gz") as tf:
        tf.add(art, arcname="model.relaylib")
    return {
        "inputs": [{"name": n, "type": t} for n, t in zip(lib.input_names, lib.input_types)],
        "outputs": [{"name": n, "type": t} for n, t in zip(lib.output_names, lib.output_types)],
        "build_seconds": round(getattr(lib, "build_seconds", 0.0), 3),
        "bytes": os.path.getsize(out),
    }


def run_artifact(artifact: str, inputs: str, out: str, max_output_bytes: int) -> dict:
    """Inference in a worker: for modules whose output sizes depend on the inputs."""
    import relay_import as ri

    lib = ri.load_compiled(artifact)
    with np.load(inputs, allow_pickle=False) as z:
        feed = {k: z[k] for k in z.files}
    outs = [np.asarray(o) for o in lib(**feed)]
    total = sum(o.nbytes for o in outs)
    if total > max_output_bytes:
        raise ApiError(
            "budget_exceeded",
            f"the outputs take {total:,} bytes; an answer may take {max_output_bytes:,}",
        )
    np.savez(out, **dict(zip(lib.output_names, outs)))
    return {"outputs": list(lib.output_names)}


def _num(v):
    v = float(v)
    return v if np.isfinite(v) else str(v)


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.floating, float)):
        return _num(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    return x


TASKS = {
    "inspect": inspect,
    "relay_text": relay_text,
    "verify": verify,
    "compile": compile_model,
    "run": run_artifact,
}


def lookup(task: str):
    """A task by name, or any importable `module:function` (the pool's own tests use that;
    only the service's code chooses tasks, never a request)."""
    if task in TASKS:
        return TASKS[task]
    import importlib

    mod, _, fn = task.partition(":")
    return getattr(importlib.import_module(mod), fn)
