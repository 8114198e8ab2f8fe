"""Hostile and odd models and inputs (issue 11), run through the API and every CLI command as
subprocesses under a memory limit (RLIMIT_AS) and a timeout. Every run must end in a clear error
of our own type or a result equal to the source runtime's (onnxruntime): no wrong answer, no
crash, no hang, no raw traceback.

`python -m tests.relay_import.hostile [CASE...]` prints the table (case, API outcome, outcome of
each CLI command and of `relay serve`); tests/relay_import/test_hostile.py checks the same runs.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
MEMORY_LIMIT = 4 << 30  # RLIMIT_AS of every run
TIMEOUT = 300  # seconds per run (cold imports on a busy 2-core machine take a while)
COMMANDS = ("inspect", "convert", "compile", "run", "verify", "bench")
INPUTS_ONLY = ("api", "run", "verify", "serve")


@dataclass
class Case:
    name: str
    model: Path
    inputs: dict | None = None  # arrays fed by name (written to an .npz)
    input_file: Path | None = None  # an .npz given as is (hostile inputs)
    ref: list | None = None  # onnxruntime's outputs; None when it refuses
    flags: list = field(default_factory=list)  # for run / verify / bench
    lib: dict = field(default_factory=dict)  # CompiledModule attributes for the API run
    errors: frozenset = frozenset()  # where the answer must be one of our errors
    oks: frozenset = frozenset()  # where it must be a correct result
    repeat: int = 1  # API calls (strings: many, to catch memory errors)
    where: tuple = ("api", *COMMANDS, "serve")  # inputs-only cases skip the model-only commands
    note: str = ""


# -- model builders -------------------------------------------------------------------------------
def _onnx(nodes, inputs, outputs, inits=(), opset=17):
    from onnx import helper

    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name, elem, shape):
    from onnx import helper

    return helper.make_tensor_value_info(name, elem, shape)


def _ort(model, feed):
    """onnxruntime's outputs, or None when it refuses the inputs."""
    import onnxruntime as ort

    ort.set_default_logger_severity(4)
    try:
        s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return [np.asarray(o) for o in s.run(None, feed)]
    except Exception:
        return None


def _save(model, d: Path, name: str) -> Path:
    import onnx

    p = d / f"{name}.onnx"
    onnx.save(model, str(p))
    return p


def _table3x2():
    from onnx import TensorProto, helper

    return helper.make_tensor("t", TensorProto.FLOAT, [3, 2], np.arange(6.0).tolist())


