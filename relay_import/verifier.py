"""`verify`: run the source framework and the compiled Relay module on the same inputs, compare
every output, and on a mismatch find the first source node whose output diverges.

Localisation uses what every converter records in the module it returns:
  mod.attrs["source_outputs"]: {source tensor name: Relay expression in @main}
  mod.attrs["source_nodes"]:   [(node name, op, [input tensor names], [output tensor names])]
                               in the source graph's topological order.
The source runner exposes the same tensors of the original model; both sides are evaluated on
the same inputs and compared node by node. The first node whose outputs are off while all its
inputs agree is where the conversion (or the compiler) went wrong.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from relay_core import IRModule, events
from relay_core.errors import InputError, ResourceLimitError
from relay_core.ir import Call, Expr, Function, Op, TensorType, Tuple, TupleType
from relay_core.ir import dtype as dt
from relay_core.ir.visitor import free_vars, post_order

from .compare import compare, stats
from .report import LayerDiff, VerifyReport
from .results import Results
from .runners import SourceRunner, StoredRunner, make_runner, run_bounded


@dataclass
class InputSpec:
    name: str
    shape: tuple
    dtype: str
    high: int | None = None  # exclusive upper bound for integer inputs
    declared: tuple | None = None  # the model's own dims: ints, None where free


def _index_bounds(main: Function) -> dict:
    """For integer params used as indices (take / one_hot / gather ...), the size they index."""
    params = set(main.params)
    bounds: dict = {}
    passthrough = {"cast", "reshape", "expand_dims", "squeeze", "transpose", "copy"}
    for node in post_order(main.body):
        if type(node) is not Call or type(node.op) is not Op:
            continue
        name = node.op.name
        if name not in ("take", "one_hot", "gather", "gather_nd", "dyn.one_hot"):
            continue
        idx = node.args[1] if name in ("take", "gather", "gather_nd") else node.args[0]
        while type(idx) is Call and type(idx.op) is Op and idx.op.name in passthrough:
            idx = idx.args[0]
        if idx not in params:
            continue
        limit = None
        if name == "take" and node.args[0].has_type:
            t = node.args[0].checked_type
            axis = getattr(node.attrs, "axis", 0)
            axis = 0 if axis is None else axis
            if isinstance(t, TensorType) and t.shape and isinstance(t.shape[axis], int):
                limit = t.shape[axis]
        elif name == "one_hot":
            limit = getattr(node.attrs, "depth", None)
        if limit:
            bounds[idx] = min(bounds.get(idx, limit), limit)
    return bounds


def input_specs(mod: IRModule, shapes: dict | None = None) -> list[InputSpec]:
    """Input names / shapes / dtypes of @main; unknown dims from `shapes` or 1."""
    import relay_core

    main = mod["main"]
    if not main.body.has_type:
        relay_core.infer_type(mod)
    bounds = _index_bounds(main)
    given_names = list(main.attr("input_names") or [])  # where params were renamed
    specs = []
    for k, p in enumerate(main.params):
        name = given_names[k] if k < len(given_names) else p.name_hint
        t = p.type_annotation or p.checked_type
        if not isinstance(t, TensorType):
            raise InputError(f"input {name} is not a tensor ({t}); pass inputs explicitly")
        given = (shapes or {}).get(name, (shapes or {}).get(p.name_hint))
        if given is not None:
            shape = tuple(int(d) for d in given)
        else:
            shape = tuple(d if isinstance(d, int) else 1 for d in t.shape)
        declared = tuple(d if isinstance(d, int) else None for d in t.shape)
        specs.append(InputSpec(name, shape, t.dtype, bounds.get(p), declared))
    return specs


def make_inputs(specs: list[InputSpec], seed: int = 0) -> dict[str, np.ndarray]:
    """Random inputs: normal floats, integers in a sensible range (indices below the size they
    index, else [0, 10)), coin-flip booleans."""
    rng = np.random.default_rng(seed)
    out = {}
    for s in specs:
        if s.dtype == "bool":
            out[s.name] = rng.random(s.shape) < 0.5
        elif dt.is_int(s.dtype):
            out[s.name] = rng.integers(0, s.high or 10, size=s.shape).astype(dt.to_numpy(s.dtype))
        elif dt.is_float(s.dtype):
            out[s.name] = rng.standard_normal(s.shape).astype(dt.to_numpy(s.dtype))
        else:
            raise InputError(f"cannot generate inputs of dtype {s.dtype} for {s.name}; pass them")
    return out


def _flatten(v) -> list:
    if isinstance(v, (list, tuple)):
        out = []
        for x in v:
            out += _flatten(x)
        return out
    return [np.asarray(v)]


def _relay_intermediates(mod: IRModule, names: list[str], inputs: dict, compiled: bool):
    """Values of the Relay expressions mapped to source tensors `names`, in one run."""
    import relay_core

    smap = mod.attrs.get("source_outputs", {})
    main = mod["main"]
    params = set(main.params)
    exprs: list[Expr] = []
    kept: list[str] = []
    for n in names:
        e = smap.get(n)
        if e is None or not e.has_type or not isinstance(e.checked_type, TensorType):
            continue
        if any(v not in params for v in free_vars(e)):
            continue  # inside a loop / branch body: not a value of @main
        exprs.append(e)
        kept.append(n)
    if not exprs:
        return {}
    probe = IRModule.from_expr(Function(main.params, Tuple(tuple(exprs))))
    for gv, f in mod.functions.items():
        if gv.name_hint != "main":
            probe.add(gv, f)
    for td in mod.type_definitions.values():
        probe.add_type(td)
    relay_core.infer_type(probe)
    args = [inputs[s.name] for s in input_specs(mod)]
    if compiled:
        lib = relay_core.build(probe)
        vals = lib(*args)
    else:
        vals = list(relay_core.evaluate(probe, *args))
    return dict(zip(kept, vals))


Tolerance = float | Mapping[str, float]


def _tol(tol: Tolerance, name: str, default: float) -> float:
    """A tolerance for tensor `name`: per-name values in a dict ("*" or "" for the rest)."""
    if isinstance(tol, Mapping):
        for k in (name, "*", ""):
            if k in tol:
                return float(tol[k])
        return default
    return float(tol)


def verify(
    source: Any,
    inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray] | None = None,
    rtol: Tolerance = 1e-4,
    atol: Tolerance = 1e-5,
    seed: int = 0,
    shapes: Mapping[str, Sequence[int]] | None = None,
    html: str | None = None,
    localize: bool = True,
    compiled: bool = True,
    mod: IRModule | None = None,
    opt_level: int = 3,
    per_layer: bool = False,
    save_results: str | None = None,
    load_results: str | None = None,
    pass_context: Any = None,
    max_iterations: int | None = None,
    timeout: float | None = None,
    **convert_kw: Any,
) -> VerifyReport:
    """Prove (or disprove) that the compiled Relay module computes what the source computes.

    >>> report = relay_import.verify("model.onnx")
    >>> print(report.summary()); bool(report)

    Every output must satisfy |relay - source| <= atol + rtol * |source| elementwise. `rtol` /
    `atol` may be dicts giving outputs their own tolerance (`{"probs": 1e-3, "*": 1e-4}`).
    On a mismatch the report names the first diverging source node (`report.first_divergence`)
    with its op, its inputs' statistics and its error; `per_layer=True` compares every layer
    even at parity; `html="report.html"` writes a page with the error plot and the graph.
    `save_results="ref.npz"` keeps the source's inputs and outputs (and layers, with
    `per_layer`); `load_results="ref.npz"` compares against them instead of running the source
    framework, so `source` may then also be a `.relay` file or a compiled artifact.
    `max_iterations` / `timeout` (seconds) bound each run of a model with loops: ours stops
    with a ResourceLimitError; the source runtime's run is abandoned after `timeout`.
    Inputs are checked against the model (names, shapes, dtypes, size) before any runtime
    sees them.
    """
    import relay_core

    from .api import detect_framework, load, load_compiled

    timings: dict[str, float] = {}
    framework = detect_framework(source)
    stored = None
    if load_results is not None:
        stored = Results.load(load_results)
        runner: SourceRunner = StoredRunner(stored, load_results)
    elif framework in ("relay", "compiled"):
        raise InputError(
            "verify needs a source model (ONNX, PyTorch, TensorFlow) to compare with, or "
            "reference results saved earlier (load_results=, relay verify --load-results)"
        )
    else:
        runner = make_runner(source, framework, convert_kw)
    lib = None
    t0 = time.perf_counter()
    if framework == "compiled":
        lib = load_compiled(source)
    elif mod is None:
        kw = dict(convert_kw)
        if framework in ("onnx", "pytorch", "tensorflow") and shapes:
            kw["shapes"] = shapes
        mod = load(source, **kw)
    timings["convert"] = time.perf_counter() - t0
    specs = _specs(mod, lib, shapes)
    budget = _budget()
    if inputs is None:
        if stored is None:
            check_specs(specs, budget)
        feed = dict(stored.inputs) if stored is not None else make_inputs(specs, seed)
    elif isinstance(inputs, Mapping):
        feed = dict(inputs)
    else:
        inputs = list(inputs)
        if len(inputs) != len(specs):
            raise InputError(
                f"{len(inputs)} inputs given, the model takes {len(specs)}: "
                f"{[s.name for s in specs]}"
            )
        feed = {s.name: v for s, v in zip(specs, inputs)}
    feed = check_feed(specs, feed, budget)
    missing = [s.name for s in specs if s.name not in feed]
    if missing:
        raise InputError(
            f"inputs missing: {missing}; the model's inputs are {[s.name for s in specs]}"
        )

    with events.stage(f"running {runner.label}" if not runner.origin else "reading results"):
        t0 = time.perf_counter()
        expected = run_bounded(lambda: runner.run(feed), timeout, runner.label or "the source")
        timings["source run"] = time.perf_counter() - t0
    args = [feed[s.name] for s in specs]
    if compiled or lib is not None:
        if lib is None:
            t0 = time.perf_counter()
            kw = {"pass_context": pass_context} if pass_context is not None else {}
            lib = relay_core.build(mod, opt_level=opt_level, **kw)
            timings["compile"] = time.perf_counter() - t0
        lib.max_iterations, lib.timeout = max_iterations, timeout
        with events.stage("running relay"):
            t0 = time.perf_counter()
            actual = lib(*args)
            timings["relay run"] = time.perf_counter() - t0
    else:
        with events.stage("running the interpreter"):
            t0 = time.perf_counter()
            actual = _flatten(
                relay_core.evaluate(mod, *args, max_iterations=max_iterations, timeout=timeout)
            )
            timings["relay run"] = time.perf_counter() - t0

    names = runner.output_names()
    notes = []
    if len(expected) != len(actual):
        notes.append(f"the source gives {len(expected)} outputs, Relay {len(actual)}")
    r0, a0 = _tol(rtol, "", 1e-4), _tol(atol, "", 1e-5)
    outputs = []
    for i, (e, a) in enumerate(zip(expected, actual)):
        nm = names[i] if i < len(names) else f"output{i}"
        outputs.append(compare(nm, e, a, _tol(rtol, nm, r0), _tol(atol, nm, a0)))
    if len(expected) != len(actual):
        outputs.append(
            compare("(output count)", np.zeros(len(expected)), np.zeros(len(actual)), 0, 0)
        )
    report = VerifyReport(
        _source_name(source),
        framework if stored is None else stored.framework or framework,
        r0,
        a0,
        outputs,
        inputs={k: stats(v) for k, v in feed.items()},
        timings=timings,
        notes=notes,
        reference=runner.label,
        reference_origin=runner.origin,
        show_layers=per_layer,
    )
    if mod is not None:
        report.graph = list(mod.attrs.get("source_nodes") or [])
    layers_wanted = per_layer or bool(html) or (not report.ok and localize)
    src_layers: dict = {}
    if layers_wanted:
        if mod is None:
            report.notes.append("a compiled artifact carries no source map: no per-layer view")
        else:
            t0 = time.perf_counter()
            src_layers = _localise(report, mod, runner, feed, rtol, atol, compiled)
            timings["layers"] = time.perf_counter() - t0
    if save_results is not None:
        Results(
            report.source,
            framework,
            runner.label,
            feed,
            list(zip([d.name for d in outputs], expected)),
            src_layers,
        ).save(save_results)
    if html:
        report.write_html(html)
    return report


def _source_name(source) -> str:
    if isinstance(source, (str, bytes)) or hasattr(source, "__fspath__"):
        return str(source)
    return type(source).__name__


def _specs(mod: IRModule | None, lib, shapes) -> list[InputSpec]:
    """The inputs to feed: from the module, or from a compiled artifact's manifest."""
    if mod is not None:
        return input_specs(mod, shapes)
    specs = []
    for a in lib.get_inputs():
        given = (shapes or {}).get(a.name)
        shape = tuple(given) if given else tuple(d if isinstance(d, int) else 1 for d in a.shape)
        declared = tuple(d if isinstance(d, int) else None for d in a.shape)
        specs.append(InputSpec(a.name, shape, a.dtype, declared=declared))
    return specs


