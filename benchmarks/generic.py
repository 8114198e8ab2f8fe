"""Shape-generic builds: a model exported with a dynamic batch axis (as users export for
serving) compiles once for every batch size; here against the static build of the same model
at each batch size and against onnxruntime.

    python -m benchmarks.generic [--models resnet18,...] [--rounds 15]   (make bench-generic)

Per model: torch.onnx export of the torchvision module (random weights) with a dynamic batch
axis and, per batch size, with static shapes; `relay_import.compile(relay_import.load(path))`
of each (the dynamic one without options: the shape-generic build). In one process, per batch
size, the generic build, the static build and onnxruntime (on the static file, no spinning)
run in interleaved rounds (rotating order). Ratios are medians [p10, p90] of per-round ratios.
Outputs are checked against onnxruntime first. Writes its section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from benchmarks.compile import write_section
from benchmarks.run import (
    _geomean,
    _load,
    _pct,
    _ratio,
    export_torch_onnx,
    ort_session,
    rel_error,
    section_head,
)

MARK = "<!-- section: bench-generic -->"
DEFAULT = "resnet18,resnet50,mobilenet_v2,efficientnet_b0,regnet_y_400mf"
BATCHES = (1, 8)


def measure(name: str, rounds: int, tmp: str) -> list[dict]:
    import relay_import as ri
    from benchmarks.architectures import MODELS

    bm = {m.name: m for m in MODELS}[name]
    model, inputs = bm.make()
    dyn = os.path.join(tmp, f"{name}_dyn.onnx")
    export_torch_onnx(model, inputs(1), dyn, ({0: "batch"},))
    t0 = time.perf_counter()
    gen = ri.compile(ri.load(dyn))
    compile_s = time.perf_counter() - t0
    rows = []
    for b in BATCHES:
        xs = inputs(b)
        path = os.path.join(tmp, f"{name}_b{b}.onnx")
        export_torch_onnx(model, xs, path)
        st = ri.compile(ri.load(path))
        sess = ort_session(path)
        feed = {i.name: x for i, x in zip(sess.get_inputs(), xs)}
        want = sess.run(None, feed)[0]
        err = max(rel_error(gen(*xs)[0], want), rel_error(st(*xs)[0], want))
        fns = {
            "gen": lambda xs=xs: gen(*xs),
            "st": lambda st=st, xs=xs: st(*xs),
            "ort": lambda s=sess, f=feed: s.run(None, f),
        }
        for f in fns.values():
            f()
        ts: dict = {k: [] for k in fns}
        keys = list(fns)
        for r in range(rounds):
            for k in keys[r % 3 :] + keys[: r % 3]:
                t = time.perf_counter()
                fns[k]()
                ts[k].append(time.perf_counter() - t)
        a = {k: np.array(v) for k, v in ts.items()}
        row = {"model": name, "batch": b, "err": err, "compile_s": compile_s, "kind": gen.kind}
        row.update({k: float(np.median(v)) * 1e3 for k, v in a.items()})
        for num, den in (("gen", "st"), ("gen", "ort"), ("st", "ort")):
            q = a[num] / a[den]
            row[f"{num}/{den}"] = (_pct(q, 10), float(np.median(q)), _pct(q, 90))
        print(row, flush=True)
        rows.append(row)
    return rows


def table(rows: list[dict], started: str, before: str, after: str, command: str) -> str:
    title = "## Shape-generic builds: one compile for every batch size (`make bench-generic`)"
    lines = [
        MARK,
        *section_head(title, started, before, after),
        f"Command: `{command}`",
        "",
        "A torchvision model exported with a dynamic batch axis compiles to one shape-generic "
        "module (`relay_import.compile(relay_import.load(path))`, no options); the static "
        "build is the same model exported at that batch size. Interleaved rounds in one process; "
        "ratios are medians [p10, p90] of per-round ratios (below 1: the first is faster).",
        "",
        "| model | batch | generic (ms) | static (ms) | ORT (ms) | generic / static | "
        "generic / ORT | static / ORT | max rel. error | generic compile (s) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    for r in rows:
        lines.append(
            f"| {r['model']} | {r['batch']} | {r['gen']:.2f} | {r['st']:.2f} | {r['ort']:.2f} | "
            f"{_ratio(r['gen/st'])} | {_ratio(r['gen/ort'])} | {_ratio(r['st/ort'])} | "
            f"{r['err']:.1e} | {r['compile_s']:.1f} |"
        )
    for b in BATCHES:
        sel = [r for r in rows if r["batch"] == b]
        if sel:
            g = {k: _geomean([r[k][1] for r in sel]) for k in ("gen/st", "gen/ort", "st/ort")}
            lines.append(
                f"| **geomean** | {b} |  |  |  | **{g['gen/st']:.2f}** | **{g['gen/ort']:.2f}** | "
                f"**{g['st/ort']:.2f}** |  |  |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=DEFAULT)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "RESULTS.md"))
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    before = _load()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            rows += measure(name.strip(), args.rounds, tmp)
    command = f"python -m benchmarks.generic --models {args.models} --rounds {args.rounds}"
    md = table(rows, started, before, _load(), command)
    print(md)
    if not args.no_write:
        write_section(args.out, MARK, md)


if __name__ == "__main__":
    main()
