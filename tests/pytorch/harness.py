"""Parity harness: export a module, convert it, run it (interpreter and, when the backend is
there, compiled) and compare with the module's own output."""

from __future__ import annotations

import copy
import os
from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np

from tests.require import require

torch = require("torch")

import relay_core  # noqa: E402
from converters.pytorch import from_pytorch  # noqa: E402
from converters.pytorch.importer import iter_targets  # noqa: E402
from converters.pytorch.outputs import flatten_outputs  # noqa: E402
from tests.expected import ExpectedFailures  # noqa: E402


@dataclass
class Case:
    """One op-level parity case: `make()` returns (module, inputs)."""

    name: str
    make: object
    expect: tuple[str, ...] = ()  # targets that must appear in the raw or decomposed graph
    rtol: float = 1e-5
    atol: float = 1e-5
    raw: bool = True  # convert the program as exported
    decomposed: bool = True  # and after run_decompositions() (core ATen)
    compare: str = "values"  # "values", "shape" (random ops), "sorted" (order-free)
    dynamic_shapes: object = None
    marks: tuple = field(default_factory=tuple)


class Fn(torch.nn.Module):
    """Wrap a function of tensors as a module."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def fn_case(name, fn, *inputs, **kw) -> Case:
    return Case(name, lambda: (Fn(fn), inputs), **kw)


def module_case(name, factory, *inputs, **kw) -> Case:
    return Case(name, lambda: (factory(), inputs), **kw)


flatten = flatten_outputs


def to_numpy(x):
    if isinstance(x, torch.Tensor):
        x = x.detach()
        if x.dtype == torch.bfloat16:
            return x.float().numpy()
        return x.numpy()
    return np.asarray(x)


# Compiled cases that fail, with the reason (tests/expected.py): the list only shrinks.
COMPILED_EXPECTED = ExpectedFailures(
    os.path.join(os.path.dirname(__file__), "compiled_expected_failures.txt")
)


def run_relay(mod, inputs, compiled: bool = False):
    args = [to_numpy(x) for x in inputs if isinstance(x, torch.Tensor)]
    if compiled:
        return relay_core.build(mod)(*args)
    return relay_core.evaluate(mod, *args)


def assert_close(got, want, rtol, atol, compare="values", where=""):
    g, w = flatten(got), flatten(want)
    assert len(g) == len(w), f"{where}: {len(g)} outputs, torch has {len(w)}"
    for i, (a, b) in enumerate(zip(g, w)):
        b = to_numpy(b)
        a = np.asarray(a)
        if b.dtype == np.float32 and a.dtype != b.dtype and a.dtype.name == "bfloat16":
            a = a.astype(np.float32)
        assert a.shape == b.shape, f"{where} output {i}: shape {a.shape} vs torch {b.shape}"
        if compare == "shape":
            assert a.dtype == b.dtype, f"{where} output {i}: dtype {a.dtype} vs {b.dtype}"
            continue
        if compare == "sorted":
            a, b = np.sort(a, axis=None), np.sort(b, axis=None)
        if b.dtype == np.bool_ or np.issubdtype(b.dtype, np.integer):
            assert a.dtype == b.dtype, f"{where} output {i}: dtype {a.dtype} vs {b.dtype}"
            np.testing.assert_array_equal(a, b, err_msg=f"{where} output {i}")
        else:
            assert a.dtype == b.dtype, f"{where} output {i}: dtype {a.dtype} vs {b.dtype}"
            wide = np.complex128 if np.iscomplexobj(b) else np.float64
            np.testing.assert_allclose(
                a.astype(wide),
                b.astype(wide),
                rtol=rtol,
                atol=atol,
                err_msg=f"{where} output {i}",
            )


def graph_targets(ep) -> set[str]:
    return {name for name, _ in iter_targets(ep.graph_module)}


def check_case(case: Case, modes: tuple[str, ...] = ("interpreted", "compiled")) -> set[str]:
    """Run one case through every requested form (as exported / core ATen) and mode
    (interpreter / compiled), exporting and converting once; returns the targets seen."""
    module, inputs = case.make()
    module.eval()
    torch.manual_seed(0)
    with torch.no_grad():  # on copies: a module may mutate its inputs and buffers
        want = copy.deepcopy(module)(
            *[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        )
        ep = torch.export.export(module, tuple(inputs), dynamic_shapes=case.dynamic_shapes)
    seen: set[str] = set()
    forms = []
    if case.raw:
        forms.append(("raw", ep))
    if case.decomposed:
        forms.append(("core", ep.run_decompositions()))
    mods = []
    for label, prog in forms:
        seen |= graph_targets(prog)
        mods.append((label, from_pytorch(prog)))
    # interpreted first: a listed compiled failure (an xfail) then ends the test last
    for mode in modes:
        for label, mod in mods:
            ctx = COMPILED_EXPECTED.check(case.name) if mode == "compiled" else nullcontext()
            with ctx:
                got = run_relay(mod, inputs, compiled=mode == "compiled")
                where = f"{case.name} [{label}, {mode}]"
                assert_close(got, want, case.rtol, case.atol, case.compare, where)
    missing = [t for t in case.expect if t not in seen]
    assert not missing, f"{case.name}: the graphs never used {missing}; seen {sorted(seen)}"
    return seen


def rel_error(got, want) -> float:
    """max |got - want| / max |want| over all outputs."""
    worst = 0.0
    for a, b in zip(flatten(got), flatten(want)):
        b = to_numpy(b).astype(np.float64)
        a = np.asarray(a).astype(np.float64)
        scale = max(np.max(np.abs(b)) if b.size else 0.0, 1e-30)
        worst = max(worst, float(np.max(np.abs(a - b)) / scale) if b.size else 0.0)
    return worst
