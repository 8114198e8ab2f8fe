"""Running ONNX's own conformance cases: the node cases (generated in memory by
`onnx.backend.test.case.node.collect_testcases`), the `simple` / `pytorch-*` data folders and
the `light` real-model graphs, as convert -> typecheck -> evaluate with the interpreter."""

from __future__ import annotations

import functools
import glob
import json
import os
import re
import warnings
from dataclasses import dataclass, field

import numpy as np

from relay_core.ir import dtype as dt


@dataclass
class Case:
    """One conformance case: a model and its (inputs, expected outputs) data sets."""

    name: str
    model: object  # ModelProto, or a path
    data_sets: list = field(default_factory=list)
    rtol: float = 1e-3
    atol: float = 1e-7
    op: str = ""


@functools.lru_cache(maxsize=1)
def node_cases() -> dict[str, Case]:
    """Every ONNX node test case by name (collected once per process; ~10 s)."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = collect_testcases(None)
    out: dict[str, Case] = {}
    for c in raw:
        out[c.name] = Case(c.name, c.model, list(c.data_sets), c.rtol, c.atol)
    for c in out.values():
        c.op = _case_op(c, out)
    return out


_EXPANDED = re.compile(r"_expanded(_ver\d+)?$")


def _case_op(case: Case, cases: dict[str, Case]) -> str:
    """The operator a case tests: its node's op, or for an `_expanded` case the op of the
    case it expands."""
    base = _EXPANDED.sub("", case.name)
    if base != case.name and base in cases:
        return cases[base].op or _main_op(cases[base].model)
    return _main_op(case.model)


def _main_op(model) -> str:
    nodes = model.graph.node
    ops = [n.op_type for n in nodes if n.op_type not in ("Constant",)]
    if not ops:
        return nodes[-1].op_type if nodes else "?"
    d = nodes[-1].domain
    name = ops[-1] if len(set(ops)) > 1 else ops[0]
    return f"{d}.{name}" if d not in ("", "ai.onnx") else name


# ---------------------------------------------------------------------------------------------
# Data folders.

_DATA = None


def data_root() -> str:
    import onnx.backend.test

    return os.path.join(os.path.dirname(onnx.backend.test.__file__), "data")


@functools.cache
def folder_cases(kind: str) -> dict[str, Case]:
    """Cases of a data folder (`simple`, `pytorch-converted`, `pytorch-operator`)."""
    import onnx

    out = {}
    for d in sorted(glob.glob(os.path.join(data_root(), kind, "test_*"))):
        path = os.path.join(d, "model.onnx")
        model = onnx.load(path, load_external_data=False)
        ins = [
            i for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}
        ]
        sets = []
        for ds in sorted(glob.glob(os.path.join(d, "test_data_set_*"))):
            inputs = [
                _read_pb(os.path.join(ds, f"input_{k}.pb"), i.type)
                for k, i in enumerate(ins)
                if os.path.exists(os.path.join(ds, f"input_{k}.pb"))
            ]
            outputs = [
                _read_pb(os.path.join(ds, f"output_{k}.pb"), o.type)
                for k, o in enumerate(model.graph.output)
            ]
            sets.append((inputs, outputs))
        name = os.path.basename(d)
        out[name] = Case(name, path, sets, op=_main_op(model))
    return out


@functools.lru_cache(maxsize=1)
def light_cases() -> dict[str, Case]:
    """The nine `light_*.onnx` model-zoo graphs: input arange(n)/n as onnx's runner makes it,
    expected outputs stored beside them, tolerances from real/*/data.json."""
    import onnx

    tol = {}
    for f in glob.glob(os.path.join(data_root(), "real", "*", "data.json")):
        with open(f) as fh:
            info = json.load(fh)
        tol[info["model_name"]] = (info.get("rtol", 1e-3), info.get("atol", 1e-7))
    out = {}
    for path in sorted(glob.glob(os.path.join(data_root(), "light", "light_*.onnx"))):
        if path.endswith(".pb"):
            continue
        name = os.path.basename(path)[len("light_") : -len(".onnx")]
        model = onnx.load(path, load_external_data=False)
        inits = {t.name for t in model.graph.initializer}
        inputs = []
        for i in model.graph.input:
            if i.name in inits:
                continue
            shape = tuple(
                d.dim_value if d.HasField("dim_value") else 1 for d in i.type.tensor_type.shape.dim
            )
            n = int(np.prod(shape))
            inputs.append((np.arange(n).reshape(shape) / n).astype(np.float32))
        outputs = [
            _read_pb(f"{path[:-5]}_output_{k}.pb", o.type) for k, o in enumerate(model.graph.output)
        ]
        rtol, atol = tol.get(name, (1e-3, 1e-7))
        out[name] = Case(name, path, [(inputs, outputs)], rtol, atol, op="model")
    return out


def _read_pb(path: str, type_proto):
    import onnx
    from onnx import numpy_helper

    with open(path, "rb") as f:
        data = f.read()
    which = type_proto.WhichOneof("value")
    if which == "sequence_type":
        p = onnx.SequenceProto()
        p.ParseFromString(data)
        return numpy_helper.to_list(p)
    if which == "optional_type":
        p = onnx.OptionalProto()
        p.ParseFromString(data)
        return numpy_helper.to_optional(p)
    p = onnx.TensorProto()
    p.ParseFromString(data)
    return numpy_helper.to_array(p)


# ---------------------------------------------------------------------------------------------
# Running and comparing.


def run_case(case: Case, cleanup: bool = True, compiled: bool = False) -> None:
    """Convert, typecheck and evaluate `case` (with the interpreter, or compiled by
    relay_core.build); AssertionError when an output differs."""
    from converters.onnx import from_onnx
    from converters.onnx.values import run

    mod = from_onnx(case.model, cleanup=cleanup, shapes=_open_shapes(case))
    if compiled:
        import relay_core

        lib = relay_core.build(mod)
    for k, (inputs, expected) in enumerate(case.data_sets):
        inputs = [_normalize(x) for x in inputs]
        expected = [_normalize(x) for x in expected]
        outputs = lib(*inputs) if compiled else run(mod, list(inputs))
        if len(outputs) != len(expected):
            raise AssertionError(f"{len(outputs)} outputs, expected {len(expected)}")
        if _random_draw(case):
            _check_draw(case, inputs, expected, outputs, f"data set {k}")
            continue
        for i, (e, a) in enumerate(zip(expected, outputs)):
            assert_close(e, a, case.rtol, case.atol, f"data set {k} output {i}")


def _random_draw(case: Case) -> bool:
    """Cases whose outputs are random draws (Bernoulli, Dropout in training mode): onnx stored
    one draw of numpy's stream, which no other runtime reproduces, so comparing values would
    pass or fail by chance. They are checked for what every draw must satisfy instead."""
    n = case.name
    return n.startswith("test_bernoulli") or n.startswith("test_training_dropout")


def _check_draw(case: Case, inputs, expected, outputs, where: str) -> None:
    if len(outputs) != len(expected):
        raise AssertionError(f"{where}: {len(outputs)} outputs, expected {len(expected)}")
    for i, (e, a) in enumerate(zip(expected, outputs)):
        a = np.asarray(a)
        if a.shape != np.shape(e) or a.dtype != np.asarray(e).dtype:
            raise AssertionError(
                f"{where} output {i}: {a.dtype}{a.shape}, expected "
                f"{np.asarray(e).dtype}{np.shape(e)}"
            )
    if case.name.startswith("test_bernoulli"):
        p, y = np.asarray(inputs[0], np.float64), np.asarray(outputs[0], np.float64)
        if not np.isin(y, (0.0, 1.0)).all():
            raise AssertionError(f"{where}: Bernoulli draws other than 0 and 1")
        if (y[p <= 0] != 0).any() or (y[p >= 1] != 1).any():
            raise AssertionError(f"{where}: Bernoulli draws against a probability of 0 or 1")
        return
    # Dropout in training: y = x * mask / (1 - ratio), the mask (if asked for) matching y
    x = np.asarray(inputs[0], np.float64)
    ratio = float(np.asarray(inputs[1])) if len(inputs) > 1 else 0.5
    y = np.asarray(outputs[0], np.float64)
    kept = y != 0
    if len(outputs) > 1:
        mask = np.asarray(outputs[1]).astype(bool)
        if (kept & ~mask).any():
            raise AssertionError(f"{where}: Dropout output kept where its mask drops")
        kept = mask
    want = np.where(kept, x / (1.0 - ratio), 0.0)
    if not np.allclose(y, want, rtol=1e-5, atol=1e-6):
        raise AssertionError(f"{where}: Dropout output is not x * mask / (1 - ratio)")


def _normalize(x):
    """Data sets may hold TensorProtos (as onnx's runner notes); arrays otherwise."""
    if hasattr(x, "SerializeToString") and hasattr(x, "dims"):
        from onnx import numpy_helper

        return numpy_helper.to_array(x)
    return x


def _open_shapes(case: Case) -> dict | None:
    """For inputs whose type leaves the rank open (no shape), the rank the case's data has,
    with every dim unknown: a user would pass the same through `shapes=`."""
    import onnx

    model = (
        case.model
        if not isinstance(case.model, str)
        else onnx.load(case.model, load_external_data=False)
    )
    if not case.data_sets:
        return None
    inits = {t.name for t in model.graph.initializer}
    ins = [i for i in model.graph.input if i.name not in inits]
    out = {}
    for vi, value in zip(ins, case.data_sets[0][0]):
        value = _normalize(value)
        tp = vi.type
        while tp.WhichOneof("value") in ("sequence_type", "optional_type"):
            tp = getattr(tp, tp.WhichOneof("value")).elem_type
            if isinstance(value, list):
                value = value[0] if value else None
        if tp.WhichOneof("value") == "tensor_type" and not tp.tensor_type.HasField("shape"):
            if value is not None:
                out[vi.name] = (None,) * np.asarray(value).ndim
    return out or None


def assert_close(expected, actual, rtol: float, atol: float, where: str = "output") -> None:
    """Compare like onnx's backend runner: same dtype and shape, floats within rtol/atol
    (NaN equals NaN), everything else exactly."""
    if expected is None or actual is None:
        if expected is not actual:
            raise AssertionError(f"{where}: expected {expected!r}, got {actual!r}")
        return
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            raise AssertionError(
                f"{where}: expected a sequence of {len(expected)}, got "
                f"{len(actual) if isinstance(actual, list) else type(actual).__name__}"
            )
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_close(e, a, rtol, atol, f"{where}[{i}]")
        return
    expected = np.asarray(expected)
    if not isinstance(actual, np.ndarray):
        raise AssertionError(f"{where}: expected a tensor, got {type(actual).__name__}")
    if expected.dtype.kind in "OUS" or actual.dtype.kind in "OUS":
        e = np.asarray(expected, dtype=object)
        a = np.asarray(actual, dtype=object)
        if e.shape != a.shape or not all(
            _as_str(x) == _as_str(y) for x, y in zip(e.reshape(-1), a.reshape(-1))
        ):
            raise AssertionError(f"{where}: strings differ: expected {e!r}, got {a!r}")
        return
    if expected.dtype != actual.dtype:
        raise AssertionError(f"{where}: dtype {actual.dtype}, expected {expected.dtype}")
    if expected.shape != actual.shape:
        raise AssertionError(f"{where}: shape {actual.shape}, expected {expected.shape}")
    name = dt.from_numpy(expected.dtype)
    if dt.is_float(name) or expected.dtype.kind == "c":
        e = expected.astype(np.float64) if expected.dtype.kind != "c" else expected
        a = actual.astype(np.float64) if actual.dtype.kind != "c" else actual
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True, err_msg=where)
    else:
        cd = dt.to_numpy(dt.compute_dtype(name))
        np.testing.assert_array_equal(actual.astype(cd), expected.astype(cd), err_msg=where)


def _as_str(x):
    return x.decode("utf-8") if isinstance(x, bytes) else str(x)
