"""ChannelsFirst: 2-D convolutions and pools on NHWC data run on NCHW instead.

TensorFlow and Keras models keep their channel-last layout through the frontend; the backend's
convolution kernels are faster channel-first (the NCHW paths: strips, im2col GEMM, Winograd,
depthwise rows; measured 15-20% on Keras MobileNetV2 and ResNet-50). Each NHWC `nn.conv2d`
(constant weights) and 2-D pool becomes `transpose(op_nchw(transpose(x)))`, and the transposes
this pass made move forward through what does not care about the layout: elementwise ops
(registry pattern, scalar attributes: _util.is_layout_free), broadcasts with constants or
with another such transpose, `nn.bias_add`, `nn.pad`, `concatenate`, reductions (when the
kept axes stay in order). Where two meet (a convolution fed by a transposed value) they
cancel. What is left transposes once at the edges: after the input, and before a consumer
that needs NHWC (a reshape, the output).

Only transposes made here move, so models without NHWC convolutions or pools are unchanged.

>>> mod = ChannelsFirst()(mod)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.expr import Call, Constant, Expr, Op, call
from ..ir.module import IRModule
from ..ir.types import TensorType
from ..ir.visitor import Rewriter
from ..ops.registry import attrs_to_dict
from ._util import ensure_typed, is_layout_free, map_functions, type_of
from .manager import Pass, PassContext, register_pass

TO_NHWC = (0, 2, 3, 1)  # transpose(nchw, TO_NHWC) is NHWC
TO_NCHW = (0, 3, 1, 2)

_REDUCE = frozenset("mean sum max min prod".split())
_POOLS = frozenset(
    """nn.max_pool2d nn.avg_pool2d nn.lp_pool2d nn.global_max_pool2d nn.global_avg_pool2d
    nn.global_lp_pool2d""".split()
)


@register_pass
@dataclass
class ChannelsFirst(Pass):
    """NHWC 2-D convolutions (constant weights) and pools computed in NCHW, the transposes
    moved forward until they cancel (see the module docstring).

    >>> mod = ChannelsFirst()(mod)
    """

    opt_level = 3

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        mod = ensure_typed(mod)
        return map_functions(mod, lambda gv, f: _Convert().mutate(f) if _has_nhwc(f) else f)


def _has_nhwc(f: Expr) -> bool:
    from ..ir.visitor import post_order

    return any(_nhwc_op(n) for n in post_order(f))


def _nhwc_op(e: Expr) -> bool:
    if type(e) is not Call or type(e.op) is not Op:
        return False
    t = type_of(e.args[0]) if e.args else None
    if not isinstance(t, TensorType) or t.ndim != 4:
        return False
    a = e.attrs
    if e.op.name == "nn.conv2d":
        return (
            a.data_layout == "NHWC"
            and a.out_layout in ("", "NHWC")
            and len(e.args) == 2
            and type(e.args[1]) is Constant
            and sorted(a.kernel_layout) == sorted("OIHW")
        )
    if e.op.name in _POOLS:
        return a.layout == "NHWC" and getattr(a, "out_layout", "") in ("", "NHWC")
    return False


class _Convert(Rewriter):
    def __init__(self):
        super().__init__()
        self.made: dict[int, Expr] = {}  # id -> transpose(y, TO_NHWC) made here (kept alive)

    def nhwc(self, y: Expr) -> Expr:
        t = call("transpose", y, axes=TO_NHWC)
        self.made[id(t)] = t
        return t

    def nchw(self, x: Expr) -> Expr:
        if id(x) in self.made:
            return x.args[0]
        return call("transpose", x, axes=TO_NCHW)

    def rewrite(self, orig, new):
        if type(orig) is not Call or type(orig.op) is not Op:
            return new
        name = orig.op.name
        if _nhwc_op(orig):
            return self._layout_op(name, orig, new)
        if name == "concatenate":
            return self._concat(orig, new)
        made = [id(a) in self.made for a in new.args]
        if not any(made):
            return new
        ot = type_of(orig)
        if is_layout_free(orig) and len(new.args) == 1:
            return self.nhwc(Call(new.op, (new.args[0].args[0],), new.attrs))
        if is_layout_free(orig) and len(new.args) == 2:
            return self._binary(orig, new, made, ot)
        if name == "nn.bias_add" and made[0]:
            axis = orig.attrs.axis % 4
            y = new.args[0].args[0]
            return self.nhwc(call(name, y, new.args[1], axis=TO_NHWC[axis]))
        if name == "nn.pad" and made[0] and all(not m for m in made[1:]):
            a = attrs_to_dict(new.attrs)
            pw = tuple(tuple(p) for p in a["pad_width"])
            if len(pw) != 4:
                return new
            a["pad_width"] = tuple(pw[TO_NCHW[j]] for j in range(4))
            y = new.args[0].args[0]
            return self.nhwc(call(name, y, *new.args[1:], **a))
        if name in _REDUCE and made[0] and len(new.args) == 1:
            return self._reduce(orig, new)
        return new

    def _layout_op(self, name: str, orig: Call, new: Call) -> Expr:
        a = attrs_to_dict(new.attrs)
        x = self.nchw(new.args[0])
        if name == "nn.conv2d":
            kl = a["kernel_layout"]
            w = new.args[1].data.transpose([kl.index(c) for c in "OIHW"])
            a.update(data_layout="NCHW", kernel_layout="OIHW", out_layout="")
            return self.nhwc(call(name, x, Constant(np.ascontiguousarray(w)), **a))
        a["layout"] = "NCHW"
        if "out_layout" in a:
            a["out_layout"] = ""
        return self.nhwc(call(name, x, **a))

    def _binary(self, orig: Call, new: Call, made: list, ot) -> Expr:
        if not isinstance(ot, TensorType) or ot.ndim != 4:
            return new
        a, b = new.args
        if made[0] and made[1]:
            return self.nhwc(Call(new.op, (a.args[0], b.args[0]), new.attrs))
        k = 0 if made[0] else 1
        other = new.args[1 - k]
        xt = type_of(orig.args[k])
        # the transposed side must already have the result's shape (a constant does not
        # broadcast it up), and the other side must be a constant of rank <= 4
        if type(other) is not Constant or other.data.ndim > 4 or xt is None:
            return new
        if tuple(xt.shape) != tuple(ot.shape):
            return new
        c = other.data.reshape((1,) * (4 - other.data.ndim) + other.data.shape)
        c = Constant(np.ascontiguousarray(c.transpose(TO_NCHW)))
        y = new.args[k].args[0]
        args = (y, c) if k == 0 else (c, y)
        return self.nhwc(Call(new.op, args, new.attrs))

    def _concat(self, orig: Call, new: Call) -> Expr:
        # concatenate(*parts, axis): every part transposed here
        if not new.args or not all(id(a) in self.made for a in new.args):
            return new
        axis = orig.attrs.axis % 4
        ys = [a.args[0] for a in new.args]
        return self.nhwc(call("concatenate", *ys, axis=TO_NHWC[axis]))

    def _reduce(self, orig: Call, new: Call) -> Expr:
        at = orig.attrs
        if at.exclude or at.axis is None:
            return new
        axes = sorted({int(i) % 4 for i in at.axis})
        y = new.args[0].args[0]
        y_axes = sorted(TO_NHWC[i] for i in axes)
        a = attrs_to_dict(new.attrs)
        a["axis"] = tuple(y_axes)
        if at.keepdims:
            return self.nhwc(call(orig.op.name, y, **a))
        kept = [TO_NHWC[i] for i in range(4) if i not in axes]
        if kept != sorted(kept):  # the result's axes would come out in another order
            return new
        return call(orig.op.name, y, **a)
