"""FoldMatmulLayout: a matrix product takes the scales of its operands after it, and reads a
transposed operand through its transpose flag instead of a materialised transpose.

    matmul(a * s, b * t) -> matmul(a, b) * (s * t)        (s, t one value each)

Attention's key operand is K^T: exporters write `transpose(reshape(k), ...)` (ViT: (L, N*H, D)
-> (N*H, D, L); GPT-2: (N*H, L, D) -> (N*H, D, L)) and often a scale after it. As a fused group
of its own that transpose is a strided copy that reads each element from another cache line
(ViT-S/16 batch 8, 1 thread: the scaled q and k copies took 1.1 ms per layer each, v's copy of
the same bytes by whole rows 0.33 ms). The matrix product packs its B operand anyway, and
reads it by columns nearly as fast as by rows (a scores product 197 x 197 x 64 1.02x, 128 x 128
x 64 1.05x): so the swap of the last two axes is taken out of the chain below B and given to the
product as `transpose_b`. What stays below is the cheap layout change (whole rows of D floats move).
The scales go first (an epilogue of the product): q and k then are plain copies of rows, as v.

    matmul(q, reshape(multiply(transpose(y, [1, 2, 0]), s), (8, 6, 64, 197)))
 -> matmul(q, reshape(multiply(transpose(y, [1, 0, 2]), s), (8, 6, 197, 64)), transpose_b=True)

The swap moves through single-use ops only (a shared chain would be computed twice): reshapes
that keep the last two axes, elementwise ops of one tensor and scalar constants, and stops at
a transpose, which absorbs it (or disappears when it was the swap itself).

>>> mod = FoldMatmulLayout()(mod)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..ir import dtype as dt
from ..ir.expr import Call, Constant, Expr, call
from ..ir.module import IRModule
from ..ir.types import TensorType
from ..ir.visitor import with_children
from ..ops.registry import attrs_to_dict
from ._util import (
    Rewriter,
    ensure_typed,
    is_layout_free,
    map_functions,
    op_name,
    type_of,
    use_counts,
)
from .manager import Pass, PassContext, register_pass

_PRODUCTS = ("nn.matmul", "nn.batch_matmul")


def _shape(e: Expr) -> tuple | None:
    t = type_of(e)
    return tuple(t.shape) if isinstance(t, TensorType) and t.is_static else None


def _unswap(e: Expr, uses: Counter, leaf) -> Expr | None:
    """e2 with e == swap_last_two_axes(e2), moving the swap down to a transpose through the
    chain below `e`; None when it does not reach one."""
    steps = []  # the chain from e down to the transpose, each with the rebuild of its level
    while True:
        shape = _shape(e)
        if type(e) is not Call or shape is None or len(shape) < 2 or uses[e] != 1:
            return None
        name = op_name(e)
        if name == "transpose":
            n = len(shape)
            p = list(range(n)[::-1] if not e.attrs.axes else [a % n for a in e.attrs.axes])
            if p[-1] == n - 1 or p[-2] != n - 1:
                return None  # rows stay whole already, or would not after the swap
            p[-1], p[-2] = p[-2], p[-1]
            x = leaf(e.args[0])
            out = x if p == list(range(n)) else call("transpose", x, axes=p)
            break
        if name == "reshape":
            src = _shape(e.args[0])
            if src is None or len(src) < 2 or src[-2:] != shape[-2:]:
                return None
            swapped = shape[:-2] + (shape[-1], shape[-2])
            steps.append(lambda x, s=swapped: call("reshape", x, newshape=list(s)))
            e = e.args[0]
            continue
        if is_layout_free(e):
            tensors = [k for k, a in enumerate(e.args) if not _scalar_const(a)]
            if len(tensors) != 1 or _shape(e.args[tensors[0]]) != shape:
                return None
            k = tensors[0]
            steps.append(lambda x, c=e, k=k: _with_arg(c, k, x))
            e = e.args[k]
            continue
        return None
    for rebuild in reversed(steps):
        out = rebuild(out)
    return out


def _peel_scale(e: Expr, uses: Counter, leaf) -> tuple[Expr, np.ndarray] | None:
    """(e2, s) with e == e2 * s: a multiply by one constant value found below `e` through
    single-use reshapes and transposes, taken out of the chain."""
    steps = []
    while True:
        if type(e) is not Call or uses[e] != 1 or _shape(e) is None:
            return None
        name = op_name(e)
        if name == "multiply":
            x, c = e.args
            if _scalar_const(x):
                x, c = c, x
            if not _scalar_const(c) or _shape(x) != _shape(e) or _dtype(x) != _dtype(e):
                return None
            out, scale = leaf(x), np.asarray(c.data).reshape(())
            break
        if name not in ("reshape", "transpose"):
            return None
        steps.append(lambda x, c=e: _with_arg(c, 0, x))
        e = e.args[0]
    for rebuild in reversed(steps):
        out = rebuild(out)
    return out, scale


def _dtype(e: Expr) -> str | None:
    t = type_of(e)
    return t.dtype if isinstance(t, TensorType) else None


def _scalar_const(e: Expr) -> bool:
    # one value (of any rank: the tensor operand's shape is the result's, checked apart)
    return type(e) is Constant and e.data.size == 1


def _with_arg(c: Call, k: int, x: Expr) -> Call:
    args = list(c.args)
    args[k] = x
    return with_children(c, (c.op, *args))


class _Products(Rewriter):
    """Each float matrix product through `fold(product, uses, leaf)`: the decision is taken on
    the original operands (their use counts and types), `leaf` gives the rewritten self of a
    node below them."""

    def __init__(self, func: Expr, fold):
        super().__init__()
        self.uses, self.fold = use_counts(func), fold

    def rewrite_call(self, orig, new):
        if op_name(orig) not in _PRODUCTS or len(orig.args) != 2:
            return new
        if not dt.is_float(_dtype(orig) or "") or any(_dtype(a) != _dtype(orig) for a in orig.args):
            return new
        # decided on the original chain; its inputs replaced by their rewritten selves
        out = self.fold(orig, self.uses, lambda e: self.memo.get(e, e))
        return new if out is None else out


def _fold_scales(mm: Call, uses: Counter, leaf) -> Expr | None:
    # matmul(a * s, b * t) -> matmul(a, b) * (s * t); not in 16-bit floats, where the product
    # rounds differently from the scaled operands by more than the ONNX tests allow
    if _dtype(mm) not in ("float32", "float64"):
        return None
    args, scale = [leaf(a) for a in mm.args], None
    for k in (0, 1):
        peeled = _peel_scale(mm.args[k], uses, leaf)
        if peeled is not None:
            args[k] = peeled[0]
            scale = peeled[1] if scale is None else scale * peeled[1]
    if scale is None:
        return None
    s = Constant(np.asarray(scale, dt.to_numpy(_dtype(mm))))
    return call("multiply", call(op_name(mm), *args, **attrs_to_dict(mm.attrs)), s)


def _fold_swap(mm: Call, uses: Counter, leaf) -> Expr | None:
    # matmul(a, swap(b2)) -> matmul(a, b2, transpose_b=True)
    b = mm.args[1]
    if type(b) is Constant or len(_shape(b) or ()) < 2:
        return None
    b2 = _unswap(b, uses, leaf)
    if b2 is None:
        return None
    attrs = attrs_to_dict(mm.attrs)
    attrs["transpose_b"] = not attrs.get("transpose_b", op_name(mm) == "nn.batch_matmul")
    return call(op_name(mm), leaf(mm.args[0]), b2, **attrs)


@register_pass
@dataclass
class FoldMatmulLayout(Pass):
    """Move one-value scales of a matrix product's operands after it, and give it the swap of
    its B operand's last two axes as `transpose_b` (the module docstring), so that q and k^T in
    attention are not scaled, strided copies.

    >>> mod = FoldMatmulLayout()(mod)
    """

    opt_level = 2

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        # the scales first (types again), then the swaps, so each walk reads typed chains
        for fold in (_fold_scales, _fold_swap):
            mod = ensure_typed(mod)
            mod = map_functions(mod, lambda gv, f, fold=fold: _Products(f, fold).mutate(f))
        return mod
