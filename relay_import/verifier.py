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

import time
from dataclasses import dataclass

import numpy as np

from relay_core import IRModule
from relay_core.errors import InputError
from relay_core.ir import Call, Expr, Function, Op, TensorType, Tuple, TupleType
from relay_core.ir import dtype as dt
from relay_core.ir.visitor import free_vars, post_order

from .compare import compare, stats
from .report import LayerDiff, VerifyReport
from .runners import make_runner


@dataclass
class InputSpec:
    name: str
    shape: tuple
    dtype: str
    high: int | None = None  # exclusive upper bound for integer inputs


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
    specs = []
    for p in main.params:
        t = p.type_annotation or p.checked_type
        if not isinstance(t, TensorType):
            raise InputError(f"input {p.name_hint} is not a tensor ({t}); pass inputs explicitly")
        given = (shapes or {}).get(p.name_hint)
        if given is not None:
            shape = tuple(int(d) for d in given)
        else:
            shape = tuple(d if isinstance(d, int) else 1 for d in t.shape)
        specs.append(InputSpec(p.name_hint, shape, t.dtype, bounds.get(p)))
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
    args = [inputs[p.name_hint] for p in main.params]
    if compiled:
        lib = relay_core.build(probe)
        vals = lib(*args)
    else:
        vals = list(relay_core.evaluate(probe, *args))
    return dict(zip(kept, vals))


def verify(
    source,
    inputs: dict | list | None = None,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    seed: int = 0,
    shapes: dict | None = None,
    html: str | None = None,
    localize: bool = True,
    compiled: bool = True,
    mod: IRModule | None = None,
    opt_level: int = 3,
    **convert_kw,
) -> VerifyReport:
    """Prove (or disprove) that the compiled Relay module computes what the source computes.

    >>> report = relay_import.verify("model.onnx")
    >>> print(report.summary()); bool(report)
    On a mismatch the report names the first diverging source node (`report.first_divergence`)
    with its op, its inputs' statistics and its error; `html="report.html"` writes a page with a
    per-layer error plot and the graph around that node.
    """
    import relay_core

    from .api import detect_framework, load

    timings = {}
    t0 = time.perf_counter()
    framework = detect_framework(source)
    if framework in ("relay", "compiled"):
        raise InputError("verify needs a source model (ONNX, PyTorch, TensorFlow) to compare with")
    runner = make_runner(source, framework, convert_kw)
    if mod is None:
        mod = (
            load(source, shapes=shapes, **convert_kw)
            if framework == "onnx"
            else load(source, **convert_kw)
        )
    timings["convert"] = time.perf_counter() - t0
    specs = input_specs(mod, shapes)
    if inputs is None:
        feed = make_inputs(specs, seed)
    elif isinstance(inputs, dict):
        feed = {k: np.asarray(v) for k, v in inputs.items()}
    else:
        feed = {s.name: np.asarray(v) for s, v in zip(specs, inputs)}
    missing = [s.name for s in specs if s.name not in feed]
    if missing:
        raise InputError(
            f"inputs missing: {missing}; the model's inputs are {[s.name for s in specs]}"
        )

    t0 = time.perf_counter()
    expected = runner.run(feed)
    timings["source run"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    args = [feed[s.name] for s in specs]
    if compiled:
        lib = relay_core.build(mod, opt_level=opt_level)
        timings["compile"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        actual = lib(*args)
    else:
        actual = _flatten(relay_core.evaluate(mod, *args))
    timings["relay run"] = time.perf_counter() - t0

    names = runner.output_names()
    outputs = []
    if len(expected) != len(actual):
        notes = [f"the source gives {len(expected)} outputs, Relay {len(actual)}"]
    else:
        notes = []
    for i, (e, a) in enumerate(zip(expected, actual)):
        nm = names[i] if i < len(names) else f"output{i}"
        outputs.append(compare(nm, e, a, rtol, atol))
    report = VerifyReport(
        str(source)
        if isinstance(source, (str, bytes)) or hasattr(source, "__fspath__")
        else type(source).__name__,
        framework,
        rtol,
        atol,
        outputs,
        inputs={k: stats(v) for k, v in feed.items()},
        timings=timings,
        notes=notes,
    )
    if len(expected) != len(actual):
        report.outputs.append(
            compare("(output count)", np.zeros(len(expected)), np.zeros(len(actual)), 0, 0)
        )
    if not report.ok and localize:
        t0 = time.perf_counter()
        _localise(report, mod, runner, feed, rtol, atol, compiled)
        timings["localise"] = time.perf_counter() - t0
    if html:
        report.write_html(html)
    return report


def _localise(report, mod, runner, feed, rtol, atol, compiled) -> None:
    nodes = mod.attrs.get("source_nodes")
    if not nodes:
        report.notes.append("the converter recorded no source map: cannot localise")
        return
    tensor_names = []
    for _, _, _, outs in nodes:
        tensor_names += [o for o in outs if o]
    src_vals = runner.intermediates(feed, tensor_names)
    try:
        rel_vals = _relay_intermediates(mod, tensor_names, feed, compiled)
    except Exception as e:  # fall back to the interpreter if the probe cannot compile
        if not compiled:
            raise
        report.notes.append(
            f"compiled probe failed ({type(e).__name__}); localised with the interpreter"
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
    layers = []
    first = None
    for node, op, ins, outs in nodes:
        for o in outs:
            if o not in src_vals or o not in rel_vals:
                continue
            d = compare(o, src_vals[o], rel_vals[o], rtol, atol)
            ld = LayerDiff(
                len(layers),
                node,
                op,
                o,
                d,
                [
                    (i, stats(src_vals[i] if i in src_vals else feed.get(i, np.zeros(0))))
                    for i in ins
                    if i
                ],
            )
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


__all__ = ["verify", "input_specs", "make_inputs", "InputSpec", "TupleType"]
