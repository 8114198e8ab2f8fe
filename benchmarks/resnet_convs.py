"""ResNet convolution shapes: our kernel choices (auto / im2col / Winograd / strips) against each
other and onnxruntime's Conv on the same shape (a one-node model), at 1 and 2 threads.

    python -m benchmarks.resnet_convs [--batch 1 8] [--threads 1 2] [--only k3s1] [--cold]

Every implementation of a case runs in interleaved rounds in one process; figures are medians
of all timed calls (ms) and effective GFLOP/s (direct-convolution FLOPs). Single-threaded calls
are timed in thread CPU time (onnxruntime with one thread runs on the caller), so that other
processes sharing the core matter less; two-thread calls in wall time. Say the load
(`uptime`) with the figures: other processes share the machine.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from benchmarks.kernels import _onnx_session
from relay_core.backend.kernels import conv as conv_mod
from relay_core.ops import lookup
from tools.kernel_jit import KernelModule, tt

# (C, H, O, k, s, p): the distinct convolutions of torchvision ResNet-18 / ResNet-50 at 224.
SHAPES = [
    (3, 224, 64, 7, 2, 3),
    (64, 56, 64, 3, 1, 1),
    (128, 28, 128, 3, 1, 1),
    (256, 14, 256, 3, 1, 1),
    (512, 7, 512, 3, 1, 1),
    (64, 56, 128, 3, 2, 1),
    (128, 28, 256, 3, 2, 1),
    (256, 14, 512, 3, 2, 1),
    (128, 56, 128, 3, 2, 1),
    (256, 28, 256, 3, 2, 1),
    (512, 14, 512, 3, 2, 1),
    (64, 56, 256, 1, 1, 0),
    (256, 56, 64, 1, 1, 0),
    (256, 56, 128, 1, 1, 0),
    (128, 28, 512, 1, 1, 0),
    (512, 28, 128, 1, 1, 0),
    (512, 28, 256, 1, 1, 0),
    (256, 14, 1024, 1, 1, 0),
    (1024, 14, 256, 1, 1, 0),
    (1024, 14, 512, 1, 1, 0),
    (512, 7, 2048, 1, 1, 0),
    (2048, 7, 512, 1, 1, 0),
    (256, 56, 512, 1, 2, 0),
    (512, 28, 1024, 1, 2, 0),
    (1024, 14, 2048, 1, 2, 0),
]


_FLUSH = None


def flush_caches() -> None:
    """Overwrite 64 MB (twice the L3): the next call finds its weights in memory, as a layer
    of a model does (the rest of the model has run since)."""
    global _FLUSH
    if _FLUSH is None:
        _FLUSH = np.zeros(16 << 20, np.float32)
    _FLUSH += 1.0


def _time(fn, reps, cpu, cold=False):
    """Per-call times after one warm-up call: thread CPU time when `cpu` (single-threaded
    calls: robust against other processes taking the core), else wall time. cold: caches
    flushed before every call."""
    clock = time.thread_time if cpu else time.perf_counter
    fn()
    out = []
    for _ in range(reps):
        if cold:
            flush_caches()
        t = clock()
        fn()
        out.append(clock() - t)
    return out


def variants(k: int, s: int) -> list[str]:
    if k == 3 and s == 1:
        return ["auto", "im2col", "winograd", "strips"]
    return ["auto", "im2col", "strips"] if k in (1, 3) else ["auto"]


def case_name(n, c, h, o, k, s) -> str:
    return f"{n}x{c}x{h}x{h} -> {o} k{k} s{s}"


def build(cases, names):
    """{(case index, variant): compiled kernel}, one module per variant."""
    out = {}
    for var in names:
        km = KernelModule()
        conv_mod.FORCE = None if var == "auto" else var
        try:
            for i, (n, c, h, o, k, s, p) in enumerate(cases):
                if var not in variants(k, s):
                    continue
                oh = (h + 2 * p - k) // s + 1
                ins = [tt((n, c, h, h)), tt((o, c, k, k))]
                attrs = dict(strides=(s, s), padding=(p, p), groups=1)
                out[i, var] = km.add(
                    lookup("nn.conv2d").kernel, ins, [tt((n, o, oh, oh))], attrs, None, (1,)
                )
        finally:
            conv_mod.FORCE = None
        km.compile()
    return out


def run(batches, threads, rounds, reps, only, cold=False):
    cases = [
        (n, *sh)
        for n in batches
        for sh in SHAPES
        if not only or only in case_name(n, *sh[:5]) or only in f"k{sh[3]}s{sh[4]}"
    ]
    names = ["auto", "im2col", "winograd", "strips"]
    ks = build(cases, names)
    rng = np.random.default_rng(0)
    for i, (n, c, h, o, k, s, p) in enumerate(cases):
        x = rng.standard_normal((n, c, h, h), np.float32)
        w = (rng.standard_normal((o, c, k, k)) * (2.0 / (c * k * k)) ** 0.5).astype(np.float32)
        oh = (h + 2 * p - k) // s + 1
        flops = 2.0 * n * o * oh * oh * c * k * k
        spec = {"onnx": ("Conv", dict(strides=[s, s], pads=[p] * 4), [x], [w])}
        want = None
        impls = {}
        for t in threads:
            sess = _onnx_session(spec, t)
            impls[f"ort/{t}"] = sess
            want = sess()[0] if want is None else want
        for var in names:
            kern = ks.get((i, var))
            if kern is None:
                continue
            xs = [kern.prepare(0, x), kern.prepare(1, w)]
            y = np.empty((n, o, oh, oh), np.float32)
            ptrs = [a.ctypes.data for a in xs] + [y.ctypes.data]
            kern.fn(*ptrs, 1)
            err = float(np.abs(y - want).max() / max(1.0, np.abs(want).max()))
            assert err < 1e-3, (case_name(n, c, h, o, k, s), var, err)
            for t in threads:
                impls[f"{var}/{t}"] = lambda f=kern.fn, p_=ptrs, t=t, keep=(xs, y): f(*p_, t)
        times = {name: [] for name in impls}
        for _ in range(rounds):
            for name, f in impls.items():
                times[name] += _time(f, reps, name.endswith("/1"), cold)
        med = {name: statistics.median(v) * 1e3 for name, v in times.items()}
        print(f"{case_name(n, c, h, o, k, s):<32} {flops / 1e9:6.3f} GF", flush=True)
        for t in threads:
            ref = med[f"ort/{t}"]
            cells = [
                f"{nm.split('/')[0]} {m:8.3f} ({flops / m / 1e6:5.1f} GF/s, {m / ref:4.2f})"
                for nm, m in med.items()
                if nm.endswith(f"/{t}")
            ]
            print(f"   t{t}: " + "  ".join(cells), flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", default=None)
    ap.add_argument("--cold", action="store_true", help="flush the caches before every call")
    a = ap.parse_args(argv)
    run(a.batch, a.threads, a.rounds, a.reps, a.only, a.cold)


if __name__ == "__main__":
    main()
