"""Run zoo models: convert, compile (batch unknown at compile time), run at two batch sizes and
compare with the source framework.

    python -m tests.zoo.runner                    # every model, one subprocess each
    python -m tests.zoo.runner --only BERT -j 2   # a subset, two at a time
    python -m tests.zoo.runner --markdown docs/model_zoo.md   # (re)write the table

Results are appended as JSON lines to `--results` (default zoo_results.jsonl); `--markdown`
renders the latest result per model."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

import numpy as np

TOL = 1e-4
BATCHES = (1, 3)


@dataclass
class Result:
    id: str
    name: str
    frontend: str
    family: str
    status: str  # pass | fail | error
    max_rel: float | None = None
    convert_s: float | None = None
    compile_s: float | None = None
    generic: bool | None = None  # one shape-generic module (else specialising per shape)
    batch_unknown: bool | None = None
    error: str = ""


def rel_error(got, want) -> float:
    worst = 0.0
    for a, b in zip(got, want):
        a = np.asarray(a, np.float64)
        b = np.asarray(b, np.float64)
        if a.shape != b.shape:
            raise AssertionError(f"shape {a.shape} vs {b.shape}")
        if b.size:
            worst = max(worst, float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30)))
    return worst


def run_model(m) -> Result:
    """Convert, compile and compare one ZooModel; never raises."""
    import relay_import as ri
    from relay_core.backend.runtime import CompiledModule
    from relay_core.ir import TensorType

    from .catalog import workdir

    r = Result(m.id, m.name, m.frontend, m.family, "error")
    wd = workdir()
    try:
        prep = m.build(wd)
        t = time.perf_counter()
        mod = ri.load(prep.source, **prep.load_kw)
        r.convert_s = time.perf_counter() - t
        params = mod["main"].params
        r.batch_unknown = all(
            not isinstance(p.checked_type.shape[0], int)
            for p in params
            if isinstance(p.checked_type, TensorType) and p.checked_type.shape
        )
        t = time.perf_counter()
        lib = ri.compile(mod)
        r.compile_s = time.perf_counter() - t
        r.generic = isinstance(lib, CompiledModule)
        worst = 0.0
        for b in BATCHES:
            xs = prep.inputs(b)
            want = prep.reference(xs)
            got = lib(*xs)
            if len(got) != len(want):
                raise AssertionError(f"{len(got)} outputs, the framework has {len(want)}")
            worst = max(worst, rel_error(got, want))
        r.max_rel = worst
        r.status = "pass" if worst <= TOL and r.batch_unknown else "fail"
        if not r.batch_unknown:
            r.error = "the batch dimension was static after conversion"
        elif worst > TOL:
            r.error = f"max relative error {worst:.3g} > {TOL}"
    except Exception as e:  # a zoo run reports every failure
        r.error = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
        if os.environ.get("RELAY_ZOO_TRACE"):
            traceback.print_exc()
    finally:
        shutil.rmtree(wd, ignore_errors=True)
    return r


def _one(model_id: str, results: str, timeout: int) -> dict:
    cmd = [sys.executable, "-m", "tests.zoo.runner", "--one", model_id, "--results", results]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        tail = (p.stderr or "").strip().splitlines()[-1:] if p.returncode else []
    except subprocess.TimeoutExpired:
        tail = [f"timed out after {timeout} s"]
    if tail:  # the child died before writing its result
        fe, _, name = model_id.partition(":")
        r = Result(model_id, name, fe, "", "error", error=tail[0][:300])
        _append(results, r)
        return asdict(r)
    return {}


def _append(path: str, r: Result) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(asdict(r)) + "\n")


def latest(path: str) -> dict[str, dict]:
    out: dict[str, dict] = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.strip():
                    d = json.loads(line)
                    out[d["id"]] = d
    return out


def markdown(results: dict[str, dict], order: list) -> str:
    def num(v, fmt):
        return "" if v is None else format(v, fmt)

    rows = [results[m.id] for m in order if m.id in results]
    passed = sum(r["status"] == "pass" for r in rows)
    lines = [
        "# Outside-model zoo",
        "",
        "Architectures as users bring them, built in-process with random weights "
        "(`tests/zoo/catalog.py`): converted, compiled with the batch dimension unknown, run at "
        f"batch {BATCHES[0]} and {BATCHES[1]}, compared with the source framework "
        f"(max relative error <= {TOL:g}). Regenerate: `make zoo` "
        "(`python -m tests.zoo.runner --markdown docs/model_zoo.md`). The `onnx` rows export "
        "with `torch.onnx.export`'s default (dynamo) exporter, the `onnx-legacy` rows with its "
        "TorchScript exporter (`dynamo=False`, `dynamic_axes`). Times depend on the machine's "
        "load and on what the compile cache already holds.",
        "",
        f"**{passed} / {len(rows)} pass** ({len(order) - len(rows)} of {len(order)} catalogued "
        "models not run in this table).",
        "",
        "| model | frontend | status | max rel err | convert s | compile s | compiled as | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        kind = "" if r.get("generic") is None else ("generic" if r["generic"] else "per shape")
        note = r.get("error", "").replace("|", "\\|")
        lines.append(
            f"| {r['name']} | {r['frontend']} | {r['status']} | {num(r.get('max_rel'), '.2e')} | "
            f"{num(r.get('convert_s'), '.1f')} | {num(r.get('compile_s'), '.1f')} | {kind} | "
            f"{note} |"
        )
    ran = [r for r in rows if r.get("convert_s") is not None]
    if ran:
        slow = max(ran, key=lambda r: r["convert_s"])
        lines += ["", f"Slowest conversion: {slow['id']} ({slow['convert_s']:.1f} s)."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    from .catalog import catalog

    ap = argparse.ArgumentParser(prog="python -m tests.zoo.runner")
    ap.add_argument("--only", action="append", help="substring of a model id (repeatable)")
    ap.add_argument("--one", help="run exactly this model id in this process")
    ap.add_argument("--results", default="zoo_results.jsonl")
    ap.add_argument("--markdown", help="write the table here (no models run unless --run)")
    ap.add_argument("--run", action="store_true", help="with --markdown: run the models first")
    ap.add_argument("-j", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=1200)
    a = ap.parse_args(argv)
    models = catalog()
    if a.one:
        (m,) = [m for m in models if m.id == a.one]
        r = run_model(m)
        _append(a.results, r)
        print(json.dumps(asdict(r)))
        return 0
    if a.only:
        models = [m for m in models if any(s in m.id or s == m.family for s in a.only)]
    if a.run or not a.markdown:
        with ThreadPoolExecutor(a.j) as ex:
            for m, _ in zip(models, ex.map(lambda m: _one(m.id, a.results, a.timeout), models)):
                d = latest(a.results).get(m.id, {})
                print(f"{m.id:40s} {d.get('status')} {d.get('max_rel')} {d.get('error', '')}")
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(markdown(latest(a.results), catalog()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