def build_cases(d: Path) -> list[Case]:
    from onnx import TensorProto as TP
    from onnx import helper

    d.mkdir(parents=True, exist_ok=True)
    cases = []
    run_api = frozenset({"api", "run"})

    # strings: pass-through works (compared with onnxruntime, 200 calls), computing refuses
    m = _onnx(
        [helper.make_node("Identity", ["x"], ["y"])],
        [_vi("x", TP.STRING, [2])],
        [_vi("y", TP.STRING, [2])],
    )
    feed = {"x": np.array(["ab", "c"], dtype=object)}
    cases.append(
        Case(
            "string_identity",
            _save(m, d, "str_id"),
            feed,
            ref=_ort(m, feed),
            oks=run_api | {"verify"},
            repeat=200,
        )
    )
    m = _onnx(
        [helper.make_node("Identity", ["x"], ["y"])],
        [_vi("x", TP.STRING, ["n"])],
        [_vi("y", TP.STRING, ["n"])],
    )
    cases.append(
        Case(
            "string_identity_dynamic",
            _save(m, d, "str_id_dyn"),
            feed,
            ref=_ort(m, feed),
            errors=frozenset({"api", "compile", "run"}),
            note="object pointers would cross the boxed-value runtime: refused",
        )
    )
    m = _onnx(
        [helper.make_node("Concat", ["x", "z"], ["y"], axis=0)],
        [_vi("x", TP.STRING, [2]), _vi("z", TP.STRING, [1])],
        [_vi("y", TP.STRING, [3])],
    )
    feed = {"x": np.array(["ab", "c"], dtype=object), "z": np.array(["d"], dtype=object)}
    cases.append(
        Case(
            "string_concat",
            _save(m, d, "str_cat"),
            feed,
            ref=_ort(m, feed),
            errors=frozenset({"api", "compile", "run"}),
        )
    )

    # indices: onnxruntime refuses out-of-range ones, so must we (interpreter and compiled)
    m = _onnx(
        [helper.make_node("Gather", ["t", "i"], ["y"], axis=0, name="gather0")],
        [_vi("i", TP.INT64, [2])],
        [_vi("y", TP.FLOAT, [2, 2])],
        [_table3x2()],
    )
    gp = _save(m, d, "gather")
    for label, idx in (("7", 7), ("-9", -9), ("1e9", 10**9), ("-1_ok", -1)):
        feed = {"i": np.array([1, idx], np.int64)}
        ref = _ort(m, feed)
        cases.append(
            Case(
                f"gather_{label}",
                gp,
                feed,
                ref=ref,
                errors=frozenset({"api", "run", "verify"}) if ref is None else frozenset(),
                oks=frozenset() if ref is None else run_api | {"verify"},
            )
        )
    m = _onnx(
        [helper.make_node("GatherElements", ["t", "i"], ["y"], axis=0)],
        [_vi("i", TP.INT64, [2, 2])],
        [_vi("y", TP.FLOAT, [2, 2])],
        [_table3x2()],
    )
    feed = {"i": np.array([[0, 1], [5, 2]], np.int64)}
    cases.append(
        Case(
            "gather_elements_5",
            _save(m, d, "gather_el"),
            feed,
            ref=_ort(m, feed),
            errors=frozenset({"api", "run", "verify"}),
        )
    )
    m = _onnx(
        [helper.make_node("GatherND", ["t", "i"], ["y"])],
        [_vi("i", TP.INT64, [2, 1])],
        [_vi("y", TP.FLOAT, [2, 2])],
        [_table3x2()],
    )
    feed = {"i": np.array([[1], [3]], np.int64)}
    cases.append(
        Case(
            "gather_nd_3",
            _save(m, d, "gather_nd"),
            feed,
            ref=_ort(m, feed),
            errors=frozenset({"api", "run", "verify"}),
        )
    )
    m = _onnx(
        [helper.make_node("ScatterND", ["x", "i", "u"], ["y"])],
        [_vi("x", TP.FLOAT, [4]), _vi("i", TP.INT64, [1, 1]), _vi("u", TP.FLOAT, [1])],
        [_vi("y", TP.FLOAT, [4])],
    )
    feed = {
        "x": np.zeros(4, np.float32),
        "i": np.array([[9]], np.int64),
        "u": np.ones(1, np.float32),
    }
    cases.append(
        Case(
            "scatter_nd_9",
            _save(m, d, "scatter_nd"),
            feed,
            ref=_ort(m, feed),
            errors=frozenset({"api", "run", "verify"}),
        )
    )

    # static sizes far over the byte budget: refused at compile, naming the node
    compile_all = frozenset({"api", "compile", "run", "verify", "bench"})
    m = _onnx(
        [helper.make_node("Expand", ["x", "s"], ["y"], name="expand_4tib")],
        [_vi("x", TP.FLOAT, [1])],
        [_vi("y", TP.FLOAT, [1024] * 4)],
        [helper.make_tensor("s", TP.INT64, [4], [1024] * 4)],
    )
    cases.append(
        Case(
            "expand_4TiB", _save(m, d, "expand"), {"x": np.ones(1, np.float32)}, errors=compile_all
        )
    )
    side = 8 * 28868
    m = _onnx(
        [helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="nearest", name="resize_596gib")],
        [_vi("x", TP.FLOAT, [1, 3, 8, 8])],
        [_vi("y", TP.FLOAT, [1, 3, side, side])],
        [helper.make_tensor("sc", TP.FLOAT, [4], [1, 1, 28868, 28868])],
    )
    cases.append(
        Case(
            "resize_596GiB",
            _save(m, d, "resize"),
            {"x": np.ones((1, 3, 8, 8), np.float32)},
            errors=compile_all,
        )
    )
    m = _onnx(
        [helper.make_node("Relu", ["x"], ["y"], name="relu_8gib")],
        [_vi("x", TP.FLOAT, [1 << 31])],
        [_vi("y", TP.FLOAT, [1 << 31])],
    )
    cases.append(
        Case(
            "input_8GiB",
            _save(m, d, "big_input"),
            None,
            errors=compile_all,
            note="no inputs given: verify / run --fill must not allocate them",
        )
    )

    # a loop of 10**12 iterations, bounded at run time
    body = helper.make_graph(
        [
            helper.make_node("Add", ["v", "one"], ["v2"]),
            helper.make_node("Identity", ["c"], ["co"]),
        ],
        "body",
        [_vi("i", TP.INT64, []), _vi("c", TP.BOOL, []), _vi("v", TP.FLOAT, [1])],
        [_vi("co", TP.BOOL, []), _vi("v2", TP.FLOAT, [1])],
        [helper.make_tensor("one", TP.FLOAT, [1], [1.0])],
    )
    m = _onnx(
        [helper.make_node("Loop", ["n", "", "x"], ["y"], body=body, name="loop_1e12")],
        [_vi("x", TP.FLOAT, [1])],
        [_vi("y", TP.FLOAT, [1])],
        [helper.make_tensor("n", TP.INT64, [], [10**12])],
    )
    cases.append(
        Case(
            "loop_1e12",
            _save(m, d, "loop"),
            {"x": np.zeros(1, np.float32)},
            flags=["--max-iterations", "1000", "--timeout", "20"],
            lib={"max_iterations": 1000, "timeout": 20.0},
            errors=frozenset({"api", "run", "verify", "bench"}),
        )
    )

    # hostile or odd inputs to a small model
    m = _onnx(
        [helper.make_node("Relu", ["x"], ["y"])],
        [_vi("x", TP.FLOAT, [4])],
        [_vi("y", TP.FLOAT, [4])],
    )
    rp = _save(m, d, "relu")
    x = np.array([-1.0, 2.0, -3.0, 4.0], np.float32)
    bomb = d / "bomb.npz"
    _npz_bomb(bomb, "x", 200 << 20)
    cases.append(
        Case("npz_bomb_200MB", rp, input_file=bomb, errors=frozenset({"api", "run", "verify"}))
    )
    cases.append(
        Case(
            "input_wrong_shape",
            rp,
            {"x": np.zeros(5, np.float32)},
            errors=frozenset({"api", "run", "verify"}),
        )
    )
    cases.append(
        Case(
            "input_strings_for_float",
            rp,
            {"x": np.array(["a", "b", "c", "d"])},
            errors=frozenset({"api", "run", "verify"}),
        )
    )
    be = x.astype(">f4")
    cases.append(
        Case("input_big_endian", rp, {"x": be}, ref=_ort(m, {"x": x}), oks=run_api | {"verify"})
    )
    import ml_dtypes

    cases.append(
        Case(
            "input_bfloat16",
            rp,
            {"x": x.astype(ml_dtypes.bfloat16)},
            note="bfloat16 has no .npy form: stored as raw 2-byte records",
        )
    )

    # a .keras zip bomb: refused from the archive's directory
    kb = d / "bomb.keras"
    _keras_bomb(kb, 300 << 20)
    cases.append(Case("keras_zip_bomb", kb, None, errors=frozenset({"api", *COMMANDS})))
    for c in cases:  # one model, many inputs: the model-only commands once
        if c.name.startswith(("gather_", "input_", "npz_")) and c.name not in (
            "gather_7",
            "input_8GiB",
        ):
            c.where = INPUTS_ONLY
    return cases


