"""`bench`: our compiled module vs the source framework's runtime, side by side in one process.

What is timed is steady-state inference only. Compilation (or the cache load) and each side's
first call (for onnxruntime: creating the session) are measured apart and reported apart, then
both sides warm up, then exactly `runs` pairs are timed, interleaved (ours, theirs, theirs, ours,
...) so that both see the same machine state. Reported: p10 / median / p90 of each side, and the
median of per-pair ratios with its p10-p90 spread (robust to drift). A busy machine (load
average above what the cores can absorb) is named in a warning: latencies are then noisy,
ours more than onnxruntime's (see benchmarks/RESULTS.md on contention).

Worker threads do not keep spinning after a call unless `spin=True`: in an interleaved
benchmark a spinning pool of one runtime steals the cores the other one's workers need. The
source runtime's workers wait passively (onnxruntime without spinning; OMP_WAIT_POLICY=PASSIVE
for libraries on libgomp such as torch, which reads it once, when it loads: a note says when it
could not be); ours keep the runtime pool's default, a 20 us spin after a region and then sleep
(RELAY_WAIT_POLICY=passive in the environment sleeps at once), which a user gets and which
cannot hold a core into the other side's turn.

    >>> from relay_import.bench import bench
    >>> print(bench("model.onnx", runs=100).summary())
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relay_core import events
from relay_core.errors import RelayError


def _pct(xs: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs, dtype=np.float64), q)) if len(xs) else 0.0


@dataclass
class BenchReport:
    """Latencies in milliseconds, one entry per timed run, in run order."""

    source: str
    framework: str  # the source runtime's name: "onnxruntime", "torch", "tensorflow"
    ours: list[float]
    theirs: list[float]
    threads: int
    warmup: int = 0  # warm-up pairs run before timing
    compile_s: float = 0.0
    cache_hit: bool = False
    first_call_ms: float = 0.0  # our first call, apart from the timed runs
    their_first_ms: float = 0.0  # theirs: session creation + first run
    load: float | None = None  # 1-minute load average when the timing started
    cpus: int = 0
    spin: bool = False  # worker threads spin between parallel regions (else wait passively)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # profile=True: one entry per step (fused group) of the timed calls, in run order:
    # {"kernel", "ops", "flops", "us"} (mean microseconds per call)
    profile: list[dict] | None = None

    @property
    def runs(self) -> int:
        return len(self.ours)

    @property
    def ratios(self) -> np.ndarray:
        return np.asarray(self.ours) / np.asarray(self.theirs)

    @property
    def ours_ms(self) -> float:
        return _pct(self.ours, 50)

    @property
    def theirs_ms(self) -> float:
        return _pct(self.theirs, 50)

    @property
    def ratio(self) -> float:
        """Median of per-pair ratios ours / theirs (< 1: we are faster)."""
        return _pct(self.ratios, 50)

    def summary(self) -> str:
        r = self.ratio
        if abs(r - 1) < 0.02:
            verdict = "on par"
        elif r < 1:
            verdict = f"relay {1 / r:.2f}x faster"
        else:
            verdict = f"relay {r:.2f}x slower"
        w = max(len(self.framework), 5)
        waiting = "spinning" if self.spin else "not spinning between calls"
        lines = [
            f"bench {self.source}: {self.runs} interleaved pairs after {self.warmup} warm-up "
            f"pairs, {self.threads} threads each, workers {waiting}",
            f"  {'':<{w}}  {'p10':>9} {'median':>9} {'p90':>9}  (ms)",
        ]
        for name, xs in (("relay", self.ours), (self.framework, self.theirs)):
            lines.append(
                f"  {name:<{w}}  {_pct(xs, 10):>9.3f} {_pct(xs, 50):>9.3f} {_pct(xs, 90):>9.3f}"
            )
        lines.append(
            f"  ratio relay/{self.framework} per pair: median {r:.2f} (p10 "
            f"{_pct(self.ratios, 10):.2f}, p90 {_pct(self.ratios, 90):.2f}): {verdict}"
        )
        how = "cache hit" if self.cache_hit else "compiled"
        lines.append(
            f"  not timed: build {self.compile_s:.2f} s ({how}); first call relay "
            f"{self.first_call_ms:.2f} ms, {self.framework} {self.their_first_ms:.1f} ms "
            "(with session creation)"
        )
        if self.profile is not None:
            lines.extend(profile_table(self.profile))
        for n in self.notes:
            lines.append(f"note: {n}")
        for wmsg in self.warnings:
            lines.append(f"warning: {wmsg}")
        return "\n".join(lines)


def profile_table(steps: list[dict], top: int = 25) -> list[str]:
    """Time per step (fused group), slowest first: its share of the total and, for groups with
    convolutions or matrix products, GFLOP/s and the operands' shapes."""
    total = sum(s["us"] for s in steps) or 1e-9
    order = sorted(range(len(steps)), key=lambda k: -steps[k]["us"])
    lines = [
        f"profile: {len(steps)} steps (fused groups), {total / 1e3:.3f} ms per call in total",
        f"  {'step':>4}  {'kernel':<12} {'us':>9} {'share':>6} {'cum':>6} {'GFLOP/s':>8}  "
        f"{'ops':<40}  shape",
    ]
    cum = 0.0
    for k in order[:top]:
        s = steps[k]
        cum += s["us"]
        fl = s.get("flops") or 0
        gf = f"{fl / (s['us'] * 1e3):8.1f}" if fl and s["us"] > 0 else f"{'':>8}"
        ops = ",".join(o.removeprefix("nn.") for o in s.get("ops", [])) or "(copy)"
        lines.append(
            f"  {k:>4}  {s['kernel'][-12:]:<12} {s['us']:>9.1f} {100 * s['us'] / total:>5.1f}% "
            f"{100 * cum / total:>5.1f}% {gf}  {ops[:40]:<40}  {s.get('shape', '')}".rstrip()
        )
    rest = order[top:]
    if rest:
        us = sum(steps[k]["us"] for k in rest)
        lines.append(f"  ({len(rest)} more steps: {us:.1f} us, {100 * us / total:.1f}%)")
    flops = sum(s.get("flops") or 0 for s in steps)
    if flops:
        lines.append(f"  {flops / 1e9:.3f} GFLOP per call: {flops / (total * 1e3):.1f} GFLOP/s")
    return lines


