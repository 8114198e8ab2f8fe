"""Front-end traversal speed: type inference, the printer, structural hash / equality, the
interpreter, FuseOps and CSE on a generated 10k-node graph (a residual MLP-like DAG with
shared nodes and constants) and a 10k-deep let chain.

Compare two checkouts by running this file under each (PYTHONPATH=<checkout>), alternating;
each figure is the median of `--rounds` runs, in milliseconds of this process's CPU time
(`time.process_time`: on a shared, loaded machine it moves much less than wall time).

    PYTHONPATH=. python -m benchmarks.traversal [--nodes 10000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def graph(n: int):
    from relay_core.ir import Function, IRModule, call, const, var

    x = var("x", (4, 16))
    w = const(np.full((16, 16), 0.01, np.float32))
    e = x
    skip = x
    k = 0
    while k < n:
        h = call("nn.dense", e, w)
        h = call("add", h, const(np.float32(0.1)))
        h = call("tanh", h)
        e = call("add", h, skip)  # `skip` is shared
        skip = h
        k += 5
    return IRModule.from_expr(Function((x,), e))


def let_chain(n: int):
    from relay_core.ir import Function, IRModule, Let, Var, call, var

    x = var("x", (4, 16))
    vs = [Var(f"v{i}") for i in range(n)]
    body = vs[-1]
    for i in reversed(range(n)):
        prev = x if i == 0 else vs[i - 1]
        body = Let(vs[i], call("sin", prev) if i % 2 else call("negative", prev), body)
    return IRModule.from_expr(Function((x,), body))


def _cases(build, n: int, x) -> dict:
    import relay_core
    from relay_core import passes
    from relay_core.interp import evaluate
    from relay_core.ir.structural import structural_equal, structural_hash

    typed = relay_core.infer_type(build(n))
    other = build(n)
    return {
        "infer_type": lambda: relay_core.infer_type(build(n)),
        "build (subtract)": lambda: build(n),
        "astext": typed.astext,
        "structural_hash": lambda: structural_hash(typed),
        "structural_equal": lambda: structural_equal(typed, other),
        "interpreter": lambda: evaluate(typed, x),
        "FuseOps": lambda: passes.FuseOps()(typed),
        "CSE": lambda: passes.EliminateCommonSubexpr()(typed),
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args(argv)
    x = np.ones((4, 16), np.float32)
    rows = []
    for name, build in (("graph", graph), ("lets", let_chain)):
        cases = _cases(build, a.nodes, x)
        times = {k: [] for k in cases}
        for _ in range(a.rounds):
            for k, f in cases.items():
                t0 = time.process_time()
                f()
                times[k].append(time.process_time() - t0)
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        med["infer_type"] -= med.pop("build (subtract)")
        rows += [(name, k, v) for k, v in med.items()]
    for name, k, v in rows:
        print(f"{name:6} {k:18} {v:9.1f} ms")


if __name__ == "__main__":
    main()
