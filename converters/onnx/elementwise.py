"""Elementwise ONNX ops: math, comparisons, logic, bitwise, and variadic Sum / Max / ..."""

from __future__ import annotations

import numpy as np

from .table import converter
from .util import binary_op, cast, cast_like_value, scalar_like


def _unary(onnx_name: str, relay_name: str, since: int = 1):
    def conv(ctx, x):
        return ctx.call(relay_name, x)

    conv.__name__ = conv.__qualname__ = onnx_name
    converter(onnx_name, since)(conv)


for _onnx, _relay in [
    ("Abs", "abs"),
    ("Neg", "negative"),
    ("Exp", "exp"),
    ("Log", "log"),
    ("Sqrt", "sqrt"),
    ("Reciprocal", "reciprocal"),
    ("Floor", "floor"),
    ("Ceil", "ceil"),
    ("Round", "round"),
    ("Sin", "sin"),
    ("Cos", "cos"),
    ("Tan", "tan"),
    ("Asin", "asin"),
    ("Acos", "acos"),
    ("Atan", "atan"),
    ("Sinh", "sinh"),
    ("Cosh", "cosh"),
    ("Asinh", "asinh"),
    ("Acosh", "acosh"),
    ("Atanh", "atanh"),
    ("Tanh", "tanh"),
    ("Sigmoid", "sigmoid"),
    ("Erf", "erf"),
    ("Sign", "sign"),
    ("Not", "logical_not"),
    ("BitwiseNot", "bitwise_not"),
    ("IsNaN", "isnan"),
]:
    _unary(_onnx, _relay)


def _binary(onnx_name: str, relay_name: str, since: int = 7):
    def conv(ctx, a, b):
        return binary_op(ctx, relay_name, a, b)

    def legacy(ctx, a, b, *, broadcast=0, axis=None, consumed_inputs=None):
        return binary_op(ctx, relay_name, a, _legacy_broadcast(ctx, a, b, broadcast, axis))

    for f in (conv, legacy):
        f.__name__ = f.__qualname__ = onnx_name
    converter(onnx_name, since)(conv)
    converter(onnx_name, 1)(legacy)


def _legacy_broadcast(ctx, a, b, broadcast, axis):
    """Opsets 1-6: with broadcast=1, B's dims line up with A's from `axis` (default: the
    trailing ones); pad B with trailing 1s so numpy broadcasting does the same."""
    if not broadcast or axis is None:
        return b
    ra, rb = ctx.ndim(a), ctx.ndim(b)
    axis = axis + ra if axis < 0 else axis
    trailing = ra - axis - rb
    if trailing > 0:
        b = ctx.call("reshape", b, newshape=(*([0] * rb), *([1] * trailing)))
    return b


for _onnx, _relay in [
    ("Add", "add"),
    ("Sub", "subtract"),
    ("Mul", "multiply"),
    ("Div", "divide"),
    ("Equal", "equal"),
    ("Less", "less"),
    ("Greater", "greater"),
    ("LessOrEqual", "less_equal"),
    ("GreaterOrEqual", "greater_equal"),
    ("And", "logical_and"),
    ("Or", "logical_or"),
    ("Xor", "logical_xor"),
    ("BitwiseAnd", "bitwise_and"),
    ("BitwiseOr", "bitwise_or"),
    ("BitwiseXor", "bitwise_xor"),
]:
    _binary(_onnx, _relay)


@converter("Pow", 1)
def Pow_1(ctx, x, y, *, broadcast=0, axis=None):
    return Pow(ctx, x, _legacy_broadcast(ctx, x, y, broadcast, axis))


@converter("Pow", 7)
def Pow(ctx, x, y):
    # The exponent may have another dtype than the base (opset 12+); compute in the base's.
    return binary_op(ctx, "power", x, cast(ctx, y, ctx.dtype(x)))


@converter("Mod", 10)
def Mod(ctx, a, b, *, fmod=0):
    # fmod=1: the dividend's sign (C fmod); fmod=0: the divisor's sign (Python %).
    return binary_op(ctx, "mod" if fmod else "floor_mod", a, b)


@converter("BitShift", 11)
def BitShift(ctx, x, y, *, direction="LEFT"):
    if direction not in ("LEFT", "RIGHT"):
        raise ctx.error(f"direction must be LEFT or RIGHT, got {direction!r}")
    if direction == "LEFT":
        return binary_op(ctx, "left_shift", x, y)
    dtype = ctx.dtype(x)
    if dtype.startswith("int"):  # an arithmetic shift by >= the width fills with the sign
        bits = int(dtype[3:])
        y = binary_op(ctx, "minimum", y, scalar_like(ctx, bits - 1, y))
    return binary_op(ctx, "right_shift", x, y)


def _variadic(onnx_name: str, relay_name: str, mean: bool = False):
    def conv(ctx, *xs):
        out = xs[0]
        for x in xs[1:]:
            out = binary_op(ctx, relay_name, out, x)
        if mean:
            out = binary_op(ctx, "divide", out, scalar_like(ctx, len(xs), xs[0]))
        return out

    conv.__name__ = conv.__qualname__ = onnx_name
    converter(onnx_name, 1)(conv)


_variadic("Sum", "add")
_variadic("Max", "maximum")
_variadic("Min", "minimum")
_variadic("Mean", "add", mean=True)


@converter("IsInf", 10)
def IsInf(ctx, x, *, detect_negative=1, detect_positive=1):
    if detect_negative and detect_positive:
        return ctx.call("isinf", x)
    if detect_positive:
        return ctx.call("isposinf", x)
    if detect_negative:
        return ctx.call("isneginf", x)
    return ctx.call("logical_and", ctx.call("isinf", x), ctx.const(np.array(False)))


@converter("Identity", 1)
def Identity(ctx, x):
    return x


__all__ = ["cast_like_value"]


@converter("Clip", 1)
def Clip_1(ctx, x, *, min=None, max=None, consumed_inputs=None):  # noqa: A002
    return ctx.call("clip", x, a_min=min, a_max=max)


@converter("Clip", 11)
def Clip(ctx, x, min=None, max=None):  # noqa: A002 - the ONNX names
    lo, hi = ctx.value(min), ctx.value(max)
    if (min is None or lo is not None) and (max is None or hi is not None):
        a_min = None if lo is None else lo.reshape(-1)[0].item()
        a_max = None if hi is None else hi.reshape(-1)[0].item()
        return ctx.call("clip", x, a_min=a_min, a_max=a_max)
    out = x
    if min is not None:
        out = ctx.call("maximum", out, min)
    if max is not None:
        out = ctx.call("minimum", out, max)
    return out
