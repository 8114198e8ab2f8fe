"""`make bench`: our compiled modules against onnxruntime, torch eager and TF graph mode on real
architectures (benchmarks/architectures.py), 2 threads each, in one process, on a quiet machine
and on a busy one.

For each model and batch size: the model is built with random weights; exported to ONNX
(PyTorch: torch.onnx.export's default dynamo exporter; Keras: tf2onnx, from the zoo extra) and
run by onnxruntime; we compile the ONNX file (`relay_import.load(path)`) and the native model as a
user loads it (`relay_import.load(module, example_inputs=...)` for PyTorch, `load("m.keras")` for
Keras), each with `relay_import.compile`. Outputs are checked against the framework (ours from
ONNX against onnxruntime) before anything is timed: a mismatch is reported, not timed.

Then rounds: each runtime runs once per round, in a rotating order, with a short pause between
runs, so all see the same machine state; a comparison's figure is the median over rounds of the
per-round ratio (ours / theirs), with its p10 and p90. The same rounds are repeated with two
background processes spinning on the two cores (`busy`), started and stopped here (and killed on
exit or Ctrl-C). Results go to benchmarks/RESULTS.md (a full run; a subset or `--quick` run only
with `--out`).

    python -m benchmarks.run                                  # everything: ~1 h on 2 cores
    python -m benchmarks.run --models resnet18,lstm --batch 1 --quiet --quick
    python -m benchmarks.run --models bert_base --busy --rounds 20 --out /tmp/r.md --json r.json
"""

from __future__ import annotations

import argparse
import atexit
import datetime
import gc
import json
import math
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

THREADS = 2
# Worker threads do not keep spinning after a call unless --spin: in an interleaved benchmark a
# spinning pool of one runtime steals the cores the next runtime's workers need (onnxruntime and
# libgomp wait passively; our pool stops spinning 100 us after a region, its default).
SPIN = False
TOL = 1e-3  # max |got - want| / max |want|
RESULTS = os.path.join(os.path.dirname(__file__), "RESULTS.md")
MARK = "<!-- bench: written by `python -m benchmarks.run` (make bench), replaced on a full run -->"

# runtime keys: onnxruntime, ours from the ONNX file, ours from the native model, the framework
ORT, OURS_ONNX, OURS_NATIVE, FW = "ort", "ours_onnx", "ours_native", "framework"
COMPARISONS = [  # (label, numerator, denominator)
    ("ours(ONNX) / ORT", OURS_ONNX, ORT),
    ("ours(native) / ORT", OURS_NATIVE, ORT),
    ("ours(native) / framework", OURS_NATIVE, FW),
]


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
    # the vector width our kernels (and the others') take: results differ most by it
    from relay_core.backend.llvm_target import host

    _, core, feats = host()
    on = set(feats.split(","))
    isa = "AVX-512" if "+avx512f" in on else "AVX2, no AVX-512" if "+avx2" in on else "no AVX2"
    # LLVM's name for the core (znver3, znver4, icelake-server, ...): the rules differ by it
    return (
        f"{cpu} ({core}, {isa}), {os.cpu_count()} logical cores, "
        f"{platform.system()} {platform.release()}"
    )


def section_head(title: str, started: str, before: str, after: str) -> list[str]:
    """The first lines of a RESULTS.md section: its title, date, machine and load average."""
    return [
        title,
        "",
        f"Date: {started}  ",
        f"Machine: {_machine()}  ",
        f"Load average before / after: {before} / {after}  ",
    ]


def _load() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def _pct(xs, q) -> float:
    return float(np.percentile(np.asarray(xs, dtype=np.float64), q))


def rel_error(got, want) -> float:
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    if got.shape != want.shape:
        raise AssertionError(f"output shape {got.shape}, expected {want.shape}")
    return float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))


# -- background load ------------------------------------------------------------------------------

