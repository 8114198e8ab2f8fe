"""Which core-ATen overloads have a converter, computed from torch itself."""

from __future__ import annotations

from converters.pytorch.table import TORCH


def core_aten_overloads() -> list[str]:
    """Every ATen overload tagged `core` in this torch ("aten.add.Tensor", ...), sorted."""
    import torch

    out = set()
    for name in torch._C._dispatch_get_all_op_names():
        if not name.startswith("aten::"):
            continue
        base, _, overload = name[len("aten::") :].partition(".")
        try:
            op = getattr(getattr(torch.ops.aten, base), overload or "default")
        except (AttributeError, RuntimeError):
            continue
        if torch.Tag.core in op.tags:
            out.add(str(op))
    return sorted(out)


def coverage() -> tuple[list[str], list[str]]:
    """(covered, missing) core-ATen overloads."""
    core = core_aten_overloads()
    covered = [n for n in core if n in TORCH]
    missing = [n for n in core if n not in TORCH]
    return covered, missing


if __name__ == "__main__":
    covered, missing = coverage()
    print(f"core ATen overloads covered: {len(covered)} / {len(covered) + len(missing)}")
    for n in missing:
        print("  missing:", n)
