"""`make bench-compile`: how long a model takes from file to native code, cold and warm, beside
TVM Relax's untuned compile of the same model.

Models: torchvision ResNet-18, ResNet-50, MobileNetV2, GoogLeNet (random weights) and a
BERT-base-shaped encoder (transformers BertConfig() defaults: 12 layers, hidden 768; random
weights; batch 1, sequence 128). Each is saved as a `.pt2` (torch.export.save) and an `.onnx`
file. Every measurement runs in a fresh subprocess:

- cold: an empty RELAY_CACHE_DIR; `relay_import.load(file)` (convert) then
  `relay_import.compile(mod)` (compile), frameworks imported before the clock starts.
  "convert" is all of `load`: importing our converter package, hashing the file for the
  conversion-cache key, reading the archive (weights included), converting, type inference and
  writing the conversion-cache entry; `import torch` / `import onnx`, `relay_import` and
  `relay_core` are imported before it;
- our packages are byte-compiled first, as an install leaves them;
- warm: the same again with the cache the cold run filled (load + compile together);
- TVM: `tvm.relax.frontend.onnx.from_onnx` then `tvm.compile(mod, target="llvm")` (no tuning)
  in the interpreter named by --tvm-python / $RELAY_BENCH_TVM_PYTHON (a venv with apache-tvm
  and onnx: TVM is never installed into the project's venv); "not installed" otherwise.

    python -m benchmarks.compile [--models resnet18,bert] [--source pt2|onnx] [--out FILE]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

from .run import _load, section_head

MODELS = ["resnet18", "resnet50", "mobilenet_v2", "googlenet", "bert"]
SEQ = 128

_CHILD = r"""
import json, resource, sys, time
def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
path, fw = sys.argv[1], sys.argv[2]
if fw == "pt2":
    import torch  # noqa: F401
else:
    import onnx  # noqa: F401
