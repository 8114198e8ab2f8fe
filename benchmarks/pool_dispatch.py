"""Cost of one parallel region: the runtime's thread pool (`relay_parallel`) against libgomp's
`GOMP_parallel` (what generated code called before), both with an empty body, timed in C.

    python -m benchmarks.pool_dispatch [--threads 2] [--rounds 7] [--iters 20000] [--work-us 0]

Prints the median over rounds (interleaved) of the time per region in microseconds (beyond the
busy work given to each thread with --work-us), for the pool
with its default short spin and with RELAY_WAIT_POLICY=passive (workers sleep at once), and for
libgomp (if a libgomp is installed) with OMP_WAIT_POLICY unset / PASSIVE. Each configuration
runs in its own process (both runtimes read their wait policy when they start).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

C_SRC = r"""
#include <stdint.h>
#include <time.h>
void relay_parallel(void (*)(void *, void *, int64_t, int64_t), void *, int32_t, int64_t);
int64_t relay_task_next(void *);
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}
static void empty(void *ctx, void *task, int64_t n, int64_t w) {
  (void)ctx; (void)n; (void)w;
  while (relay_task_next(task) >= 0) {}
}
static double work_ns;
static void busy(double ns) {
  double t = now();
  while (now() - t < ns) {}
}
static void working(void *ctx, void *task, int64_t n, int64_t w) {
  (void)ctx; (void)n; (void)w;
  while (relay_task_next(task) >= 0) busy(work_ns);
}
double bench_pool(int64_t iters, int32_t nthreads, int64_t nshards, double ns) {
  void (*fn)(void *, void *, int64_t, int64_t) = ns > 0 ? working : empty;
  work_ns = ns;
  relay_parallel(fn, 0, nthreads, nshards);
  double t0 = now();
  for (int64_t i = 0; i < iters; i++) relay_parallel(fn, 0, nthreads, nshards);
  return (now() - t0) / iters / 1e3;
}
"""

GOMP_SRC = r"""
#include <stdint.h>
#include <time.h>
void GOMP_parallel(void (*)(void *), void *, unsigned, unsigned);
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}
static double work_ns;
static void busy(double ns) {
  double t = now();
  while (now() - t < ns) {}
}
static void empty(void *d) { (void)d; }
static void working(void *d) { (void)d; busy(work_ns); }
double bench_gomp(int64_t iters, int32_t nthreads, double ns) {
  void (*fn)(void *) = ns > 0 ? working : empty;
  work_ns = ns;
  GOMP_parallel(fn, 0, nthreads, 0);
  double t0 = now();
  for (int64_t i = 0; i < iters; i++) GOMP_parallel(fn, 0, nthreads, 0);
  return (now() - t0) / iters / 1e3;
}
"""

CHILD = r"""
import ctypes, sys, json
lib = ctypes.CDLL(sys.argv[1])
kind, iters, nt, work_us = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
if kind == "pool":  # 4 shards per thread, each work_us / 4: every thread has work_us to do
    f = lib.bench_pool
    f.argtypes = [ctypes.c_int64, ctypes.c_int32, ctypes.c_int64, ctypes.c_double]
    args = (iters, nt, 4 * nt, work_us * 1e3 / 4)
else:
    f = lib.bench_gomp; f.argtypes = [ctypes.c_int64, ctypes.c_int32, ctypes.c_double]
    args = (iters, nt, work_us * 1e3)
f.restype = ctypes.c_double
print(json.dumps(f(*args) - work_us))
"""


def build(d: str) -> tuple[str, str | None]:
    from relay_core.backend.compiler import cache_dir
    from relay_core.backend.llvm_target import cc, link_shared, runtime_objects

    src = os.path.join(d, "pool_bench.c")
    with open(src, "w") as f:
        f.write(C_SRC)
    pool = os.path.join(d, "pool_bench.so")
    link_shared(runtime_objects(cache_dir()), pool, [src])
    gsrc = os.path.join(d, "gomp_bench.c")
    with open(gsrc, "w") as f:
        f.write(GOMP_SRC)
    gomp = os.path.join(d, "gomp_bench.so")
    r = subprocess.run([cc(), "-O2", "-shared", "-fPIC", "-o", gomp, gsrc, "-lgomp"])
    return pool, gomp if r.returncode == 0 else None


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument(
        "--work-us",
        type=float,
        default=0.0,
        help="busy work per thread and region (the table then shows the time beyond it)",
    )
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="relay-pool-bench-") as d:
        pool, gomp = build(d)
        configs = [
            ("relay pool, default spin", pool, "pool", {}),
            (
                "relay pool, RELAY_WAIT_POLICY=passive",
                pool,
                "pool",
                {"RELAY_WAIT_POLICY": "passive"},
            ),
        ]
        if gomp:
            configs += [
                ("GOMP_parallel, OMP_WAIT_POLICY unset", gomp, "gomp", {}),
                (
                    "GOMP_parallel, OMP_WAIT_POLICY=PASSIVE",
                    gomp,
                    "gomp",
                    {"OMP_WAIT_POLICY": "PASSIVE"},
                ),
            ]
        times: dict[str, list[float]] = {c[0]: [] for c in configs}
        for _ in range(args.rounds):
            for name, path, kind, extra in configs:
                env = {
                    k: v
                    for k, v in os.environ.items()
                    if k not in ("OMP_WAIT_POLICY", "RELAY_WAIT_POLICY", "RELAY_SPIN_US")
                }
                env.update(extra)
                cmd = [sys.executable, "-c", CHILD, path, kind, str(args.iters)]
                out = subprocess.run(
                    [*cmd, str(args.threads), str(args.work_us)],
                    capture_output=True,
                    text=True,
                    env=env,
                    check=True,
                )
                times[name].append(json.loads(out.stdout))
    load = os.getloadavg()[0]
    body = f"{args.work_us:g} µs of work per thread" if args.work_us else "empty body"
    print(f"{args.threads} threads, {body}, load average {load:.1f} on {os.cpu_count()} cores")
    print("| dispatch | median µs per region | min | max |")
    print("|---|---:|---:|---:|")
    for name, ts in times.items():
        print(f"| {name} | {statistics.median(ts):.2f} | {min(ts):.2f} | {max(ts):.2f} |")


if __name__ == "__main__":
    main()