def _budget() -> int:
    from relay_core.backend.budget import max_tensor_bytes

    return max_tensor_bytes()


def _nbytes(shape, dtype: str) -> int:
    return math.prod(shape) * (8 if dtype == "string" else dt.itemsize(dtype))


def check_specs(specs: list[InputSpec], budget: int) -> None:
    """Inputs verify would generate must fit the byte budget (nothing is allocated yet)."""
    for s in specs:
        n = _nbytes(s.shape, s.dtype)
        if n > budget:
            raise ResourceLimitError(
                f"input {s.name!r} is a {list(s.shape)} {s.dtype} tensor of {n:,} bytes, over "
                f"the budget of {budget:,} (RELAY_MAX_TENSOR_BYTES); give smaller --input-shape"
            )


def check_feed(specs: list[InputSpec], feed: dict, budget: int) -> dict:
    """The user's inputs checked against the model before any runtime sees them: names,
    ranks and fixed dims, dtypes (a safe cast within the same kind is made), byte order (made
    native), size. Returns the arrays to feed."""
    by_name = {s.name: s for s in specs}
    unknown = [k for k in feed if k not in by_name]
    if unknown:
        raise InputError(f"unknown input(s) {unknown}; the model's inputs are {list(by_name)}")
    out = {}
    for name, v in feed.items():
        s = by_name[name]
        try:
            arr = np.asarray(v)
        except Exception as e:  # ragged lists and the like
            raise InputError(f"input {name!r} is not an array: {e}") from None
        want = np.dtype(dt.to_numpy(s.dtype))
        if arr.dtype.hasobject and s.dtype != "string":
            raise InputError(f"input {name!r} holds Python objects; the model wants {s.dtype}")
        if arr.dtype.byteorder not in ("=", "|") and arr.dtype.newbyteorder("=") != arr.dtype:
            arr = arr.astype(arr.dtype.newbyteorder("="))  # big-endian data: same values
        if s.dtype == "string":
            if arr.dtype.kind not in "OUS":
                raise InputError(f"input {name!r} has dtype {arr.dtype}, the model wants strings")
            arr = arr.astype(object)
        elif arr.dtype != want:
            if not np.can_cast(arr.dtype, want, "same_kind"):
                raise InputError(
                    f"input {name!r} has dtype {arr.dtype}, the model wants {s.dtype}; "
                    f"convert it (x.astype({str(want)!r}))"
                )
            arr = arr.astype(want)
        decl = s.declared if s.declared is not None else s.shape
        if arr.ndim != len(decl) or any(d is not None and d != n for d, n in zip(decl, arr.shape)):
            shown = tuple("?" if d is None else d for d in decl)
            raise InputError(
                f"input {name!r} has shape {arr.shape}, the model wants {shown}".replace("'", "")
            )
        if _nbytes(arr.shape, s.dtype) > budget:
            raise ResourceLimitError(
                f"input {name!r} takes {_nbytes(arr.shape, s.dtype):,} bytes, over the budget "
                f"of {budget:,} (RELAY_MAX_TENSOR_BYTES)"
            )
        out[name] = np.ascontiguousarray(arr) if arr.ndim else arr
    return out