import relay_import as ri
import relay_import.api  # noqa: F401
import relay_core  # noqa: F401
c0, t0 = cpu(), time.perf_counter()
mod = ri.load(path)
c1, t1 = cpu(), time.perf_counter()
lib = ri.compile(mod)
c2, t2 = cpu(), time.perf_counter()
hit = bool(getattr(lib, "cache_hit", False))
out = {"convert": t1 - t0, "compile": t2 - t1, "convert_cpu": c1 - c0, "compile_cpu": c2 - c1}
print(json.dumps({**out, "hit": hit}))
"""

_TVM_CHILD = r"""
import json, resource, sys, time
import onnx
import tvm
from tvm.relax.frontend.onnx import from_onnx
def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
c0, t0 = cpu(), time.perf_counter()
model = onnx.load(sys.argv[1])
mod = from_onnx(model, keep_params_in_input=False)
c1, t1 = cpu(), time.perf_counter()
ex = tvm.compile(mod, target="llvm")
c2, t2 = cpu(), time.perf_counter()
out = {"convert": t1 - t0, "compile": t2 - t1, "convert_cpu": c1 - c0, "compile_cpu": c2 - c1}
print(json.dumps({**out, "version": tvm.__version__}))
"""


def build_model(name: str):
    """(module, example inputs) with random weights, in eval mode."""
    import torch

    from tests.zoo.catalog import import_torchvision

    tv = import_torchvision()  # before transformers, which imports it when installed
    torch.manual_seed(0)
    if name == "bert":
        import transformers

        cfg = transformers.BertConfig()
        bert = transformers.BertModel(cfg, add_pooling_layer=False).eval()

        class Encoder(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.bert = bert

            def forward(self, input_ids):
                return self.bert(input_ids=input_ids).last_hidden_state

        ids = torch.randint(0, cfg.vocab_size, (1, SEQ))
        return Encoder().eval(), (ids,)
    if tv is None:
        raise SystemExit("torchvision is not installed (pip install -e '.[zoo]')")
    kw = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
    model = getattr(tv.models, name)(weights=None, **kw).eval()
    return model, (torch.randn(1, 3, 224, 224),)


def save_model(name: str, workdir: str) -> dict:
    """Write `name` as .pt2 and .onnx; returns {"pt2": path, "onnx": path}."""
    import torch

    model, args = build_model(name)
    paths = {
        "pt2": os.path.join(workdir, f"{name}.pt2"),
        "onnx": os.path.join(workdir, f"{name}.onnx"),
    }
    with torch.no_grad():
        torch.export.save(torch.export.export(model, args), paths["pt2"])
        names = ["input_ids"] if name == "bert" else ["image"]
        torch.onnx.export(model, args, paths["onnx"], input_names=names, dynamo=False)
    return paths


def _run(cmd: list[str], env: dict, timeout: float = 1800) -> dict:
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
        return {"error": " / ".join(tail)[:300] or f"exit {p.returncode}"}
    return json.loads(lines[-1])


def _byte_compile() -> None:
    """Our packages byte-compiled, as `pip install` leaves them (it writes every module's .pyc):
    a first-time user does not compile our sources on import. An editable checkout run with
    PYTHONDONTWRITEBYTECODE=1 would otherwise recompile every imported module in every run."""
    import compileall

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for pkg in ("relay_core", "converters", "relay_import"):
        compileall.compile_dir(os.path.join(root, pkg), quiet=1)


def ours(path: str, fw: str, cache: str) -> dict:
    env = dict(os.environ, RELAY_CACHE_DIR=cache)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return _run([sys.executable, "-c", _CHILD, path, fw], env)


def tvm(python: str | None, path: str) -> dict:
    if not python:
        return {"error": "not installed"}
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RELAY_CACHE_DIR")}
    return _run([python, "-c", _TVM_CHILD, path], env)


def _fmt(r: dict, key: str) -> str:
    """Wall seconds (CPU seconds of the process and its children)."""
    if "error" in r:
        return "n/a"
    cpu = r.get(key + "_cpu")
    return f"{r[key]:.2f} ({cpu:.2f})" if cpu is not None else f"{r[key]:.2f}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--source", choices=["pt2", "onnx"], default="pt2")
    ap.add_argument("--tvm-python", default=os.environ.get("RELAY_BENCH_TVM_PYTHON"))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "RESULTS.md"))
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    tvm_py = args.tvm_python
    if tvm_py and not os.path.exists(tvm_py):
        tvm_py = None
    names = [m.strip() for m in args.models.split(",") if m.strip()]
    load_before = _load()
    started = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    rows = []
    tvm_version = None
    _byte_compile()
    with tempfile.TemporaryDirectory(prefix="relay-bench-compile-") as work:
        # every file is written before the first run: the conversion cache remembers a file
        # by its identity only once the file has been still for 2 s (convert_cache.RACY_NS),
        # as a user's model file that is not being written has been
        saved = {name: save_model(name, work) for name in names}
        for name in names:
            paths = saved[name]
            cache = tempfile.mkdtemp(prefix=f"cache-{name}-", dir=work)
            cold = ours(paths[args.source], args.source, cache)
            warm = ours(paths[args.source], args.source, cache)
            other = tvm(tvm_py, paths["onnx"])
            tvm_version = other.get("version", tvm_version)
            row = {"model": name, "cold": cold, "warm": warm, "tvm": other}
            rows.append(row)
            print(json.dumps(row), flush=True)
    load_after = _load()
    md = _table(rows, args.source, tvm_py, tvm_version, started, load_before, load_after)
    print(md)
    if not args.no_write:
        _write(args.out, md)


def _table(rows, source, tvm_py, tvm_version, started, before, after) -> str:
    import platform

    import llvmlite
    import torch

    tvm_note = (
        f"TVM {tvm_version} (apache-tvm from PyPI, {tvm_py}): Relax ONNX frontend, then "
        '`tvm.compile(mod, target="llvm")`, untuned'
        if tvm_version
        else "TVM: not installed (set RELAY_BENCH_TVM_PYTHON to a Python with apache-tvm and onnx)"
    )
    lines = [
        "<!-- section: bench-compile -->",
        *section_head(
            "## Compile time: file to native code, cold and warm (`make bench-compile`)",
            started,
            before,
            after,
        ),
        f"Versions: torch {torch.__version__}, llvmlite {llvmlite.__version__}, "
        f"Python {platform.python_version()}",
        "",
        f"Ours: `relay_import.load` of the `.{source}` file (convert), then `relay_import.compile` "
        "(compile), each model in a fresh process with an empty `RELAY_CACHE_DIR` (frameworks "
        "imported before timing; convert covers the whole `load`: our converter's import, the "
        "file's cache-key hash, reading weights, conversion, type inference, the cache write; "
        "our packages byte-compiled first, as an install leaves them); warm: a second fresh "
        "process with the cache the first filled "
        f"(load + compile). {tvm_note}, from the `.onnx` export of the same model. Random "
        f"weights; batch 1; BERT: BertConfig() defaults, sequence {SEQ}.",
        "",
        "Each figure is wall seconds with, in parentheses, the CPU seconds the process and "
        "its children used: on a shared machine the CPU time is the steadier of the two.",
        "",
        "| model | convert (s) | compile (s) | cold total (s) | warm load + compile (s) "
        "| TVM convert (s) | TVM compile (s) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        c, w, t = r["cold"], r["warm"], r["tvm"]
        total = "n/a" if "error" in c else f"{c['convert'] + c['compile']:.2f}"
        warm = "n/a" if "error" in w else f"{w['convert'] + w['compile']:.2f}"
        if "error" not in w and not w.get("hit"):
            warm += " (missed the cache)"
        lines.append(
            f"| {r['model']} | {_fmt(c, 'convert')} | {_fmt(c, 'compile')} | {total} | {warm} "
            f"| {_fmt(t, 'convert')} | {_fmt(t, 'compile')} |"
        )
    errors = [
        f"- {r['model']} {k}: {r[k]['error']}"
        for r in rows
        for k in ("cold", "warm", "tvm")
        if "error" in r[k] and r[k]["error"] != "not installed"
    ]
    if errors:
        lines += ["", "Failures:", *errors]
    return "\n".join(lines) + "\n"


def _write(path: str, md: str) -> None:
    write_section(path, "<!-- section: bench-compile -->", md)


def write_section(path: str, marker: str, md: str) -> None:
    """Replace the section of RESULTS.md that starts with `marker` (md starts with it too), up
    to the next `<!-- section:`; append it when absent."""
    text = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
    if marker in text:
        head, rest = text.split(marker, 1)
        nxt = rest.find("<!-- section:")
        tail = rest[nxt:] if nxt >= 0 else ""
        text = head + md + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + "\n\n" + md
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
