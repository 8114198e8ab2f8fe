"""Latency on a quiet and on a busy machine: our compiled modules against onnxruntime, with two
background processes spinning on the cores for the busy half (started and stopped here).

    python -m benchmarks.busy_load [--models bert,mobilenetv2,resnet50] [--runs 40]
        [--trees /work/main,/work/wt/i15] [--policy default|passive]

Each source tree (to compare two versions of the backend) runs in its own process with that
tree first on PYTHONPATH; models come from benchmarks/models.py, exported to ONNX once. For each
model: build (cached), warm up, then `runs` interleaved calls of ours and onnxruntime's with no
extra load, then the same with two spinning processes. Prints p10 / median / p90 in ms. The
1-minute load average at the start of each phase is printed too: other users of the machine
count as load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import json, os, subprocess, sys, time
import numpy as np
import onnxruntime as ort
import relay_core, relay_import

path, shape = sys.argv[1], tuple(json.loads(sys.argv[2]))
runs, policy = int(sys.argv[3]), sys.argv[4]
so = ort.SessionOptions()
so.intra_op_num_threads = 2
so.inter_op_num_threads = 1
if policy == "passive":
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
feed = {sess.get_inputs()[0].name: x}
mod = relay_import.from_onnx(path, shapes={sess.get_inputs()[0].name: shape})
t0 = time.perf_counter()
lib = relay_core.build(mod, num_threads=2)
build_s = time.perf_counter() - t0
for _ in range(5):
    lib(x); sess.run(None, feed)

def phase():
    ours, theirs = [], []
    for k in range(runs):
        for side in ((0, 1) if k % 2 == 0 else (1, 0)):
            t = time.perf_counter()
            if side == 0:
                lib(x)
            else:
                sess.run(None, feed)
            (ours if side == 0 else theirs).append((time.perf_counter() - t) * 1e3)
    q = lambda v: [float(np.percentile(v, p)) for p in (10, 50, 90)]
    return {"ours": q(ours), "ort": q(theirs), "load": os.getloadavg()[0]}

out = {"build_s": build_s, "quiet": phase()}
spin = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
try:
    time.sleep(1.0)
    out["busy"] = phase()
finally:
    for p in spin:
        p.kill()
        p.wait()
print("RESULT " + json.dumps(out))
"""


def export(names: list[str], d: str) -> dict:
    sys.path.insert(0, os.path.dirname(HERE))
    import torch

    from benchmarks.models import torch_models
    from benchmarks.run import export_onnx

    torch.set_num_threads(1)
    models = torch_models()
    out = {}
    for n in names:
        m, ex = models[n]
        p = os.path.join(d, f"{n}.onnx")
        if not os.path.exists(p):
            export_onnx(m, ex, p)
        out[n] = (p, list(ex.shape))
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="bert,mobilenetv2,resnet50")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--trees", default=os.path.dirname(HERE))
    ap.add_argument("--policy", default="default", choices=["default", "passive"])
    ap.add_argument("--onnx-dir", default=None, help="keep the exported models here")
    ap.add_argument("--repeat", type=int, default=1, help="alternate the trees this many times")
    args = ap.parse_args(argv)
    d = args.onnx_dir or tempfile.mkdtemp(prefix="relay-busy-")
    os.makedirs(d, exist_ok=True)
    models = export(args.models.split(","), d)
    print(
        "| tree | model | phase | load | ours p10 / p50 / p90 ms "
        "| onnxruntime p10 / p50 / p90 ms | ours/ort (p50) |"
    )
    print("|---|---|---|---:|---|---|---:|")
    for name, (path, shape) in models.items():
        for tree in args.trees.split(",") * args.repeat:
            env = {
                k: v
                for k, v in os.environ.items()
                if k not in ("OMP_WAIT_POLICY", "RELAY_WAIT_POLICY")
            }
            env["PYTHONPATH"] = tree
            if args.policy == "passive":
                env["OMP_WAIT_POLICY"] = "PASSIVE"
                env["RELAY_WAIT_POLICY"] = "passive"
            cmd = [
                sys.executable,
                "-c",
                CHILD,
                path,
                json.dumps(shape),
                str(args.runs),
                args.policy,
            ]
            p = subprocess.run(cmd, capture_output=True, text=True, env=env)
            line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
            if not line:
                print(f"| {tree} | {name} | failed: {p.stderr[-300:]!r} |", flush=True)
                continue
            r = json.loads(line[0][7:])
            for ph in ("quiet", "busy"):
                v = r[ph]
                fo = " / ".join(f"{t:.2f}" for t in v["ours"])
                ft = " / ".join(f"{t:.2f}" for t in v["ort"])
                ratio = v["ours"][1] / v["ort"][1]
                print(
                    f"| {os.path.basename(tree)} | {name} | {ph} | {v['load']:.1f} | {fo} | {ft} "
                    f"| {ratio:.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
