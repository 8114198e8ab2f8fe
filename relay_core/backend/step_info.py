"""What a fused group computes, for build reports and profiles: the ops, the FLOP count of its
convolutions and matrix products, and a short signature naming its first product's shapes.
One walk over the group gives all three (`describe`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.expr import Call, Function, Op
from ..ir.visitor import post_order

CONVS = ("nn.conv1d", "nn.conv2d", "nn.conv3d")
PRODUCTS = ("nn.dense", "nn.matmul", "nn.batch_matmul")


@dataclass(frozen=True)
class GroupInfo:
    ops: list  # the op names, sorted
    # multiply-adds x 2 of the convolutions and matrix products (0: none or a dynamic shape;
    # elementwise work is not counted)
    flops: int
    # the same per element of a run-time batch: only products whose one dynamic dimension is
    # axis 0 of their data and output (shape-generic builds; the profile multiplies by it)
    flops_per_batch: int
    # "conv2d 8x48x112x112 * 48x8x3x3 s2x2 g6" ("?" for a run-time dimension), or the result's
    # shape ("-> 8x48x56x56")
    signature: str


def _numel(shape, per_batch: bool = False) -> int:
    n = 1
    for i, d in enumerate(shape):
        n *= 1 if per_batch and i == 0 and not isinstance(d, int) else int(d)
    return n


def _dims(t) -> str:
    shape = getattr(t, "shape", None)
    if shape is None:
        return "?"
    return "x".join(str(d) if isinstance(d, int) else "?" for d in shape) or "scalar"


def _flops(n, per_batch: bool) -> int:
    """Multiply-adds x 2 of one convolution or matrix product (0: not countable)."""
    name, a = n.op.name, n.attrs
    try:
        out = n.checked_type.shape
        if name in CONVS:
            w = n.args[1].checked_type.shape
            layout = getattr(a, "kernel_layout", "") or "OI" + "DHW"[-(len(w) - 2) :]
            o = int(w[layout.index("O")]) if "O" in layout else int(w[0])
            return 2 * _numel(out, per_batch) * _numel(w) // max(o, 1)
        x = n.args[0].checked_type.shape
        ta = bool(getattr(a, "transpose_a", False))
        k = int(x[-2] if ta and len(x) >= 2 else x[-1])
        return 2 * _numel(out, per_batch) * k
    except (AttributeError, TypeError, ValueError, IndexError):
        return 0  # dynamic or unusual shapes: no count


def _signature(n) -> str | None:
    name, a = n.op.name, n.attrs
    try:
        x, w = (_dims(arg.checked_type) for arg in n.args[:2])
    except (AttributeError, ValueError):
        return None
    sig = f"{name.removeprefix('nn.')} {x} * {w}"
    if name in CONVS:
        s = "x".join(str(int(v)) for v in a.strides)
        sig += f" s{s}" + (f" g{int(a.groups)}" if int(a.groups) > 1 else "")
    return sig


def describe(fn: Function) -> GroupInfo:
    """The ops, FLOP counts and signature of a fused group (or any function)."""
    ops, flops, per_batch, sig = set(), 0, 0, None
    for n in post_order(fn.body):
        if type(n) is not Call or not isinstance(n.op, Op):
            continue
        ops.add(n.op.name)
        if n.op.name in CONVS or n.op.name in PRODUCTS:
            flops += _flops(n, False)
            per_batch += _flops(n, True)
            if sig is None:
                sig = _signature(n)
    if sig is None:
        try:
            sig = "-> " + _dims(fn.body.checked_type)
        except (AttributeError, ValueError):
            sig = ""
    return GroupInfo(sorted(ops), flops, per_batch, sig)
