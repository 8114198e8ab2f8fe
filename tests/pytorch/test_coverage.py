"""Coverage of core ATen, computed from torch; every converter is well-formed and exercised."""

from __future__ import annotations

import inspect

from tests.require import require

torch = require("torch")

from converters.pytorch import TORCH  # noqa: E402
from tools.torch_coverage import core_aten_overloads, coverage  # noqa: E402

from .cases import ALL_CASES  # noqa: E402

# Converters exercised by tests outside the op-case table.
TESTED_ELSEWHERE = {
    "higher_order.cond": "test_control.py",
    "higher_order.while_loop": "test_control.py",
    "higher_order.wrap_with_set_grad_enabled": "test_control.py",
    "higher_order.wrap_with_autocast": "test_control.py",
    "operator.getitem": "every multi-output case",
    "aten.sym_size.int": "test_symbolic.py",
    "aten.sym_numel.default": "test_symbolic.py",
    "aten.sym_stride.int": "test_symbolic.py",
    "aten.sym_storage_offset.default": "test_symbolic.py",
    "aten.sym_is_contiguous.default": "test_symbolic.py",
    "aten.is_contiguous.default": "test_symbolic.py (same converter)",
}


def _size_op(name: str) -> bool:
    return name.split(".")[0] in ("operator", "math") or name.startswith("torch.")


def test_core_aten_coverage(capsys):
    covered, missing = coverage()
    total = len(core_aten_overloads())
    assert len(covered) + len(missing) == total and total > 150
    with capsys.disabled():
        print(f"\ncore ATen overloads covered: {len(covered)} / {total}; missing: {missing}")
    assert not missing, f"core ATen overloads without a converter: {missing}"


def test_converter_targets_exist():
    bad = []
    for name in TORCH.names():
        if name.startswith("aten."):
            _, op, overload = name.split(".")
            try:
                getattr(getattr(torch.ops.aten, op), overload)
            except (AttributeError, RuntimeError):
                bad.append(name)
    assert not bad, f"converters registered for overloads torch does not have: {bad}"


def test_converters_accept_their_schema():
    """Each converter can be called with its overload's arguments as FX passes them
    (positional arguments in order, keyword-only ones by name)."""
    bad = []
    for name in TORCH.names():
        if not name.startswith("aten."):
            continue
        _, op, overload = name.split(".")
        schema = getattr(getattr(torch.ops.aten, op), overload)._schema
        pos = [a for a in schema.arguments if not a.kwarg_only]
        kw = {a.name: None for a in schema.arguments if a.kwarg_only}
        sig = inspect.signature(TORCH.lookup(name))
        try:
            sig.bind(None, *([None] * len(pos)), **kw)
        except TypeError as e:
            bad.append(f"{name}: {e}")
    assert not bad, "\n".join(bad)


def test_every_converter_is_exercised():
    expected = set()
    for case in ALL_CASES:
        expected.update(case.expect)
    untested = [
        n
        for n in TORCH.names()
        if n not in expected and n not in TESTED_ELSEWHERE and not _size_op(n)
    ]
    assert not untested, f"converters without a test case: {untested}"