# a busy loop that also ends when its parent is gone (even if the parent was killed with -9)
_SPIN_CHILD = (
    "import os\np = os.getppid()\nwhile os.getppid() == p:\n    for _ in range(200000): pass\n"
)


class Spinners:
    """`n` processes spinning on the CPU while the context is open; stopped on exit, on an
    exception (Ctrl-C included) and, through atexit, if the interpreter leaves otherwise."""

    def __init__(self, n: int = 2):
        self.n = n
        self.procs: list[subprocess.Popen] = []

    def __enter__(self):
        atexit.register(self.stop)
        for _ in range(self.n):
            self.procs.append(subprocess.Popen([sys.executable, "-c", _SPIN_CHILD]))
        time.sleep(0.3)  # let them reach the scheduler before timing
        return self

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.procs = []

    def __exit__(self, *exc):
        self.stop()
        atexit.unregister(self.stop)
        return False


def _sigterm(signum, frame):
    raise SystemExit(128 + signum)  # unwinds through Spinners.__exit__


# -- runtimes -------------------------------------------------------------------------------------


def _error(e: BaseException) -> str:
    msg = str(e).strip().splitlines()[0][:160] if str(e).strip() else ""
    return f"{type(e).__name__}: {msg}"


def ort_session(path: str):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = THREADS
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if not SPIN:
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return sess


def export_onnx(model, example, path: str) -> None:
    """The hand-written models of benchmarks/models.py (benchmarks.busy_load): TorchScript
    exporter, opset 17, one input named `input`."""
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


def export_torch_onnx(module, xs, path: str, dynamic_axes=None) -> None:
    """torch.onnx.export as a user calls it in torch 2.x: the default (dynamo) exporter, static
    shapes (one file per batch size) unless `dynamic_axes` ({axis: name} per input) are given."""
    import torch

    names = [f"input{i}" for i in range(len(xs))]
    dyn = {n: dict(d) for n, d in zip(names, dynamic_axes)} if dynamic_axes else None
    with torch.no_grad():
        torch.onnx.export(
            module,
            tuple(torch.from_numpy(x) for x in xs),
            path,
            input_names=names,
            output_names=["output"],
            dynamic_axes=dyn,
            verbose=False,
        )


def export_keras_onnx(model, xs, path: str) -> None:
    """tf2onnx (the zoo extra, which make bench installs; without it these rows say so) on the
    model traced as a tf.function (its `from_keras` predates Keras 3)."""
    try:
        import tf2onnx
    except ImportError:
        raise ImportError(
            "tf2onnx is not installed: no ONNX export for Keras models (pip install -e '.[zoo]')"
        ) from None
    import tensorflow as tf

    spec = [
        tf.TensorSpec(x.shape, tf.as_dtype(x.dtype), name=f"input{i}") for i, x in enumerate(xs)
    ]
    fn = tf.function(lambda *a: model(list(a) if len(a) > 1 else a[0], training=False))
    tf2onnx.convert.from_function(fn, input_signature=spec, opset=17, output_path=path)