def _npz_bomb(path: Path, name: str, nbytes: int) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        with z.open(f"{name}.npy", "w", force_zip64=True) as f:
            hdr = {"descr": "<f4", "fortran_order": False, "shape": (nbytes // 4,)}
            np.lib.format.write_array_header_1_0(f, hdr)
            block = bytes(1 << 20)
            for _ in range(nbytes >> 20):
                f.write(block)


def _keras_bomb(path: Path, nbytes: int) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("metadata.json", json.dumps({"keras_version": "3.0.0"}))
        z.writestr("config.json", json.dumps({"class_name": "Sequential", "config": {}}))
        with z.open("model.weights.h5", "w", force_zip64=True) as f:
            block = bytes(1 << 20)
            for _ in range(nbytes >> 20):
                f.write(block)


# -- running --------------------------------------------------------------------------------------
def _limit():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _env(work: Path) -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONUNBUFFERED="1")
    env.setdefault("RELAY_CACHE_DIR", str(work / "cache"))
    return env


def _spawn(argv, work: Path, timeout: int = TIMEOUT):
    try:
        p = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
            env=_env(work),
            preexec_fn=_limit,
        )
    except subprocess.TimeoutExpired:
        return None
    return p


def _inputs_npz(case: Case, work: Path) -> Path | None:
    if case.input_file is not None:
        return case.input_file
    if case.inputs is None:
        return None
    p = work / f"{case.name}.inputs.npz"
    arrays = {}
    for k, v in case.inputs.items():
        v = np.asarray(v)
        if v.dtype == object:
            v = v.astype(str)
        elif v.dtype.kind == "V" or v.dtype.name == "bfloat16":
            v = v.view(np.dtype("V2"))
        arrays[k] = v
    with open(p, "wb") as f:
        np.savez(f, **arrays)
    return p


