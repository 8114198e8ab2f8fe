"""Reductions: Reduce* (axes as an attribute, or as an input from opset 13 / 18), ArgMax /
ArgMin."""

from __future__ import annotations

from .table import converter
from .util import cast, normalize_axis

# ONNX op -> (Relay op, opset from which `axes` is an input)
_REDUCE = {
    "ReduceSum": ("sum", 13),
    "ReduceMean": ("mean", 18),
    "ReduceMax": ("max", 18),
    "ReduceMin": ("min", 18),
    "ReduceProd": ("prod", 18),
    "ReduceL1": ("l1_norm", 18),
    "ReduceL2": ("l2_norm", 18),
    "ReduceLogSum": ("log_sum", 18),
    "ReduceLogSumExp": ("logsumexp", 18),
    "ReduceSumSquare": ("sum_square", 18),
}


def _reduce(ctx, name, x, axes, keepdims, noop):
    rank = ctx.ndim(x)
    if axes is None or len(axes) == 0:
        if noop:
            return x
        return ctx.call(name, x, axis=None, keepdims=bool(keepdims))
    axes = tuple(normalize_axis(ctx, a, rank) for a in axes)
    return ctx.call(name, x, axis=axes, keepdims=bool(keepdims))


def _make(onnx_name: str, relay_name: str, input_since: int):
    def with_attr(ctx, x, *, axes=None, keepdims=1):
        return _reduce(ctx, relay_name, x, axes, keepdims, False)

    def with_input(ctx, x, axes=None, *, keepdims=1, noop_with_empty_axes=0):
        if axes is not None and ctx.value(axes) is None:
            return ctx.call(
                f"dyn.{relay_name}",
                x,
                cast(ctx, axes, "int64"),
                keepdims=bool(keepdims),
                noop_with_empty_axes=bool(noop_with_empty_axes),
            )
        return _reduce(ctx, relay_name, x, ctx.ints(axes, "axes"), keepdims, noop_with_empty_axes)

    for f, since in ((with_attr, 1), (with_input, input_since)):
        f.__name__ = f.__qualname__ = onnx_name
        converter(onnx_name, since)(f)


for _onnx, (_relay, _since) in _REDUCE.items():
    _make(_onnx, _relay, _since)


def _arg(name):
    def conv(ctx, x, *, axis=0, keepdims=1, select_last_index=0):
        axis = normalize_axis(ctx, axis, ctx.ndim(x))
        return ctx.call(
            name,
            x,
            axis=(axis,),
            keepdims=bool(keepdims),
            select_last_index=bool(select_last_index),
        )

    return conv


converter("ArgMax", 1)(_arg("argmax"))
converter("ArgMin", 1)(_arg("argmin"))