def interleaved(
    fa: Callable[[], Any],
    fb: Callable[[], Any],
    runs: int = 50,
    warmup: int = 5,
    min_warmup_s: float = 0.2,
    before_timing: Callable[[], Any] | None = None,
) -> tuple[list[float], list[float], int]:
    """Time fa and fb alternately, exactly `runs` pairs after at least `warmup` pairs and
    `min_warmup_s` seconds of warm-up; the order within a pair alternates. Returns (times_a,
    times_b) in seconds and the number of warm-up pairs run."""
    done = 0
    t_end = time.perf_counter() + min_warmup_s
    while done < warmup or (time.perf_counter() < t_end and done < 1000):
        fa()
        fb()
        done += 1
    if before_timing is not None:
        before_timing()
    ta, tb = [], []
    clock = time.perf_counter
    for i in range(runs):
        if i % 2 == 0:
            t0 = clock()
            fa()
            t1 = clock()
            fb()
            t2 = clock()
            ta.append(t1 - t0)
            tb.append(t2 - t1)
        else:
            t0 = clock()
            fb()
            t1 = clock()
            fa()
            t2 = clock()
            tb.append(t1 - t0)
            ta.append(t2 - t1)
    return ta, tb, done


def busy_warning(threads: int) -> tuple[float | None, int, str]:
    """(1-minute load average, usable cores, a warning or '') for a run using `threads`."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:  # pragma: no cover
        return None, cpus, ""
    if load + threads > cpus + 0.5:
        return (
            load,
            cpus,
            f"the machine is busy (load average {load:.1f} on {cpus} cores, and the benchmark "
            f"runs {threads} threads): latencies are noisy and the ratio is not a measurement "
            "of either runtime; rerun on a quiet machine",
        )
    return load, cpus, ""


def bench(
    source: Any,
    inputs: Mapping[str, np.ndarray] | None = None,
    runs: int = 50,
    threads: int = 2,
    shapes: Mapping[str, Sequence[int]] | None = None,
    opt_level: int = 3,
    seed: int = 0,
    warmup: int = 5,
    pass_context: Any = None,
    spin: bool = False,
    max_iterations: int | None = None,
    timeout: float | None = None,
    profile: bool = False,
    **convert_kw: Any,
) -> BenchReport:
    """Latency of the compiled module vs the source runtime at `threads` threads each.
    `max_iterations` / `timeout` bound each call of a model with loops (ResourceLimitError)."""
    import relay_core

    from .api import detect_framework, load
    from .runners import make_runner, run_bounded
    from .verifier import _budget, check_feed, check_specs, input_specs, make_inputs

    if runs < 1:
        raise ValueError("runs must be at least 1")
    policy = "ACTIVE" if spin else "PASSIVE"
    if spin:
        os.environ["RELAY_WAIT_POLICY"] = "spin"
    elif os.environ.get("RELAY_WAIT_POLICY", "").lower() in ("spin", "active"):
        del os.environ["RELAY_WAIT_POLICY"]  # a leftover from spin=True: back to the default
    notes = []
    if _libgomp_loaded():
        if os.environ.get("OMP_WAIT_POLICY", "").upper() != policy:
            notes.append(
                "libgomp was loaded before the benchmark: its workers wait as "
                f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')} said then"
            )
    else:
        os.environ["OMP_WAIT_POLICY"] = policy
    load_avg, cpus, busy = busy_warning(threads)
    framework = detect_framework(source)
    kw = dict(convert_kw)
    if framework in ("onnx", "pytorch", "tensorflow") and shapes:
        kw["shapes"] = shapes
    mod = load(source, **kw)
    t0 = time.perf_counter()
    bkw = {"pass_context": pass_context} if pass_context is not None else {}
    saved = os.environ.get("RELAY_PROFILE")
    if profile:  # a build whose entry times every step (cached apart from the plain one)
        os.environ["RELAY_PROFILE"] = "1"
    try:
        lib = relay_core.build(mod, opt_level=opt_level, num_threads=threads, **bkw)
    finally:
        if profile:
            if saved is None:
                os.environ.pop("RELAY_PROFILE", None)
            else:
                os.environ["RELAY_PROFILE"] = saved
    compile_s = time.perf_counter() - t0
    if profile and not lib.manifest.get("profile"):
        raise RelayError(
            f"--profile: the module ({lib.manifest.get('kind', 'vm')} executor) was built "
            "without per-step timers"
        )
    lib.max_iterations, lib.timeout = max_iterations, timeout
    specs = input_specs(mod, shapes)
    if inputs is None:
        check_specs(specs, _budget())
    feed = dict(inputs) if inputs is not None else make_inputs(specs, seed)
    feed = check_feed(specs, feed, _budget())
    args = [feed[s.name] for s in specs]
    runner = make_runner(source, framework, convert_kw)
    if hasattr(runner, "threads"):
        runner.threads = threads
    if hasattr(runner, "spin"):
        runner.spin = spin
    t0 = time.perf_counter()
    lib(*args)
    first = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    run_bounded(lambda: runner.run(feed), timeout, runner.label or framework)
    their_first = (time.perf_counter() - t0) * 1e3
    with events.stage(f"timing {runs} pairs against {runner.label}"):
        ta, tb, warm = interleaved(
            lambda: lib(*args),
            lambda: runner.run(feed),
            runs,
            warmup,
            before_timing=lib.profile if profile else None,  # resets the step timers
        )
    steps = lib.profile() if profile else None
    name = str(source) if isinstance(source, (str, os.PathLike)) else type(source).__name__
    report = BenchReport(
        name,
        runner.label or framework,
        [t * 1e3 for t in ta],
        [t * 1e3 for t in tb],
        threads,
        warm,
        compile_s,
        bool(getattr(lib, "cache_hit", False)),
        first,
        their_first,
        load_avg,
        cpus,
        spin,
        notes=notes,
        profile=steps,
    )
    if busy:
        report.warnings.append(busy)
    return report


def _libgomp_loaded() -> bool:
    try:
        with open("/proc/self/maps") as f:
            return "libgomp" in f.read()
    except OSError:  # pragma: no cover - not Linux
        return False


def machine() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            model = next(
                (ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), ""
            )
    except OSError:
        model = ""
    cpu = model or platform.processor()
    return f"{cpu} ({os.cpu_count()} cores), {platform.system()} {platform.machine()}"