def _localise(report, mod, runner, feed, rtol, atol, compiled) -> dict:
    """Compare every source tensor the converter mapped; returns the source's values."""
    nodes = mod.attrs.get("source_nodes")
    if not nodes:
        report.notes.append("the converter recorded no source map: no per-layer view")
        return {}
    tensor_names = []
    for _, _, _, outs in nodes:
        tensor_names += [o for o in outs if o]
    what = "reading stored layers" if runner.origin else f"running {runner.label} per layer"
    with events.stage(what):
        src_vals = runner.intermediates(feed, tensor_names)
    if not src_vals:
        report.notes.append(
            f"{runner.label} gave no per-layer values (stored results keep them when saved "
            "with --per-layer)"
        )
        return {}
    try:
        rel_vals = _relay_intermediates(mod, tensor_names, feed, compiled)
    except Exception as e:  # fall back to the interpreter if the probe cannot compile
        if not compiled:
            raise
        report.notes.append(
            f"compiled probe failed ({type(e).__name__}); layers compared with the interpreter"
        )
        rel_vals = _relay_intermediates(mod, tensor_names, feed, False)
    good: dict[str, bool] = {n: True for n in feed}
    producers: dict[str, tuple[str, str]] = {}
    consumers: dict[str, list[tuple[str, str]]] = {}
    for node, op, ins, outs in nodes:
        for o in outs:
            producers[o] = (node, op)
        for i in ins:
            consumers.setdefault(i, []).append((node, op))
    weights = [i for _, _, ins, _ in nodes for i in ins if i and i not in producers]
    consts = runner.constants([i for i in weights if i not in feed])
    r0, a0 = _tol(rtol, "", 1e-4), _tol(atol, "", 1e-5)

    def input_stats(name: str) -> dict:
        if name in src_vals:
            return stats(src_vals[name])
        if name in feed:
            return dict(stats(feed[name]), kind="model input")
        return consts.get(name) or {"shape": (), "dtype": "?", "kind": "not measured"}

    layers = []
    first = None
    with events.stage(f"comparing {len(nodes)} layers"):
        for node, op, ins, outs in nodes:
            for o in outs:
                if o not in src_vals or o not in rel_vals:
                    continue
                d = compare(o, src_vals[o], rel_vals[o], _tol(rtol, o, r0), _tol(atol, o, a0))
                ld = LayerDiff(len(layers), node, op, o, d, [(i, input_stats(i)) for i in ins if i])
                layers.append(ld)
                good[o] = d.ok
                inputs_ok = all(good.get(i, True) for i in ins if i)
                if first is None and not d.ok and inputs_ok:
                    first = ld
    report.layers = layers
    report.first_divergence = first
    if first is not None:
        node_ins = next(ins for n, _, ins, _ in nodes if n == first.node)
        node_outs = next(outs for n, _, _, outs in nodes if n == first.node)
        report.neighbours = {
            "inputs": [producers.get(i, (i, "input")) for i in node_ins if i],
            "outputs": [c for o in node_outs for c in consumers.get(o, [])],
        }
    return src_vals


__all__ = ["verify", "input_specs", "make_inputs", "InputSpec", "TupleType"]