_API = r"""
import json, sys
import numpy as np
import relay_import as ri
from relay_core.errors import RelayError
from relay_import.io import read_inputs, write_outputs
spec = json.loads(sys.argv[1])
try:
    lib = ri.compile(ri.load(spec["model"]))
    for k, v in spec["lib"].items():
        setattr(lib, k, v)
    feed = read_inputs(None, spec["inputs"], lib.input_names) if spec["inputs"] else {}
    if spec["inputs"] is None:
        from relay_import.io import fill_inputs
        fill_inputs(lib, feed, "zeros")
    for _ in range(spec["repeat"]):
        outs = lib(**feed)
    write_outputs(spec["out"], lib.output_names, outs)
    print(json.dumps({"outcome": "ok"}))
except RelayError as e:
    print(json.dumps({"outcome": "error", "type": type(e).__name__, "msg": str(e)}))
"""


def _same(out_npz: Path, ref: list) -> bool:
    with np.load(out_npz, allow_pickle=False) as z:
        got = [z[k] for k in z.files]
    if len(got) != len(ref):
        return False
    for g, r in zip(got, ref):
        if r.dtype == object:
            if g.shape != r.shape or g.astype(str).tolist() != r.astype(str).tolist():
                return False
        elif g.shape != r.shape or not np.allclose(g, r, rtol=1e-5, atol=1e-6):
            return False
    return True


def _short(msg: str, n: int = 70) -> str:
    msg = " ".join(msg.split())
    return msg if len(msg) <= n else msg[: n - 1] + "…"


def _result(case: Case, out: Path, produced: bool) -> str:
    """'ok' outcome of a run that produced outputs: checked against onnxruntime."""
    if not produced:
        return "ok"
    if case.ref is None:
        return "WRONG: an answer where onnxruntime refuses the inputs"
    return "ok (= onnxruntime)" if _same(out, case.ref) else "WRONG: differs from onnxruntime"


def run_api(case: Case, work: Path) -> str:
    out = work / f"{case.name}.api.npz"
    inp = _inputs_npz(case, work)
    spec = {
        "model": str(case.model),
        "inputs": str(inp) if inp else None,
        "lib": case.lib,
        "repeat": case.repeat,
        "out": str(out),
    }
    p = _spawn([sys.executable, "-c", _API, json.dumps(spec)], work)
    if p is None:
        return "HANG"
    if p.returncode < 0:
        return f"CRASH: signal {-p.returncode}"
    if "Traceback" in p.stderr or p.returncode != 0:
        return "TRACEBACK: " + _short((p.stderr.strip().splitlines() or ["?"])[-1])
    r = json.loads(p.stdout.strip().splitlines()[-1])
    if r["outcome"] == "error":
        return f"error {r['type']}: {_short(r['msg'])}"
    return _result(case, out, case.inputs is not None)


def cli_argv(case: Case, cmd: str, work: Path) -> tuple[list, Path | None]:
    m = str(case.model)
    out = None
    if cmd == "inspect":
        args = [cmd, m]
    elif cmd == "convert":
        args = [cmd, m, "-o", str(work / f"{case.name}.relay")]
    elif cmd == "compile":
        args = [cmd, m, "-o", str(work / f"{case.name}.relaylib")]
    elif cmd == "run":
        out = work / f"{case.name}.run.npz"
        inp = _inputs_npz(case, work)
        args = [cmd, m, *(["--inputs", str(inp)] if inp else ["--fill", "zeros"]), "-o", str(out)]
        args += case.flags
    elif cmd == "verify":
        inp = _inputs_npz(case, work)
        args = [cmd, m, *(["--inputs", str(inp)] if inp else []), *case.flags]
    else:
        args = [cmd, m, "--runs", "1", "--warmup", "1", *case.flags]
    return [sys.executable, "-m", "relay_import", *args, "-q"], out


def run_cli(case: Case, cmd: str, work: Path) -> str:
    argv, out = cli_argv(case, cmd, work)
    p = _spawn(argv, work)
    if p is None:
        return "HANG"
    if p.returncode < 0:
        return f"CRASH: signal {-p.returncode}"
    err = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
    if "Traceback (most recent call last)" in p.stderr:
        return "TRACEBACK: " + _short(err[-1] if err else "?")
    if p.returncode == 0:
        return _result(case, out, out is not None and (case.inputs is not None))
    if cmd == "verify" and "MISMATCH" in p.stdout:
        return "WRONG: verify MISMATCH"
    prefix = f"relay {cmd}: error: "
    if p.returncode == 1 and len(err) == 1 and err[0].startswith(prefix):
        if "internal error" in err[0]:
            return "UNCLEAR: " + _short(err[0][len(prefix) :])
        return "error: " + _short(err[0][len(prefix) :])
    return f"UNCLEAR (exit {p.returncode}): " + _short(" | ".join(err[-2:]) or p.stdout[-200:])