class Case:
    """One model at one batch size: its runtimes, ready to call, and what setting them up took."""

    def __init__(self, bm, model, inputs, batch: int, tmp: str):
        self.name = bm.name
        self.kind = bm.kind
        self.batch = batch
        self.dynamic_axes = bm.dynamic_axes
        self.xs = inputs(batch)
        self.fns: dict[str, object] = {}  # runtime key -> zero-argument callable
        self.status: dict[str, str] = {}  # runtime key -> "ok" | "mismatch ..." | "error ..."
        self.err: dict[str, float] = {}  # runtime key -> max relative error
        self.setup_s: dict[str, float] = {}
        self.notes: list[str] = []
        self._setup(model, tmp)

    def _framework(self, model):
        if self.kind == "torch":
            import torch

            txs = [torch.from_numpy(x) for x in self.xs]

            def run():
                with torch.inference_mode():
                    return model(*txs)

            return run, lambda: run().numpy()
        import tensorflow as tf

        graph = tf.function(lambda *a: model(list(a) if len(a) > 1 else a[0], training=False))
        txs = [tf.constant(x) for x in self.xs]
        return (lambda: graph(*txs)), (lambda: graph(*txs).numpy())

    def _setup(self, model, tmp):
        import relay_import as ri

        stem = os.path.join(tmp, f"{self.name}_b{self.batch}")
        run, value = self._framework(model)
        t = time.perf_counter()
        want = value()
        self.setup_s[FW] = time.perf_counter() - t
        if np.ptp(np.asarray(want, np.float64)) == 0:
            self.notes.append(f"{self.name}: the reference output is constant (parity is vacuous)")
        self.fns[FW] = run
        self.status[FW] = "ok"
        self.err[FW] = 0.0
        label = "torch eager" if self.kind == "torch" else "TF graph"
        self.framework = label

        # ONNX: export, onnxruntime, ours from the file
        onnx_path = stem + ".onnx"
        want_ort = None
        try:
            t = time.perf_counter()
            if self.kind == "torch":
                export_torch_onnx(model, self.xs, onnx_path, self.dynamic_axes)
            else:
                export_keras_onnx(model, self.xs, onnx_path)
            self.setup_s["export"] = time.perf_counter() - t
            t = time.perf_counter()
            sess = ort_session(onnx_path)
            feed = {i.name: x for i, x in zip(sess.get_inputs(), self.xs)}
            want_ort = sess.run(None, feed)[0]
            self.setup_s[ORT] = time.perf_counter() - t
            self._check(ORT, want_ort, want, lambda: sess.run(None, feed))
        except Exception as e:
            self.status[ORT] = self.status[OURS_ONNX] = f"error: {_error(e)}"
        if want_ort is not None:
            self._ours(OURS_ONNX, lambda: ri.load(onnx_path), want_ort)

        # ours from the native model, as a user loads it
        if self.kind == "torch":
            import torch

            ex = tuple(torch.from_numpy(x) for x in self.xs)
            self._ours(OURS_NATIVE, lambda: ri.load(model, example_inputs=ex), want)
        else:
            keras_path = os.path.join(tmp, f"{self.name}.keras")
            if not os.path.exists(keras_path):
                model.save(keras_path)
            self._ours(OURS_NATIVE, lambda: ri.load(keras_path), want)

    def _ours(self, key, load, want):
        import relay_import as ri

        try:
            t = time.perf_counter()
            lib = ri.compile(load(), num_threads=THREADS)
            self.setup_s[key] = time.perf_counter() - t
            xs = self.xs
            self._check(key, lib(*xs)[0], want, lambda: lib(*xs))
        except Exception as e:
            self.status[key] = f"error: {_error(e)}"
            if os.environ.get("RELAY_BENCH_TRACE"):
                traceback.print_exc()

    def _check(self, key, got, want, fn):
        err = rel_error(got, want)
        self.err[key] = err
        if err <= TOL:
            self.status[key] = "ok"
            self.fns[key] = fn
        else:
            self.status[key] = f"mismatch (max rel. error {err:.1e})"


def time_rounds(fns: dict, rounds: int, budget_s: float, warmup: int) -> dict[str, list[float]]:
    """Each runtime once per round in a rotating order; stops after `rounds` rounds, or after the
    time budget once 5 rounds are done."""
    keys = list(fns)
    for _ in range(warmup):
        for k in keys:
            fns[k]()
    times: dict[str, list[float]] = {k: [] for k in keys}
    start = time.perf_counter()
    for r in range(rounds):
        for i in range(len(keys)):
            k = keys[(r + i) % len(keys)]
            t = time.perf_counter()
            fns[k]()
            times[k].append(time.perf_counter() - t)
            time.sleep(0.002)
        if r + 1 >= min(5, rounds) and time.perf_counter() - start > budget_s:
            break
    return times


