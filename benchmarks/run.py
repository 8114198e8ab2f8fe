"""`make bench`: our compiled modules against onnxruntime and PyTorch, 2 threads each, in one
process.

Each model is built in PyTorch (benchmarks/models.py), exported to ONNX and run by onnxruntime;
our side imports the same ONNX file with the ONNX frontend. Runs alternate (onnxruntime, ours,
PyTorch eager, ...) with a short pause between them, so all see the same machine state; the
figure is the median of the per-round time ratios. Results go to benchmarks/RESULTS.md.

    python -m benchmarks.run [--models resnet18,bert] [--rounds 30] [--out benchmarks/RESULTS.md]
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np

THREADS = 2
# Worker threads of both runtimes wait passively (no spinning) unless --spin: on a shared
# machine a spinning pool steals the core the other runtime's workers need.
SPIN = False


def _machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} logical cores, {platform.system()} {platform.release()}"


def _load() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def export_onnx(model, example, path: str) -> None:
    import torch

    with torch.no_grad():
        torch.onnx.export(
            model,
            (example,),
            path,
            input_names=["input"],
            output_names=["output"],
            opset_version=17,
            dynamo=False,
        )


def ours_module(onnx_path, example):
    """The exported file through our ONNX frontend."""
    import relay_import

    return relay_import.from_onnx(onnx_path, shapes={"input": tuple(example.shape)})


def bench_model(name, model, example, rounds: int, tmp: str) -> dict:
    import onnxruntime as ort

    import relay_core

    path = os.path.join(tmp, f"{name}.onnx")
    export_onnx(model, example, path)
    so = ort.SessionOptions()
    so.intra_op_num_threads = THREADS
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if not SPIN:
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    x = example.numpy().astype(np.float32)
    feed = {sess.get_inputs()[0].name: x}

    t0 = time.perf_counter()
    mod = ours_module(path, example)
    t1 = time.perf_counter()
    lib = relay_core.build(mod, num_threads=THREADS, cache=False)
    t2 = time.perf_counter()
    relay_core.build(mod, num_threads=THREADS)  # fills the cache
    t3 = time.perf_counter()
    relay_core.build(mod, num_threads=THREADS)  # a warm build: loads the cached artifact
    t4 = time.perf_counter()

    want = sess.run(None, feed)[0]
    got = lib(x)[0]
    err = float(np.abs(got - want).max() / (np.abs(want).max() + 1e-12))

    import torch

    torch.set_num_threads(THREADS)
    tx = example.clone()

    def run_torch():
        with torch.inference_mode():
            model(tx)

    for _ in range(5):
        sess.run(None, feed)
        lib(x)
        run_torch()
    r_ort, r_torch, t_ort, t_ours, t_torch = [], [], [], [], []
    for _ in range(rounds):
        a = time.perf_counter()
        sess.run(None, feed)
        b = time.perf_counter()
        time.sleep(0.002)
        c = time.perf_counter()
        lib(x)
        d = time.perf_counter()
        time.sleep(0.002)
        e = time.perf_counter()
        run_torch()
        f = time.perf_counter()
        time.sleep(0.002)
        t_ort.append(b - a)
        t_ours.append(d - c)
        t_torch.append(f - e)
        r_ort.append((d - c) / (b - a))
        r_torch.append((d - c) / (f - e))
    torch.set_num_threads(1)
    return {
        "name": name,
        "ours_ms": statistics.median(t_ours) * 1e3,
        "ort_ms": statistics.median(t_ort) * 1e3,
        "torch_ms": statistics.median(t_torch) * 1e3,
        "ratio": statistics.median(r_ort),
        "ratio_torch": statistics.median(r_torch),
        "import_s": t1 - t0,
        "compile_s": t2 - t1,
        "warm_s": t4 - t3,
        "err": err,
    }


def write_results(rows: list, path: str, load_before: str, load_after: str) -> None:
    import llvmlite
    import onnxruntime as ort
    import torch

    def geomean(key):
        if not rows:
            return float("nan")
        return math.exp(sum(math.log(r[key]) for r in rows) / len(rows))

    lines = [
        "# Benchmarks: compiled Relay vs onnxruntime and PyTorch",
        "",
        f"Date: {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}  ",
        f"Machine: {_machine()}  ",
        f"Load average before / after: {load_before} / {load_after}  ",
        f"Versions: onnxruntime {ort.__version__}, torch {torch.__version__}, "
        f"llvmlite {llvmlite.__version__}, numpy {np.__version__}, Python {sys.version.split()[0]}",
        "",
        f"Every runtime uses {THREADS} threads; batch 1; runs alternate (onnxruntime, ours, "
        "PyTorch eager in inference mode) in one process. Times are medians; a ratio is the "
        "median over rounds of (ours / theirs): below 1 we are faster. Worker threads "
        f"{'spin' if SPIN else 'wait passively (no spinning)'} everywhere. `import` is the ONNX "
        "conversion, `cold compile` a build without the cache, `warm` a build from the cache.",
        "",
        "| model | ours (ms) | onnxruntime (ms) | PyTorch (ms) | ours/ORT | ours/PyTorch | "
        "import (s) | cold compile (s) | warm (s) | max rel. error vs ORT |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['ours_ms']:.2f} | {r['ort_ms']:.2f} | {r['torch_ms']:.2f} | "
            f"{r['ratio']:.2f} | {r['ratio_torch']:.2f} | {r['import_s']:.2f} | "
            f"{r['compile_s']:.1f} | {r['warm_s']:.3f} | {r['err']:.1e} |"
        )
    lines += [
        "",
        f"Geometric mean of ours/ORT: **{geomean('ratio'):.2f}**; "
        f"of ours/PyTorch: **{geomean('ratio_torch'):.2f}**",
        "",
    ]
    keep = ""  # sections other benchmarks own (<!-- section: NAME --> to the end) stay
    if os.path.exists(path):
        old = open(path).read()
        if "<!-- section:" in old:
            keep = "\n" + old[old.index("<!-- section:") :]
    with open(path, "w") as f:
        f.write("\n".join(lines) + keep)
    print("\n".join(lines))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resnet18,resnet50,mobilenetv2,bert,lstm")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "RESULTS.md"))
    ap.add_argument("--spin", action="store_true", help="let worker threads spin between runs")
    args = ap.parse_args(argv)
    global SPIN
    SPIN = args.spin
    # libgomp reads this once, when it loads (before torch or a compiled module loads it)
    os.environ.setdefault("OMP_WAIT_POLICY", "ACTIVE" if SPIN else "PASSIVE")
    # our thread pool (relay_core/backend/c/relay_pool.c) reads its own knob
    os.environ.setdefault("RELAY_WAIT_POLICY", "spin" if SPIN else "passive")
    import torch

    # torch is only used to build and export the models: keep its OpenMP threads from
    # spinning on the cores the measured runtimes use
    torch.set_num_threads(1)
    from benchmarks.models import torch_models

    load_before = _load()
    models = torch_models()
    rows = []
    with tempfile.TemporaryDirectory(prefix="relay-bench-") as tmp:
        for name in args.models.split(","):
            model, example = models[name]
            print(f"{name}: ...", flush=True)
            rows.append(bench_model(name, model, example, args.rounds, tmp))
            r = rows[-1]
            print(
                f"{name}: ours {r['ours_ms']:.2f} ms, onnxruntime {r['ort_ms']:.2f} ms, "
                f"PyTorch {r['torch_ms']:.2f} ms, ours/ORT {r['ratio']:.2f}, "
                f"import {r['import_s']:.2f} s, cold compile {r['compile_s']:.1f} s",
                flush=True,
            )
    write_results(rows, args.out, load_before, _load())
    return 0


if __name__ == "__main__":
    sys.exit(main())
