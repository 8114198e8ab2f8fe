"""Elementwise ATen ops: unary math, arithmetic with torch's type promotion, comparisons,
logic and bitwise ops, where / clamp."""

from __future__ import annotations

from relay_core.ir import dtype as dt

from .ops_fft import complex_abs, complex_binary, is_complex
from .table import aten


def _float_out(ctx, x):
    """`x` cast to the node's (floating) output dtype: sin(int) is float in torch."""
    return ctx.expr(x, ctx.out_dtype() or ctx.promote(x))


def _unary(relay_op: str, *overloads: str, floating: bool = True):
    def convert(ctx, self):
        x = _float_out(ctx, self) if floating else ctx.expr(self)
        return ctx.call(relay_op, x)

    convert.__name__ = overloads[0].split(".")[0]
    aten(*overloads)(convert)
    return convert


for _name in [
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "cos",
    "cosh",
    "erf",
    "erfinv",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log10",
    "log1p",
    "log2",
    "rsqrt",
    "sigmoid",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "reciprocal",
]:
    _unary(_name, f"{_name}.default")


@aten("abs.default")
def abs_(ctx, self):
    if is_complex(ctx, self):
        return complex_abs(ctx, self)
    return ctx.call("abs", ctx.expr(self))


_unary("negative", "neg.default", floating=False)
_unary("sign", "sign.default", floating=False)
_unary("square", "square.default", floating=False)


def _rounding(relay_op):
    def convert(ctx, self):
        x = ctx.expr(self)
        if not dt.is_float(ctx.dtype(x)):
            return x  # rounding an integer tensor is the identity
        return ctx.call(relay_op, x)

    return convert


aten("ceil.default")(_rounding("ceil"))
aten("floor.default")(_rounding("floor"))
aten("trunc.default")(_rounding("trunc"))
aten("fix.default")(_rounding("trunc"))


@aten("round.default")
def round_(ctx, self):
    return _rounding("round")(ctx, self)


@aten("round.decimals")
def round_decimals(ctx, self, decimals=0):
    x = ctx.expr(self)
    if not dt.is_float(ctx.dtype(x)):
        return x
    scale = ctx.expr(10.0**decimals, ctx.dtype(x))
    return ctx.call("divide", ctx.call("round", ctx.call("multiply", x, scale)), scale)


@aten("isnan.default")
def isnan(ctx, self):
    x = ctx.expr(self)
    if not dt.is_float(ctx.dtype(x)):
        return ctx.call("not_equal", x, x)  # all False
    return ctx.call("isnan", x)


@aten("isinf.default")
def isinf(ctx, self):
    x = ctx.expr(self)
    if not dt.is_float(ctx.dtype(x)):
        return ctx.call("not_equal", x, x)
    return ctx.call("isinf", x)


@aten("isfinite.default")
def isfinite(ctx, self):
    x = ctx.expr(self)
    if not dt.is_float(ctx.dtype(x)):
        return ctx.call("equal", x, x)
    return ctx.call("isfinite", x)


@aten("bitwise_not.default")
def bitwise_not(ctx, self):
    x = ctx.expr(self)
    if ctx.dtype(x) == "bool":
        return ctx.call("logical_not", x)
    return ctx.call("bitwise_not", x)


@aten("logical_not.default")
def logical_not(ctx, self):
    return ctx.call("logical_not", _truth(ctx, self))


def _truth(ctx, v):
    """A tensor's truth value as bool (nonzero)."""
    x = ctx.expr(v)
    if ctx.dtype(x) == "bool":
        return x
    return ctx.call("not_equal", x, ctx.expr(0, ctx.dtype(x)))


# -- arithmetic -----------------------------------------------------------------------------------


def _scaled(ctx, other, alpha, dtype):
    o = ctx.expr(other, dtype)
    if alpha is None or alpha == 1:
        return o
    return ctx.call("multiply", o, ctx.expr(alpha, dtype))


def _scaled_complex(ctx, other, alpha):
    if alpha is None or alpha == 1:
        return other
    return (
        complex_binary(ctx, "multiply", other, alpha)
        if is_complex(ctx, other)
        else (
            ctx.call("multiply", ctx.expr(other), ctx.expr(alpha, ctx.dtype_of(other)))
            if ctx.is_tensor(other)
            else other * alpha
        )
    )


@aten("add.Tensor", "add.Scalar")
def add(ctx, self, other, alpha=1):
    if is_complex(ctx, self) or is_complex(ctx, other):
        return complex_binary(ctx, "add", self, _scaled_complex(ctx, other, alpha))
    d = ctx.out_dtype() or ctx.promote(self, other)
    if d == "bool":
        return ctx.call("logical_or", ctx.expr(self, d), ctx.expr(other, d))
    return ctx.call("add", ctx.expr(self, d), _scaled(ctx, other, alpha, d))