# -- relay serve ----------------------------------------------------------------------------------
def run_serve(case: Case, srv, work: Path) -> str:
    """Upload the model, then run it on the inputs (an .npz body) through the /v1 routes."""
    from tests.relay_import.serve_util import jrequest, request

    status, info = jrequest(
        srv.url + f"/v1/models?filename={case.model.name}", case.model.read_bytes()
    )
    if status >= 400:
        return _serve_error(status, info)
    mid = info["id"]
    status, info = jrequest(srv.url + f"/v1/models/{mid}/compile", b"", method="POST")
    if status >= 400:
        return _serve_error(status, info)
    inp = _inputs_npz(case, work)
    if inp is None:
        return "ok"
    status, body = request(srv.url + f"/v1/models/{mid}/run", inp.read_bytes())
    if status >= 400:
        try:
            return _serve_error(status, json.loads(body))
        except ValueError:
            return f"UNCLEAR {status}: {_short(body.decode(errors='replace'))}"
    out = work / f"{case.name}.serve.npz"
    out.write_bytes(body)
    return _result(case, out, True)


def _serve_error(status, info) -> str:
    """A JSON error with a stable code (a 504 worker_timeout too) is a clear error."""
    e = info.get("error", info) if isinstance(info, dict) else None
    if isinstance(e, dict) and e.get("code") == "internal_error":
        return f"SERVER ERROR {status}: {_short(e.get('message', ''))}"
    if isinstance(e, dict) and "code" in e:
        return f"error {status} {e['code']}: {_short(e.get('message', ''))}"
    return f"UNCLEAR {status}: {_short(str(info))}"


def serve_alive(srv) -> bool:
    from tests.relay_import.serve_util import request

    return srv.proc.poll() is None and request(srv.url + "/health")[0] == 200


def start_server(work: Path):
    from tests.relay_import.serve_util import Server

    (work / "srvtmp").mkdir(exist_ok=True)
    s = Server(
        [
            "--store",
            str(work / "store"),
            "--quiet",
            "--allow-format",
            "keras",
            "--worker-timeout",
            "30",
        ],
        env={"RELAY_CACHE_DIR": str(work / "srvcache")},
        tmp=str(work / "srvtmp"),
    )
    s.wait_ready()
    return s


# -- the rule -------------------------------------------------------------------------------------
def acceptable(case: Case, where: str, outcome: str) -> str | None:
    """None when `outcome` keeps the rule for `case` at `where`, else why not."""
    if not (outcome.startswith("ok") or outcome.startswith("error")):
        return outcome
    if where in case.errors and not outcome.startswith("error"):
        return f"must be an error, got {outcome}"
    if where in case.oks and not outcome.startswith("ok"):
        return f"must be a correct result, got {outcome}"
    return None


def table(rows: list[tuple[str, dict]]) -> str:
    cols = ["api", *COMMANDS, "serve"]
    lines = ["| case | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for name, res in rows:
        cells = [res.get(c, "·").replace("|", "/") for c in cols]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    from concurrent.futures import ThreadPoolExecutor

    work = Path(tempfile.mkdtemp(prefix="relay-hostile-"))
    cases = [c for c in build_cases(work / "models") if not argv or c.name in argv]
    srv = start_server(work)
    results: dict = {c.name: {} for c in cases}
    try:
        jobs = [(c, w) for c in cases for w in ("api", *COMMANDS) if w in c.where]
        with ThreadPoolExecutor(2) as pool:
            futs = {
                pool.submit(
                    run_api if w == "api" else run_cli, c, *(() if w == "api" else (w,)), work
                ): (c, w)
                for c, w in jobs
            }
            for f, (c, w) in futs.items():
                results[c.name][w] = f.result()
        for c in cases:
            if "serve" not in c.where:
                continue
            results[c.name]["serve"] = run_serve(c, srv, work)
            if not serve_alive(srv):
                results[c.name]["serve"] += " (SERVER DIED)"
                break
    finally:
        srv.stop()
    print(table([(c.name, results[c.name]) for c in cases]))
    bad = [
        (c.name, w, why)
        for c in cases
        for w, o in results[c.name].items()
        if (why := acceptable(c, w, o))
    ]
    for b in bad:
        print("BROKEN:", *b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


__all__ = ["Case", "build_cases", "run_api", "run_cli", "run_serve", "acceptable", "table"]
