"""`make bench`: our compiled modules against onnxruntime, 2 threads each, in one process.

Each model is built in PyTorch, exported to ONNX and run by onnxruntime. Our side imports the
ONNX file with the ONNX frontend when it can, else builds the same network directly in Relay
from the PyTorch weights (benchmarks/models.py). Runs alternate (onnxruntime, ours, ...) with a
short pause between them, so both see the same machine state; the figure is the median of the
per-round time ratios. Results go to benchmarks/RESULTS.md.

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


def ours_module(name, model, example, onnx_path):
    """(IRModule, how it was obtained)."""
    from benchmarks.models import relay_module

    try:
        import relay_import

        mod = relay_import.from_onnx(onnx_path, shapes={"input": tuple(example.shape)})
        return mod, "ONNX frontend"
    except Exception as e:  # the frontend is not available yet, or misses an op
        why = type(e).__name__
        return relay_module(name, model, example), f"Relay builder ({why} from the ONNX frontend)"


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
    mod, how = ours_module(name, model, example, path)
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

    for _ in range(5):
        sess.run(None, feed)
        lib(x)
    ratios, t_ort, t_ours = [], [], []
    for _ in range(rounds):
        a = time.perf_counter()
        sess.run(None, feed)
        b = time.perf_counter()
        time.sleep(0.002)
        c = time.perf_counter()
        lib(x)
        d = time.perf_counter()
        time.sleep(0.002)
        t_ort.append(b - a)
        t_ours.append(d - c)
        ratios.append((d - c) / (b - a))
    return {
        "name": name,
        "ours_ms": statistics.median(t_ours) * 1e3,
        "ort_ms": statistics.median(t_ort) * 1e3,
        "ratio": statistics.median(ratios),
        "import_s": t1 - t0,
        "compile_s": t2 - t1,
        "warm_s": t4 - t3,
        "how": how,
        "err": err,
    }


def write_results(rows: list, path: str, load_before: str, load_after: str) -> None:
    import llvmlite
    import onnxruntime as ort
    import torch

    geo = math.exp(sum(math.log(r["ratio"]) for r in rows) / len(rows)) if rows else float("nan")
    lines = [
        "# Benchmarks: compiled Relay vs onnxruntime",
        "",
        f"Date: {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}  ",
        f"Machine: {_machine()}  ",
        f"Load average before / after: {load_before} / {load_after}  ",
        f"Versions: onnxruntime {ort.__version__}, torch {torch.__version__}, "
        f"llvmlite {llvmlite.__version__}, numpy {np.__version__}, Python {sys.version.split()[0]}",
        "",
        f"Both sides use {THREADS} threads; batch 1; runs alternate in one process. `ratio` is "
        "the median over rounds of (ours / onnxruntime): below 1 we are faster. Worker "
        f"threads {'spin' if SPIN else 'wait passively (no spinning)'} on both sides.",
        "",
        "| model | ours (ms) | onnxruntime (ms) | ratio | cold compile (s) | warm (s) | "
        "max rel. error | imported via |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['ours_ms']:.2f} | {r['ort_ms']:.2f} | {r['ratio']:.2f} | "
            f"{r['compile_s']:.1f} | {r['warm_s']:.3f} | {r['err']:.1e} | {r['how']} |"
        )
    lines += ["", f"Geometric mean of the ratios: **{geo:.2f}**", ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resnet18,mobilenetv2,bert,lstm")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "RESULTS.md"))
    ap.add_argument("--spin", action="store_true", help="let worker threads spin between runs")
    args = ap.parse_args(argv)
    global SPIN
    SPIN = args.spin
    # libgomp reads this once, when it loads (before torch or a compiled module loads it)
    os.environ.setdefault("OMP_WAIT_POLICY", "ACTIVE" if SPIN else "PASSIVE")
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
                f"ratio {r['ratio']:.2f}",
                flush=True,
            )
    write_results(rows, args.out, load_before, _load())
    return 0


if __name__ == "__main__":
    sys.exit(main())