@aten("sub.Tensor", "sub.Scalar")
def sub(ctx, self, other, alpha=1):
    if is_complex(ctx, self) or is_complex(ctx, other):
        return complex_binary(ctx, "subtract", self, _scaled_complex(ctx, other, alpha))
    d = ctx.out_dtype() or ctx.promote(self, other)
    return ctx.call("subtract", ctx.expr(self, d), _scaled(ctx, other, alpha, d))


@aten("rsub.Tensor", "rsub.Scalar")
def rsub(ctx, self, other, alpha=1):
    d = ctx.out_dtype() or ctx.promote(self, other)
    return ctx.call("subtract", ctx.expr(other, d), _scaled(ctx, self, alpha, d))


@aten("mul.Tensor", "mul.Scalar")
def mul(ctx, self, other):
    if is_complex(ctx, self) or is_complex(ctx, other):
        return complex_binary(ctx, "multiply", self, other)
    d = ctx.out_dtype() or ctx.promote(self, other)
    if d == "bool":
        return ctx.call("logical_and", ctx.expr(self, d), ctx.expr(other, d))
    return ctx.call("multiply", ctx.expr(self, d), ctx.expr(other, d))


@aten("div.Tensor", "div.Scalar")
def div(ctx, self, other):
    d = ctx.out_dtype() or "float32"  # true division: always floating in torch
    return ctx.call("divide", ctx.expr(self, d), ctx.expr(other, d))


@aten("div.Tensor_mode", "div.Scalar_mode")
def div_mode(ctx, self, other, rounding_mode=None):
    if rounding_mode is None:
        return div(ctx, self, other)
    d = ctx.out_dtype() or ctx.promote(self, other)
    a, b = ctx.expr(self, d), ctx.expr(other, d)
    if rounding_mode == "floor":
        return ctx.call("floor_divide", a, b)
    if dt.is_float(d):
        return ctx.call("trunc", ctx.call("divide", a, b))
    return ctx.call("divide", a, b)  # integer divide truncates toward zero


@aten("floor_divide.default", "floor_divide.Scalar")
def floor_divide(ctx, self, other):
    d = ctx.out_dtype() or ctx.promote(self, other)
    return ctx.call("floor_divide", ctx.expr(self, d), ctx.expr(other, d))


@aten("remainder.Tensor", "remainder.Scalar", "remainder.Scalar_Tensor")
def remainder(ctx, self, other):
    d = ctx.out_dtype() or ctx.promote(self, other)
    return ctx.call("floor_mod", ctx.expr(self, d), ctx.expr(other, d))


@aten("fmod.Tensor", "fmod.Scalar")
def fmod(ctx, self, other):
    d = ctx.out_dtype() or ctx.promote(self, other)
    return ctx.call("mod", ctx.expr(self, d), ctx.expr(other, d))


@aten("pow.Tensor_Tensor", "pow.Tensor_Scalar")
def pow_(ctx, self, exponent):
    d = ctx.out_dtype() or ctx.promote(self, exponent)
    x = ctx.expr(self, d)
    if not ctx.is_tensor(exponent):
        if exponent == 2:
            return ctx.call("multiply", x, x)
        if exponent == 1:
            return x
        if exponent == 0.5 and dt.is_float(d):
            return ctx.call("sqrt", x)
    return ctx.call("power", x, ctx.expr(exponent, d))


@aten("pow.Scalar")
def pow_scalar(ctx, self, exponent):
    d = ctx.out_dtype() or ctx.promote(self, exponent)
    return ctx.call("power", ctx.expr(self, d), ctx.expr(exponent, d))


@aten("atan2.default", "atan2.out")
def atan2(ctx, self, other, out=None):
    d = ctx.out_dtype() or "float32"
    if not dt.is_float(d):
        d = "float32"
    return ctx.call("atan2", ctx.expr(self, d), ctx.expr(other, d))


def _binary(relay_op: str, *overloads: str):
    def convert(ctx, self, other):
        a, b = ctx.operands(self, other)
        return ctx.call(relay_op, a, b)

    convert.__name__ = overloads[0].split(".")[0]
    aten(*overloads)(convert)
    return convert


