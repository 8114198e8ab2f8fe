"""Latency on models no one here wrote: timm families as `timm.create_model` builds them
(random weights, norms calibrated), exported with torch's default ONNX exporter and a dynamic
batch, compiled on the default path (`relay_import.compile(relay_import.load(path))`), against
onnxruntime on the same file.

    python -m benchmarks.timm_latency [--models a,b] [--rounds 15]      (make bench-timm)

Each model runs in a fresh process (a first-time user's: its compile is timed as it comes,
through the compile cache `RELAY_CACHE_DIR` names). Per batch size (1 and 8) our module and an
onnxruntime session (2 threads, no spinning, as `make bench`) run in interleaved rounds;
outputs are checked against onnxruntime first. Ratios are medians [p10, p90] of per-round
ratios (below 1: we are faster). Writes its section of benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchmarks.compile import write_section
from benchmarks.run import (
    _geomean,
    _load,
    _ratio,
    ort_session,
    rel_error,
    section_head,
    time_rounds,
)

MARK = "<!-- section: bench-timm -->"
MODELS = (
    "resnet50d,resnext50_32x4d,seresnext26d_32x4d,cspresnet50,dla34,densenet121,regnety_008,"
    "regnetx_004,efficientnet_b0,tinynet_a,mixnet_s,rexnet_100,ghostnet_100,lcnet_100,"
    "mobilenetv3_large_100,mobilenetv4_conv_small,hgnetv2_b0,fastvit_t8,repvit_m1,"
    "efficientformerv2_s0,efficientvit_b0,levit_128s,pvt_v2_b0,mobilevitv2_050,convnext_nano,"
    "inception_next_tiny,poolformerv2_s12,edgenext_x_small,deit_tiny_patch16_224,"
    "coatnet_nano_rw_224"
)
BATCHES = (1, 8)
TITLE = "## timm families on the default path (`make bench-timm`)"


def measure(name: str, rounds: int, tmp: str) -> dict:
    """One model, in this process: export, load + compile, parity, interleaved rounds."""
    import relay_import as ri
    from tests.zoo import catalog

    t = time.perf_counter()
    path = catalog._torch_prepared(catalog._timm(name), "onnx", tmp, name).source
    rec = {"model": name, "export_s": time.perf_counter() - t}
    sess = ort_session(path)
    inp = sess.get_inputs()[0]
    t = time.perf_counter()
    lib = ri.compile(ri.load(path))
    rec["compile_s"] = time.perf_counter() - t
    rng = np.random.default_rng(0)
    for b in BATCHES:
        x = rng.normal(size=(b, *inp.shape[1:])).astype(np.float32)
        want = sess.run(None, {inp.name: x})[0]
        out = lib(x)
        rec[f"err{b}"] = rel_error(np.asarray(out[0] if isinstance(out, list) else out), want)
        ts = time_rounds(
            {"ort": lambda x=x: sess.run(None, {inp.name: x}), "ours": lambda x=x: lib(x)},
            rounds=rounds,
            budget_s=30,
            warmup=2,
        )
        r = np.asarray(ts["ours"]) / np.asarray(ts["ort"])
        rec[f"b{b}"] = {
            "ort": float(np.median(ts["ort"]) * 1e3),
            "ours": float(np.median(ts["ours"]) * 1e3),
            "ratio": [float(np.percentile(r, q)) for q in (10, 50, 90)],
        }
    return rec


def table(rows: list[dict], started: str, before: str, after: str, command: str) -> str:
    lines = [
        MARK,
        *section_head(TITLE, started, before, after),
        f"Command: `{command}`",
        "",
        "Each model as `timm.create_model(name)` builds it (random weights), exported with "
        "`torch.onnx.export` (its default exporter) and a dynamic batch, then "
        "`relay_import.compile(relay_import.load(path))` with no options, in a fresh process. "
        "Against onnxruntime on the same file (2 threads, no spinning), interleaved rounds; "
        "ratios are medians [p10, p90] of per-round ratios (below 1: we are faster).",
        "",
        "| model | ORT b1 (ms) | ours b1 (ms) | ours / ORT b1 | ORT b8 (ms) | ours b8 (ms) | "
        "ours / ORT b8 | max rel. error | compile (s) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['error']} |  |  |  |  |  |  |  |")
            continue
        b1, b8 = r["b1"], r["b8"]
        lines.append(
            f"| {r['model']} | {b1['ort']:.2f} | {b1['ours']:.2f} | {_ratio(b1['ratio'])} | "
            f"{b8['ort']:.2f} | {b8['ours']:.2f} | {_ratio(b8['ratio'])} | "
            f"{max(r['err1'], r['err8']):.1e} | {r['compile_s']:.1f} |"
        )
    ok = [r for r in rows if "error" not in r]
    if ok:
        g = [_geomean([r[f"b{b}"]["ratio"][1] for r in ok]) for b in BATCHES]
        worst = [max(r[f"b{b}"]["ratio"][1] for r in ok) for b in BATCHES]
        lines.append(
            f"| **geomean ({len(ok)})** |  |  | **{g[0]:.2f}** (worst {worst[0]:.2f}) |  |  | "
            f"**{g[1]:.2f}** (worst {worst[1]:.2f}) |  |  |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=MODELS)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "RESULTS.md"))
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # a child process: one model, JSON out
    args = ap.parse_args()
    if args.one:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                rec = measure(args.one, args.rounds, tmp)
            except Exception as e:  # reported in the table, the run goes on
                rec = {"model": args.one, "error": f"{type(e).__name__}: {str(e)[:200]}"}
        print("RESULT " + json.dumps(rec), flush=True)
        return
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    before = _load()
    rows = []
    for name in args.models.split(","):
        cmd = [sys.executable, "-m", "benchmarks.timm_latency", "--one", name.strip()]
        cmd += ["--rounds", str(args.rounds)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
        if lines:
            rec = json.loads(lines[-1][7:])
        else:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            rec = {"model": name, "error": f"exit {proc.returncode}: {tail[:200]}"}
        rows.append(rec)
        print(json.dumps(rec), flush=True)
    command = f"python -m benchmarks.timm_latency --rounds {args.rounds}"
    md = table(rows, started, before, _load(), command)
    print(md)
    if not args.no_write:
        write_section(args.out, MARK, md)


if __name__ == "__main__":
    main()
