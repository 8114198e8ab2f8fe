"""The converter table of the PyTorch frontend, keyed by ATen overload name.

    @aten("relu.default")
    def relu(ctx, self):
        return ctx.call("nn.relu", self)

A converter takes the node's arguments as the op's schema names them (tensors as Relay
expressions, other arguments as Python values, symbolic ints as Relay int64 scalars) and returns
a Relay expression, or a Python tuple of them for ops with several outputs.
"""

from __future__ import annotations

from ..common import ConverterTable

TORCH = ConverterTable("torch")


def aten(*overloads: str):
    """Register a converter for `aten.<overload>` (e.g. "add.Tensor", "add.Scalar")."""
    return register(*("aten." + o for o in overloads))


def register(*names: str):
    """Register a converter under full target names ("aten.add.Tensor", "operator.getitem")."""
    first, *rest = names
    return TORCH.register(first, 1, *rest)


def target_name(target) -> str:
    """A stable name of an FX call target: "aten.add.Tensor", "higher_order.cond",
    "operator.getitem", "math.sqrt", "torch.sym_max"."""
    if isinstance(target, str):
        return target
    import torch

    if isinstance(target, torch._ops.OpOverload):
        return str(target)  # "aten.add.Tensor"
    if isinstance(target, torch._ops.OpOverloadPacket):
        return str(target) + ".default"
    if isinstance(target, torch._ops.HigherOrderOperator):
        return f"higher_order.{target.name()}"
    mod = getattr(target, "__module__", None) or ""
    name = getattr(target, "__name__", None) or repr(target)
    if mod in ("_operator", "operator"):
        return f"operator.{name}"
    if mod == "math":
        return f"math.{name}"
    if mod.startswith("torch"):
        return f"torch.{name}"
    return f"{mod}.{name}" if mod else name