_binary("maximum", "maximum.default")
_binary("minimum", "minimum.default")
_binary("fmax", "fmax.default")
_binary("fmin", "fmin.default")
for _op, _rel in [
    ("eq", "equal"),
    ("ne", "not_equal"),
    ("lt", "less"),
    ("le", "less_equal"),
    ("gt", "greater"),
    ("ge", "greater_equal"),
]:
    _binary(_rel, f"{_op}.Tensor", f"{_op}.Scalar")


def _bitwise(relay_op: str, logical: str, name: str):
    def convert(ctx, self, other):
        a, b = ctx.operands(self, other)
        if ctx.dtype(a) == "bool":
            return ctx.call(logical, a, b)
        return ctx.call(relay_op, a, b)

    convert.__name__ = name
    aten(f"{name}.Tensor", f"{name}.Scalar", f"{name}.Scalar_Tensor")(convert)


_bitwise("bitwise_and", "logical_and", "bitwise_and")
_bitwise("bitwise_or", "logical_or", "bitwise_or")
_bitwise("bitwise_xor", "logical_xor", "bitwise_xor")


@aten("bitwise_left_shift.Tensor", "bitwise_left_shift.Tensor_Scalar")
def bitwise_left_shift(ctx, self, other):
    a, b = ctx.operands(self, other)
    return ctx.call("left_shift", a, b)


@aten("bitwise_right_shift.Tensor", "bitwise_right_shift.Tensor_Scalar")
def bitwise_right_shift(ctx, self, other):
    a, b = ctx.operands(self, other)
    return ctx.call("right_shift", a, b)


def _logical(relay_op: str, name: str):
    def convert(ctx, self, other):
        return ctx.call(relay_op, _truth(ctx, self), _truth(ctx, other))

    convert.__name__ = name
    aten(f"{name}.default")(convert)


_logical("logical_and", "logical_and")
_logical("logical_or", "logical_or")
_logical("logical_xor", "logical_xor")


# -- selection ------------------------------------------------------------------------------------


@aten("where.self", "where.ScalarSelf", "where.ScalarOther", "where.Scalar")
def where(ctx, condition, self, other):
    d = ctx.out_dtype() or ctx.promote(self, other)
    return ctx.call("where", _truth(ctx, condition), ctx.expr(self, d), ctx.expr(other, d))


@aten("clamp.default", "clamp.Tensor", "clip.default", "clip.Tensor")
def clamp(ctx, self, min=None, max=None):  # noqa: A002 - the schema's names
    d = ctx.out_dtype() or ctx.promote(self, min, max)
    x = ctx.expr(self, d)
    if min is not None:
        x = ctx.call("maximum", x, ctx.expr(min, d))
    if max is not None:
        x = ctx.call("minimum", x, ctx.expr(max, d))
    return x


@aten("clamp_min.default", "clamp_min.Tensor")
def clamp_min(ctx, self, min):  # noqa: A002
    return clamp(ctx, self, min=min)


@aten("clamp_max.default", "clamp_max.Tensor")
def clamp_max(ctx, self, max):  # noqa: A002
    return clamp(ctx, self, max=max)


@aten("lerp.Scalar", "lerp.Tensor")
def lerp(ctx, self, end, weight):
    d = ctx.out_dtype() or ctx.promote(self, end, weight)
    a, b, w = ctx.expr(self, d), ctx.expr(end, d), ctx.expr(weight, d)
    return ctx.call("add", a, ctx.call("multiply", w, ctx.call("subtract", b, a)))


@aten("hypot.default")
def hypot(ctx, self, other):
    a, b = ctx.operands(self, other)
    return ctx.call("sqrt", ctx.call("add", ctx.call("multiply", a, a), ctx.call("multiply", b, b)))


@aten("copysign.Tensor", "copysign.Scalar")
def copysign(ctx, self, other):
    d = ctx.out_dtype() or "float32"
    a, b = ctx.expr(self, d), ctx.expr(other, d)
    # |a| with b's sign bit: -0.0 counts as negative, as in C copysign.
    neg = ctx.call("less", ctx.call("atan2", b, ctx.expr(-1.0, d)), ctx.expr(0.0, d))
    mag = ctx.call("abs", a)
    return ctx.call("where", neg, ctx.call("negative", mag), mag)


@aten("xlogy.Tensor", "xlogy.Scalar_Self", "xlogy.Scalar_Other")
def xlogy(ctx, self, other):
    d = ctx.out_dtype() or "float32"
    x, y = ctx.expr(self, d), ctx.expr(other, d)
    prod = ctx.call("multiply", x, ctx.call("log", y))
    zero = ctx.expr(0.0, d)
    out = ctx.call("where", ctx.call("equal", x, zero), zero, prod)
    return ctx.call("where", ctx.call("isnan", y), y, out)
