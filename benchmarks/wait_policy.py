"""How worker threads wait decides what `relay bench` shows on a busy machine.

Runs `relay_import.bench.bench` on the demo model with workers spinning (onnxruntime's default;
our pool with RELAY_WAIT_POLICY=spin) and waiting passively (`relay bench`'s and `make bench`'s
default), each in a fresh process (each runtime reads its policy once), alternating for several
rounds, and prints p10 / median / p90 of both runtimes with the load average at the start.

    python -m benchmarks.wait_policy [--rounds 3] [--runs 200] [--model examples/demo_cnn.onnx]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = """
import json, sys
from relay_import.bench import bench, _pct
r = bench(sys.argv[1], runs=int(sys.argv[2]), spin=sys.argv[3] == "spin")
print(json.dumps({
    "load": r.load,
    "relay": [_pct(r.ours, q) for q in (10, 50, 90)],
    "ort": [_pct(r.theirs, q) for q in (10, 50, 90)],
    "first": r.first_call_ms,
}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--model", default="examples/demo_cnn.onnx")
    args = ap.parse_args()
    print("| round | workers | load | relay p10 / median / p90 (ms) ", end="")
    print("| onnxruntime p10 / median / p90 |")
    print("|---:|---|---:|---|---|")
    for k in range(args.rounds):
        for mode in ("spin", "passive"):
            env = {
                x: v
                for x, v in os.environ.items()
                if x not in ("OMP_WAIT_POLICY", "RELAY_WAIT_POLICY")
            }
            p = subprocess.run(
                [sys.executable, "-c", CHILD, args.model, str(args.runs), mode],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            )
            r = json.loads(p.stdout.strip().splitlines()[-1])
            ours = " / ".join(f"{v:.3f}" for v in r["relay"])
            theirs = " / ".join(f"{v:.3f}" for v in r["ort"])
            print(f"| {k + 1} | {mode} | {r['load']:.1f} | {ours} | {theirs} |", flush=True)


if __name__ == "__main__":
    main()