def summarise(times: dict[str, list[float]]) -> dict:
    out = {"rounds": len(next(iter(times.values()))) if times else 0, "ms": {}, "ratio": {}}
    for k, ts in times.items():
        ms = np.asarray(ts) * 1e3
        out["ms"][k] = [_pct(ms, 10), _pct(ms, 50), _pct(ms, 90)]
    for label, a, b in COMPARISONS:
        if a in times and b in times:
            r = np.asarray(times[a]) / np.asarray(times[b])
            out["ratio"][label] = [_pct(r, 10), _pct(r, 50), _pct(r, 90)]
    return out


# -- report ---------------------------------------------------------------------------------------


def _geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def _ms(v) -> str:
    return f"{v[1]:.2f} ({v[0]:.2f}–{v[2]:.2f})"


def _ratio(v) -> str:
    return f"**{v[1]:.2f}** [{v[0]:.2f}, {v[2]:.2f}]"


def _cell(row, mode, key, fmt):
    m = row["modes"].get(mode)
    if m and key in m:
        return fmt(m[key])
    return ""


def mode_table(rows: list, mode: str) -> list[str]:
    head = "| model | batch | ORT (ms) | ours ONNX (ms) | ours native (ms) | framework (ms) | "
    head += " | ".join(label for label, _, _ in COMPARISONS) + " | rounds |"
    lines = [head, "|---|---:|" + "---:|" * (4 + len(COMPARISONS)) + "---:|"]
    for row in rows:
        m = row["modes"].get(mode)
        if m is None:
            continue
        cells = [row["name"], str(row["batch"])]
        for k in (ORT, OURS_ONNX, OURS_NATIVE, FW):
            cells.append(_ms(m["ms"][k]) if k in m["ms"] else _short(row["status"].get(k, "")))
        for label, _, _ in COMPARISONS:
            cells.append(_ratio(m["ratio"][label]) if label in m["ratio"] else "")
        cells.append(str(m["rounds"]))
        lines.append("| " + " | ".join(cells) + " |")
    for batch in sorted({r["batch"] for r in rows}):
        cells = [f"**geomean, batch {batch}**", str(batch), "", "", "", ""]
        for label, _, _ in COMPARISONS:
            vs = [
                r["modes"][mode]["ratio"][label]
                for r in rows
                if r["batch"] == batch and mode in r["modes"] and label in r["modes"][mode]["ratio"]
            ]
            if vs:
                g = [_geomean([v[i] for v in vs]) for i in range(3)]
                cells.append(f"{_ratio(g)} ({len(vs)})")
            else:
                cells.append("")
        cells.append("")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _short(status: str) -> str:
    return status.replace("|", "\\|")[:90] if status and status != "ok" else ""


