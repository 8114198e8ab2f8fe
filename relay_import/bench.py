"""`bench`: our compiled module vs the source framework's runtime, side by side in one process.

Runs are interleaved (ours, theirs, ours, theirs, ...) so that both see the same machine state;
the figure of merit is the median of per-pair ratios, which is robust to drift and noise.
"""

from __future__ import annotations

import platform
import time
from dataclasses import dataclass

import numpy as np


@dataclass
class BenchReport:
    source: str
    framework: str
    ours_ms: float  # median latency
    theirs_ms: float
    ratio: float  # median of ours / theirs per pair (< 1: we are faster)
    runs: int
    threads: int
    compile_s: float = 0.0

    def summary(self) -> str:
        if abs(self.ratio - 1) < 0.02:
            verdict = "on par"
        elif self.ratio < 1:
            verdict = f"relay {1 / self.ratio:.2f}x faster"
        else:
            verdict = f"relay {self.ratio:.2f}x slower"
        return (
            f"{self.source}: median latency relay {self.ours_ms:.3f} ms, {self.framework} "
            f"{self.theirs_ms:.3f} ms ({self.runs} interleaved pairs, {self.threads} threads); "
            f"median of per-pair ratios relay/{self.framework} {self.ratio:.2f}: {verdict}"
        )


def interleaved(fa, fb, runs: int = 50, warmup: int = 5, max_seconds: float = 20.0):
    """Time fa and fb alternately; returns (times_a, times_b) in seconds."""
    for _ in range(warmup):
        fa()
        fb()
    ta, tb = [], []
    deadline = time.perf_counter() + max_seconds
    for i in range(runs):
        first, second = (fa, fb) if i % 2 == 0 else (fb, fa)
        t0 = time.perf_counter()
        first()
        t1 = time.perf_counter()
        second()
        t2 = time.perf_counter()
        a, b = (t1 - t0, t2 - t1) if i % 2 == 0 else (t2 - t1, t1 - t0)
        ta.append(a)
        tb.append(b)
        if time.perf_counter() > deadline and len(ta) >= 5:
            break
    return ta, tb


def median_ratio(ta, tb) -> float:
    return float(np.median(np.asarray(ta) / np.asarray(tb)))


def bench(
    source,
    inputs: dict | None = None,
    runs: int = 50,
    threads: int = 2,
    shapes: dict | None = None,
    opt_level: int = 3,
    seed: int = 0,
    **convert_kw,
) -> BenchReport:
    """Latency of the compiled module vs the source runtime at `threads` threads each."""
    import relay_core

    from .api import detect_framework, load
    from .runners import make_runner
    from .verifier import input_specs, make_inputs

    framework = detect_framework(source)
    kw = dict(convert_kw)
    if framework == "onnx" and shapes:
        kw["shapes"] = shapes
    mod = load(source, **kw)
    t0 = time.perf_counter()
    lib = relay_core.build(mod, opt_level=opt_level, num_threads=threads)
    compile_s = time.perf_counter() - t0
    specs = input_specs(mod, shapes)
    feed = inputs or make_inputs(specs, seed)
    args = [feed[s.name] for s in specs]
    runner = make_runner(source, framework, convert_kw)
    if hasattr(runner, "threads"):
        runner.threads = threads
    ta, tb = interleaved(lambda: lib(*args), lambda: runner.run(feed), runs=runs)
    name = str(source) if isinstance(source, str) else type(source).__name__
    runtime = {"onnx": "onnxruntime", "pytorch": "torch", "tensorflow": "tensorflow"}
    return BenchReport(
        name,
        runtime.get(framework, framework),
        float(np.median(ta) * 1e3),
        float(np.median(tb) * 1e3),
        median_ratio(ta, tb),
        len(ta),
        threads,
        compile_s,
    )


def machine() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            model = next(
                (ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), ""
            )
    except OSError:
        model = ""
    import os

    cpu = model or platform.processor()
    return f"{cpu} ({os.cpu_count()} cores), {platform.system()} {platform.machine()}"
