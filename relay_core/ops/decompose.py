"""Decompositions: ops expressed with simpler ops (named by `OpDef.decompose`, as
`decompose=Rule("relay_core.ops.decompose:_batch_norm")` in the op's declaration).

`decompose(call, arg_types) -> Expr | None` returns an expression equal to the call (None when
it does not apply, e.g. a shape it needs is unknown), built from
elementwise ops, reductions and reshapes, so that the backend needs nothing special for them.
SimplifyInference applies these; the Gradient pass differentiates an op that has no gradient
rule through its decomposition.

Normalisations are written so that FoldConstant can fold their per-channel parameters: batch
norm becomes `x * scale + shift` with `scale = gamma / sqrt(var + eps)`, which SimplifyExpr /
FoldScaleAxis then fold into a preceding convolution.
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir.expr import Call, Expr, Tuple, call, const
from ..ir.types import TensorType, Type

DecomposeFn = Callable[[Call, list[Type]], Expr]


def _c(name: str, *args, **attrs) -> Expr:
    return call(name, *args, **attrs)


def _t(types, i) -> TensorType:
    return types[i]


def _eps(value: float, dtype: str) -> Expr:
    return const(value, dtype)


def _along(p: Expr, t: TensorType, ndim: int, axis: int) -> Expr:
    """A per-channel parameter (shape (C,), or broadcastable to it) shaped to broadcast along
    `axis` of a rank-`ndim` tensor: (C,) -> (C, 1, ..., 1)."""
    trailing = ndim - axis - 1
    if t.ndim == 0 or trailing == 0:
        return p
    return _c("expand_dims", p, axis=t.ndim, num_newaxis=trailing)


def _batch_norm(c, types):
    x, gamma, beta, mean, var = c.args
    tx = _t(types, 0)
    a = c.attrs
    axis = a.axis % tx.ndim
    scale = _c("rsqrt", _c("add", var, _eps(a.epsilon, tx.dtype)))
    if a.scale:
        scale = _c("multiply", gamma, scale)
    shift = _c("negative", _c("multiply", mean, scale))
    if a.center:
        shift = _c("add", beta, shift)
    vt = max(types[1:5], key=lambda t: t.ndim)
    scale = _along(scale, vt, tx.ndim, axis)
    shift = _along(shift, vt, tx.ndim, axis)
    return Tuple((_c("add", _c("multiply", x, scale), shift), mean, var))


def _normalize(x: Expr, axes: tuple[int, ...], eps: float, dtype: str) -> Expr:
    """(x - mean) / sqrt(var + eps) over `axes` (biased variance)."""
    mean = _c("mean", x, axis=axes, keepdims=True)
    d = _c("subtract", x, mean)
    var = _c("mean", _c("multiply", d, d), axis=axes, keepdims=True)
    return _c("multiply", d, _c("rsqrt", _c("add", var, _eps(eps, dtype))))


def _affine(y: Expr, gamma: Expr | None, beta: Expr | None, a) -> Expr:
    if gamma is not None and getattr(a, "scale", True):
        y = _c("multiply", y, gamma)
    if beta is not None and getattr(a, "center", True):
        y = _c("add", y, beta)
    return y


def _layer_norm(c, types):
    x, gamma, beta = c.args
    tx = _t(types, 0)
    axes = tuple(range(c.attrs.axis % tx.ndim, tx.ndim))
    return _affine(_normalize(x, axes, c.attrs.epsilon, tx.dtype), gamma, beta, c.attrs)


def _rms_norm(c, types):
    x, gamma = c.args
    tx = _t(types, 0)
    axes = tuple(range(c.attrs.axis % tx.ndim, tx.ndim))
    ms = _c("mean", _c("multiply", x, x), axis=axes, keepdims=True)
    y = _c("multiply", x, _c("rsqrt", _c("add", ms, _eps(c.attrs.epsilon, tx.dtype))))
    return _c("multiply", y, gamma)


def _instance_norm(c, types):
    x, gamma, beta = c.args
    tx = _t(types, 0)
    axis = c.attrs.axis % tx.ndim
    axes = tuple(i for i in range(tx.ndim) if i not in (0, axis))
    y = _normalize(x, axes, c.attrs.epsilon, tx.dtype) if axes else _zero_var(x, c.attrs, tx)
    return _channel_affine(y, gamma, beta, c.attrs, types, axis, tx.ndim)


def _zero_var(x, a, tx):
    # A single element per statistic: x - mean is 0.
    return _c("zeros_like", x)


def _channel_affine(y, gamma, beta, a, types, axis, ndim):
    if a.scale:
        y = _c("multiply", y, _along(gamma, _t(types, 1), ndim, axis))
    if a.center:
        y = _c("add", y, _along(beta, _t(types, 2), ndim, axis))
    return y


def _group_norm(c, types):
    x, gamma, beta = c.args
    tx = _t(types, 0)
    a = c.attrs
    axis = a.axis % tx.ndim
    perm = None
    if axis != 1:  # move the channel axis next to the batch axis
        perm = [0, axis] + [i for i in range(1, tx.ndim) if i != axis]
        x = _c("transpose", x, axes=tuple(perm))
    g = a.num_groups
    xg = _c("reshape", x, newshape=(0, g, -1))
    y = _c("reshape_like", _normalize(xg, (2,), a.epsilon, tx.dtype), x)
    if perm is not None:
        inv = [0] * len(perm)
        for i, p in enumerate(perm):
            inv[p] = i
        y = _c("transpose", y, axes=tuple(inv))
    return _channel_affine(y, gamma, beta, a, types, axis, tx.ndim)


def _dropout(c, types):
    return Tuple((c.args[0], _c("ones_like", c.args[0])))  # identity at inference


def _l2_normalize(c, types):
    x = c.args[0]
    tx = _t(types, 0)
    axes = tuple(a % tx.ndim for a in c.attrs.axis) if tx.ndim else ()
    s = _c("sum", _c("multiply", x, x), axis=axes, keepdims=True)
    return _c("multiply", x, _c("rsqrt", _c("maximum", s, _eps(c.attrs.eps, tx.dtype))))


def _mvn(c, types):
    x = c.args[0]
    tx = _t(types, 0)
    axes = tuple(a % tx.ndim for a in c.attrs.axes)
    mean = _c("mean", x, axis=axes, keepdims=True)
    d = _c("subtract", x, mean)
    std = _c("sqrt", _c("mean", _c("multiply", d, d), axis=axes, keepdims=True))
    return _c("divide", d, _c("add", std, _eps(c.attrs.epsilon, tx.dtype)))


def _lrn(c, types):
    # y = x / (bias + alpha / size * window_sum(x^2)) ^ beta, the window along the channel axis
    # (floor((size-1)/2) before, ceil after, as ONNX): a padded sum of shifted slices.
    x = c.args[0]
    tx = _t(types, 0)
    a = c.attrs
    axis = a.axis % tx.ndim
    ch = tx.shape[axis]
    if not isinstance(ch, int):
        return None
    before, after = (a.size - 1) // 2, a.size // 2
    pw = [(0, 0)] * tx.ndim
    pw[axis] = (before, after)
    p = _c("nn.pad", _c("multiply", x, x), pad_width=tuple(pw))
    win = None
    for k in range(a.size):
        s = _c("strided_slice", p, begin=(k,), end=(k + ch,), axes=(axis,))
        win = s if win is None else _c("add", win, s)
    d = _c("add", _eps(a.bias, tx.dtype), _c("multiply", _eps(a.alpha / a.size, tx.dtype), win))
    return _c("divide", x, _c("power", d, _eps(a.beta, tx.dtype)))


__all__ = ["DecomposeFn"]
