"""FoldScaleAxis: fold per-channel constant scales into convolution / dense weights."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import dtype as dt
from ..ir.expr import Call, Constant, Expr, Op, call
from ..ir.module import IRModule
from ..ops.registry import attrs_to_dict
from ._util import Rewriter, ensure_typed, map_functions, op_name, type_of, use_counts
from .manager import Pass, PassContext, register_pass
from .simplify_expr import _channel_scale, _is_conv


@register_pass
@dataclass
class FoldScaleAxis(Pass):
    """Fold multiplications by per-channel constants into the weights of a neighbouring
    convolution or dense layer (as batch norm leaves them after SimplifyInference).

    Backward: `conv(x, W) * s` -> `conv(x, W * s)` with s along the output channels, also
    through a bias (`(conv + b) * s = conv(x, W*s) + b*s`), `nn.bias_add`, `nn.relu` (when
    every s > 0) and a second constant scale. Forward: `conv(x * s, W)` -> `conv(x, W * s)`
    with s along the input channels, also through `nn.relu` (s > 0); the same for `nn.dense`.
    Only nodes used once are changed, so no other user sees a different value.

    >>> mod = FoldScaleAxis()(mod)
    """

    opt_level = 3

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        mod = ensure_typed(mod)
        return map_functions(mod, lambda gv, f: _fold(f))


def _ndim(e: Expr) -> int | None:
    t = type_of(e)
    return getattr(t, "ndim", None)


def _float(e: Expr) -> bool:
    t = type_of(e)
    return getattr(t, "dtype", "") and dt.is_float(t.dtype)


def _conv_axes(e: Call) -> tuple[int, int, int] | None:
    """(channel axis of data / output, O axis, I axis of the kernel) of a forward conv."""
    a = e.attrs
    if a.out_layout not in ("", a.data_layout) or a.out_dtype not in ("", type_of(e).dtype):
        return None
    if "C" not in a.data_layout or "O" not in a.kernel_layout or "I" not in a.kernel_layout:
        return None
    return a.data_layout.index("C"), a.kernel_layout.index("O"), a.kernel_layout.index("I")


def _scale_weight(w: np.ndarray, vec: np.ndarray, axis: int) -> Constant:
    shape = [1] * w.ndim
    shape[axis] = -1
    if vec.size == 1:
        vec = np.broadcast_to(vec, (w.shape[axis],))
    return Constant((w * vec.reshape(shape).astype(w.dtype)).astype(w.dtype))


def _along(vec: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    shape = [1] * ndim
    shape[axis] = -1
    return vec.reshape(shape)


def _fold(func: Expr) -> Expr:
    rc = use_counts(func)

    def single(e: Expr) -> bool:
        return rc[e] == 1

    def backward(orig: Expr, new: Expr, vec: np.ndarray, axis: int) -> Expr | None:
        """An expression equal to `new * vec` (vec along `axis`), folded into a layer (found
        by `_out_axis` within a few steps, so the recursion is shallow)."""
        name = op_name(orig)
        if name is None or op_name(new) != name or not single(orig):
            return None
        d = orig.op.opdef
        if _is_conv(d) and type(new.args[1]) is Constant:
            axes = _conv_axes(orig)
            if axes is None or axes[0] != axis:
                return None
            w = _scale_weight(new.args[1].data, vec, axes[1])
            return call(name, new.args[0], w, **attrs_to_dict(new.attrs))
        if name == "nn.dense" and type(new.args[1]) is Constant and axis == _ndim(orig) - 1:
            w = _scale_weight(new.args[1].data, vec, 0)
            return call(name, new.args[0], w, **attrs_to_dict(new.attrs))
        if name == "nn.bias_add" and type(new.args[1]) is Constant:
            ax = new.attrs.axis % _ndim(orig)
            inner = backward(orig.args[0], new.args[0], vec, axis) if ax == axis else None
            if inner is None:
                return None
            b = new.args[1].data
            return call(name, inner, Constant((b * vec.astype(b.dtype)).astype(b.dtype)), axis=ax)
        if name == "add":
            for i in (0, 1):
                if type(new.args[1 - i]) is Constant:
                    inner = backward(orig.args[i], new.args[i], vec, axis)
                    if inner is None:
                        continue
                    b = new.args[1 - i].data
                    nd = _ndim(orig)
                    if b.ndim > nd:
                        return None
                    nb = (b * _along(vec, nd, axis).astype(b.dtype)).astype(b.dtype)
                    return call("add", inner, Constant(nb))
            return None
        if name == "nn.relu" and np.all(vec > 0):
            inner = backward(orig.args[0], new.args[0], vec, axis)
            return None if inner is None else call(name, inner, **attrs_to_dict(new.attrs))
        return None

    def forward(orig: Expr, new: Expr, axis: int, depth: int = 0):
        """(x, vec) when `new` is `x * vec` (vec along `axis`), possibly under a few relus."""
        name = op_name(orig)
        if name is None or op_name(new) != name or not single(orig) or depth > 8:
            return None
        if name == "multiply":
            for i in (0, 1):
                s = new.args[1 - i]
                if type(s) is Constant and _ndim(orig.args[i]) == _ndim(orig):
                    vec = _channel_scale(s.data, _ndim(orig), axis)
                    if vec is not None:
                        return new.args[i], vec
            return None
        if name == "nn.relu":
            inner = forward(orig.args[0], new.args[0], axis, depth + 1)
            if inner is None or not np.all(inner[1] > 0):
                return None
            return call(name, inner[0], **attrs_to_dict(new.attrs)), inner[1]
        return None

    class _Fold(Rewriter):
        def rewrite(self, orig, new):
            if type(orig) is not Call or type(orig.op) is not Op or not _float(orig):
                return new
            name = orig.op.name
            if name == "multiply":
                for i in (0, 1):
                    s = new.args[1 - i]
                    if type(s) is not Constant or _ndim(orig.args[i]) != _ndim(orig):
                        continue
                    axis = _out_axis(orig.args[i])
                    if axis is None:
                        continue
                    vec = _channel_scale(s.data, _ndim(orig), axis)
                    if vec is None:
                        continue
                    out = backward(orig.args[i], new.args[i], vec, axis)
                    if out is not None:
                        return out
                return new
            d = orig.op.opdef
            if (_is_conv(d) or name == "nn.dense") and type(new.args[1]) is Constant:
                if _is_conv(d):
                    axes = _conv_axes(orig)
                    if axes is None:
                        return new
                    axis = axes[0]
                else:
                    axis = _ndim(orig.args[0]) - 1
                found = forward(orig.args[0], new.args[0], axis)
                if found is None:
                    return new
                x, vec = found
                w = new.args[1].data
                if _is_conv(d):
                    sw = _input_scale(w, vec, axes, orig.attrs.groups)
                    if sw is None:
                        return new
                    return call(name, x, Constant(sw), **attrs_to_dict(new.attrs))
                return call(name, x, _scale_weight(w, vec, 1), **attrs_to_dict(new.attrs))
            return new

    return _Fold().mutate(func)


def _out_axis(e: Expr) -> int | None:
    """The channel axis of a layer's output (following bias / add / relu back to it)."""
    for _ in range(8):
        name = op_name(e)
        if name is None:
            return None
        d = e.op.opdef
        if _is_conv(d):
            axes = _conv_axes(e)
            return None if axes is None else axes[0]
        if name == "nn.dense":
            return _ndim(e) - 1
        if name in ("nn.bias_add", "nn.relu"):
            e = e.args[0]
            continue
        if name == "add":
            e = e.args[0] if type(e.args[1]) is Constant else e.args[1]
            continue
        return None
    return None


def _input_scale(w: np.ndarray, vec: np.ndarray, axes, groups: int) -> np.ndarray | None:
    """Kernel `w` with input channel c scaled by vec[c] (grouped convolutions included)."""
    _, o_ax, i_ax = axes
    o, i = w.shape[o_ax], w.shape[i_ax]
    c = i * groups
    if vec.size == 1:
        vec = np.broadcast_to(vec, (c,))
    if vec.size != c or o % groups:
        return None
    per_o = o // groups
    grid = vec.reshape(groups, i)[np.arange(o) // per_o]  # (O, I): the scale of each tap
    shape = [1] * w.ndim
    shape[o_ax], shape[i_ax] = o, i
    if o_ax > i_ax:
        grid = grid.T
    return (w * grid.reshape(shape).astype(w.dtype)).astype(w.dtype)