def setup_table(rows: list) -> list[str]:
    lines = [
        "| model | batch | framework | ONNX export (s) | ours ONNX load + compile (s) | "
        "ours native load + compile (s) | err ORT vs framework | err ours ONNX vs ORT | "
        "err ours native vs framework |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]

    def s(row, k):
        v = row["setup_s"].get(k)
        return "" if v is None else f"{v:.1f}"

    def e(row, k):
        v = row["err"].get(k)
        return "" if v is None else f"{v:.1e}"

    for row in rows:
        lines.append(
            f"| {row['name']} | {row['batch']} | {row['framework']} | {s(row, 'export')} | "
            f"{s(row, OURS_ONNX)} | {s(row, OURS_NATIVE)} | {e(row, ORT)} | "
            f"{e(row, OURS_ONNX)} | {e(row, OURS_NATIVE)} |"
        )
    return lines


def report(rows: list, meta: dict) -> str:
    import llvmlite
    import onnxruntime as ort
    import torch

    versions = (
        f"onnxruntime {ort.__version__}, torch {torch.__version__}, llvmlite {llvmlite.__version__}"
        f", numpy {np.__version__}, Python {sys.version.split()[0]}"
    )
    if "tensorflow" in sys.modules:
        versions += f", tensorflow {sys.modules['tensorflow'].__version__}"
    lines = [
        MARK,
        "# Benchmarks: compiled Relay vs onnxruntime, torch eager and TF graph mode",
        "",
        f"Date: {meta['date']}  ",
        f"Machine: {_machine()}  ",
        f"Load average before / after: {meta['load_before']} / {meta['load_after']}  ",
        f"Versions: {versions}  ",
        f"Command: `{meta['command']}` ({meta['wall_s'] / 60:.0f} min)",
        "",
        "Models (benchmarks/architectures.py): real architectures with random weights. Every "
        f"runtime uses {THREADS} threads, worker threads "
        + (
            "spin between parallel regions. "
            if SPIN
            else "wait passively between parallel regions (onnxruntime without spinning, "
            "OMP_WAIT_POLICY=PASSIVE for torch), ours with its default policy (a worker spins "
            f"100 µs after a region, then sleeps; RELAY_WAIT_POLICY="
            f"{os.environ.get('RELAY_WAIT_POLICY', 'unset')} in this run). "
        )
        + "In one process, per "
        "model and batch size, the runtimes run in interleaved rounds (each once per round, "
        "rotating order); times are median (p10–p90) over rounds; a ratio is the median "
        "[p10, p90] over rounds of the per-round ratio (below 1: we are faster). `ours ONNX` "
        "compiles the exported ONNX file, `ours native` the PyTorch module / `.keras` file as "
        "`relay_import.load` takes it; `framework` is torch eager (inference mode) for the "
        "PyTorch models and a `tf.function` (TF graph mode) for the Keras ones. Outputs are "
        f"checked first (max relative error ≤ {TOL:g}): a runtime that fails or disagrees is "
        "named in its cell and not timed. Geomean rows: geometric means of the medians (and of "
        "the p10s / p90s), with the number of models in parentheses.",
    ]
    for mode, title in (
        ("quiet", "Quiet machine"),
        ("busy", "Busy machine: two background processes spinning on the two cores"),
    ):
        if any(mode in r["modes"] for r in rows):
            lines += ["", f"## {title}", ""] + mode_table(rows, mode)
    lines += ["", "## Set-up and parity", ""] + setup_table(rows)
    notes = meta.get("notes") or []
    if notes:
        lines += [""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def write_results(text: str, path: str) -> None:
    """Replace this benchmark's part of `path` (the top, up to the first `<!-- section:`);
    sections other benchmarks own stay."""
    keep = ""
    if os.path.exists(path):
        old = open(path).read()
        if "<!-- section:" in old:
            keep = "\n" + old[old.index("<!-- section:") :]
    with open(path, "w") as f:
        f.write(text + keep)


# -- main -----------------------------------------------------------------------------------------


def _init_tf():
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(THREADS)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:  # already initialised
        pass


def run(args) -> tuple[list, list]:
    from benchmarks.architectures import catalog

    cat = catalog()
    names = list(cat) if args.models == "all" else args.models.split(",")
    unknown = [n for n in names if n not in cat]
    if unknown:
        raise SystemExit(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(cat)}")
    batches = [int(b) for b in args.batch.split(",")]
    modes = [m for m in ("quiet", "busy") if getattr(args, m)]
    rows, notes = [], []
    with tempfile.TemporaryDirectory(prefix="relay-bench-") as tmp:
        for name in names:
            bm = cat[name]
            if bm.kind == "keras":
                _init_tf()
            print(f"{name}: building", flush=True)
            try:
                model, inputs = bm.make()
            except Exception as e:
                notes.append(f"{name}: could not be built: {_error(e)}")
                print(notes[-1], flush=True)
                continue
            for batch in batches:
                print(f"{name} batch {batch}: export, compile, parity", flush=True)
                try:
                    case = Case(bm, model, inputs, batch, tmp)
                except Exception as e:  # the framework itself failed: nothing to compare with
                    notes.append(f"{name} batch {batch}: {_error(e)}")
                    print(notes[-1], flush=True)
                    continue
                row = {
                    "name": name,
                    "batch": batch,
                    "framework": case.framework,
                    "status": case.status,
                    "err": case.err,
                    "setup_s": case.setup_s,
                    "modes": {},
                }
                notes += case.notes
                for k, st in case.status.items():
                    if st != "ok":
                        print(f"  {k}: {st}", flush=True)
                for mode in modes:
                    if mode == "busy":
                        with Spinners(2):
                            times = time_rounds(case.fns, args.rounds, args.budget, args.warmup)
                    else:
                        times = time_rounds(case.fns, args.rounds, args.budget, args.warmup)
                    row["modes"][mode] = summarise(times)
                    s = row["modes"][mode]
                    print(
                        f"  {mode}: "
                        + ", ".join(f"{k} {v[1]:.2f} ms" for k, v in s["ms"].items())
                        + "; "
                        + ", ".join(f"{k} {v[1]:.2f}" for k, v in s["ratio"].items()),
                        flush=True,
                    )
                rows.append(row)
                del case
                gc.collect()
            del model
            gc.collect()
    return rows, notes


def main(argv=None) -> int:
    from benchmarks.architectures import MODELS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--models", default="all", help="comma-separated: " + ",".join(m.name for m in MODELS)
    )
    ap.add_argument("--batch", default="1,8", help="comma-separated batch sizes (default 1,8)")
    ap.add_argument("--quiet", action="store_true", help="only the quiet-machine rounds")
    ap.add_argument("--busy", action="store_true", help="only the busy-machine rounds")
    ap.add_argument("--rounds", type=int, default=40, help="rounds per model, batch and mode")
    ap.add_argument(
        "--budget", type=float, default=30.0, help="seconds of rounds per model, batch and mode"
    )
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="a smoke run: 3 rounds, 1 warm-up")
    ap.add_argument("--out", help="markdown file (default: benchmarks/RESULTS.md on a full run)")
    ap.add_argument("--json", help="also write the raw figures here")
    ap.add_argument("--spin", action="store_true", help="let worker threads spin between runs")
    args = ap.parse_args(argv)
    if not args.quiet and not args.busy:
        args.quiet = args.busy = True
    if args.quick:
        args.rounds, args.warmup = min(args.rounds, 3), 1
    global SPIN
    SPIN = args.spin
    # libgomp reads this once, when it loads (before torch or a compiled module loads it)
    os.environ.setdefault("OMP_WAIT_POLICY", "ACTIVE" if SPIN else "PASSIVE")
    # our thread pool (relay_core/backend/c/relay_pool.c) reads its own knob. Without --spin it
    # keeps its default: workers spin 100 us after a region, then sleep. That cannot steal a core
    # from the runtime that runs next (what the others' passive waiting is for), and it is what
    # a user gets; RELAY_WAIT_POLICY=passive in the environment forces no spinning at all.
    if SPIN:
        os.environ.setdefault("RELAY_WAIT_POLICY", "spin")
    signal.signal(signal.SIGTERM, _sigterm)
    import torch

    torch.set_num_threads(THREADS)

    full = args.models == "all" and args.batch == "1,8" and args.quiet and args.busy
    out = args.out or (RESULTS if full and not args.quick else None)
    meta = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_before": _load(),
        "command": " ".join(["python -m benchmarks.run", *(argv or sys.argv[1:])]),
    }
    t0 = time.perf_counter()
    rows, notes = run(args)
    meta.update(load_after=_load(), wall_s=time.perf_counter() - t0, notes=notes)
    text = report(rows, meta)
    print(text)
    if out:
        write_results(text, out)
        print(f"written to {out}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
