"""Elementwise math: unary functions, broadcasting arithmetic, comparisons, logic, bitwise."""

from __future__ import annotations

import math

import numpy as np

from ..ir.expr import call
from .factories import binary, unary
from .grads import add, div, mul, neg, sub
from .registry import OpPattern, Rule, declare

_erf = np.frompyfunc(math.erf, 1, 1)


def _erf_np(x):
    return np.asarray(_erf(x.astype(np.float64)), dtype=np.float64).astype(x.dtype)


def _erfinv_guess(x, w, log, sqrt, copysign):
    """erfinv(x) to about 2e-3 from w = log(1 - x*x) (Winitzki's closed form, a = 0.147)."""
    t = 2.0 / (math.pi * 0.147) + w * 0.5
    return copysign(sqrt(sqrt(t * t - w * (1.0 / 0.147)) - t), x)


def _erfinv_np(x):
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        y = _erfinv_guess(x64, np.log1p(-x64 * x64), np.log, np.sqrt, np.copysign)
        for _ in range(4):  # Newton on erf(y) = x
            y = y - (_erf_np(y) - x64) / (2.0 / math.sqrt(math.pi) * np.exp(-y * y))
        y = np.where(np.abs(x64) == 1.0, np.copysign(np.inf, x64), y)
    return y.astype(x.dtype)


def _erfinv_te(x, E):
    def c(v):
        return E.as_expr(v, x.dtype)

    def log(v):
        return E.call("log", v)

    def sqrt(v):
        return E.call("sqrt", v)

    def copysign(a, b):
        return E.call("copysign", a, b)

    y = _erfinv_guess(x, log((c(1.0) - x) * (c(1.0) + x)), log, sqrt, copysign)
    for _ in range(3):
        y = y - (E.call("erf", y) - x) / (c(2.0 / math.sqrt(math.pi)) * E.call("exp", -(y * y)))
    return E.select(E.eq(E.call("abs", x), c(1.0)), copysign(c(math.inf), x), y)


def _sigmoid(x):
    # Split by sign so that exp never overflows.
    out = np.empty_like(x)
    pos = x >= 0
    out[pos] = 1 / (1 + np.exp(-x[pos]))
    e = np.exp(x[~pos])
    out[~pos] = e / (1 + e)
    return out


def _rsqrt(x):
    return 1 / np.sqrt(x)


def _te(name: str, *args) -> Rule:
    """A tensor-expression rule of relay_core/te/lower_elemwise.py, named lazily (ops/ may not
    import te/)."""
    return Rule(f"relay_core.te.lower_elemwise:{name}", *args)


def _grad(name: str, *args) -> Rule:
    """A gradient rule of grads.py (the binary family's, which share helpers there)."""
    return Rule(f"relay_core.ops.grads:{name}", *args)


# Each op in one statement: its numpy reference; how the backend computes it (`intrinsic=True`:
# the tensor-expression intrinsic of the op's name; `te=`: an element function as for erfinv, or
# a named rule); its gradient (`grad=lambda x, y, g, ctx: ...`, the input's gradient from the
# input, the output and the output's gradient; or a named rule).

# -- unary, float -------------------------------------------------------------------------------
unary("exp", np.exp, intrinsic=True, grad=lambda x, y, g, k: mul(g, y))
unary(
    "exp2", np.exp2, intrinsic=True, grad=lambda x, y, g, k: mul(g, mul(y, k.scalar(math.log(2.0))))
)
unary("expm1", np.expm1, intrinsic=True, grad=lambda x, y, g, k: mul(g, add(y, k.scalar(1.0))))
unary("log", np.log, domain=(0.1, 5.0), intrinsic=True, grad=lambda x, y, g, k: div(g, x))
unary(
    "log2",
    np.log2,
    domain=(0.1, 5.0),
    intrinsic=True,
    grad=lambda x, y, g, k: div(g, mul(x, k.scalar(math.log(2.0)))),
)
unary(
    "log10",
    np.log10,
    domain=(0.1, 5.0),
    intrinsic=True,
    grad=lambda x, y, g, k: div(g, mul(x, k.scalar(math.log(10.0)))),
)
unary(
    "log1p",
    np.log1p,
    domain=(-0.9, 5.0),
    intrinsic=True,
    grad=lambda x, y, g, k: div(g, add(x, k.scalar(1.0))),
)
unary(
    "sqrt",
    np.sqrt,
    domain=(0.0, 5.0),
    intrinsic=True,
    grad=lambda x, y, g, k: div(mul(g, k.scalar(0.5)), y),
)
unary(
    "rsqrt",
    _rsqrt,
    domain=(0.1, 5.0),
    intrinsic=True,
    grad=lambda x, y, g, k: mul(g, mul(k.scalar(-0.5), div(y, x))),
)
unary("sin", np.sin, intrinsic=True, grad=lambda x, y, g, k: mul(g, call("cos", x)))
unary("cos", np.cos, intrinsic=True, grad=lambda x, y, g, k: neg(mul(g, call("sin", x))))
unary("tan", np.tan, intrinsic=True, grad=lambda x, y, g, k: mul(g, add(k.scalar(1.0), mul(y, y))))
unary(
    "asin",
    np.arcsin,
    domain=(-0.99, 0.99),
    intrinsic=True,
    grad=lambda x, y, g, k: mul(g, call("rsqrt", sub(k.scalar(1.0), mul(x, x)))),
)
unary(
    "acos",
    np.arccos,
    domain=(-0.99, 0.99),
    intrinsic=True,
    grad=lambda x, y, g, k: neg(mul(g, call("rsqrt", sub(k.scalar(1.0), mul(x, x))))),
)
unary(
    "atan", np.arctan, intrinsic=True, grad=lambda x, y, g, k: div(g, add(k.scalar(1.0), mul(x, x)))
)
unary("sinh", np.sinh, intrinsic=True, grad=lambda x, y, g, k: mul(g, call("cosh", x)))
unary("cosh", np.cosh, intrinsic=True, grad=lambda x, y, g, k: mul(g, call("sinh", x)))
unary(
    "tanh", np.tanh, intrinsic=True, grad=lambda x, y, g, k: mul(g, sub(k.scalar(1.0), mul(y, y)))
)
unary(
    "asinh",
    np.arcsinh,
    intrinsic=True,
    grad=lambda x, y, g, k: mul(g, call("rsqrt", add(mul(x, x), k.scalar(1.0)))),
)
unary(
    "acosh",
    np.arccosh,
    domain=(1.01, 5.0),
    intrinsic=True,
    grad=lambda x, y, g, k: mul(g, call("rsqrt", sub(mul(x, x), k.scalar(1.0)))),
)
unary(
    "atanh",
    np.arctanh,
    domain=(-0.99, 0.99),
    intrinsic=True,
    grad=lambda x, y, g, k: div(g, sub(k.scalar(1.0), mul(x, x))),
)
unary(
    "erf",
    _erf_np,
    intrinsic=True,
    grad=lambda x, y, g, k: mul(
        g, mul(k.scalar(2.0 / math.sqrt(math.pi)), call("exp", neg(mul(x, x))))
    ),
)
unary(
    "erfinv",
    _erfinv_np,
    domain=(-0.99, 0.99),
    doc="the inverse of erf on (-1, 1); +-inf at +-1",
    grad=lambda x, y, g, k: mul(g, mul(k.scalar(math.sqrt(math.pi) / 2), call("exp", mul(y, y)))),
    te=_erfinv_te,
)
unary(
    "sigmoid",
    _sigmoid,
    intrinsic=True,
    grad=lambda x, y, g, k: mul(g, mul(y, sub(k.scalar(1.0), y))),
)
unary("floor", np.floor, intrinsic=True, grad=_grad("zero_grad", "floor"))
unary("ceil", np.ceil, intrinsic=True, grad=_grad("zero_grad", "ceil"))
unary("round", np.round, doc="round half to even", intrinsic=True, grad=_grad("zero_grad", "round"))
unary("trunc", np.trunc, intrinsic=True, grad=_grad("zero_grad", "trunc"))
unary(
    "reciprocal",
    np.reciprocal,
    domain=(0.1, 5.0),
    te=_te("_r_reciprocal"),
    grad=lambda x, y, g, k: neg(mul(g, mul(y, y))),
)
unary("isnan", np.isnan, out_dtype="bool", te=_te("_r_isnan"))
unary("isinf", np.isinf, out_dtype="bool", te=_te("_r_isinf"))
unary("isfinite", np.isfinite, out_dtype="bool", te=_te("_r_isfinite"))
unary("isposinf", np.isposinf, out_dtype="bool", te=_te("_r_isposinf"))
unary("isneginf", np.isneginf, out_dtype="bool", te=_te("_r_isneginf"))

# -- unary, numeric / int / bool ----------------------------------------------------------------
unary(
    "abs", np.abs, kind="numeric", te=_te("_r_abs"), grad=lambda x, y, g, k: mul(g, call("sign", x))
)
unary(
    "negative", np.negative, kind="numeric", te=_te("_r_negative"), grad=lambda x, y, g, k: neg(g)
)
unary("sign", np.sign, kind="numeric", te=_te("_r_sign"), grad=_grad("zero_grad", "sign"))
unary(
    "square",
    np.square,
    kind="numeric",
    te=_te("_r_square"),
    grad=lambda x, y, g, k: mul(g, mul(k.scalar(2.0), x)),
)
unary("copy", np.copy, kind="all", doc="identity", te=_te("_r_copy"), grad=lambda x, y, g, k: g)
declare("copy", view=True)
unary("logical_not", np.logical_not, kind="bool", te=_te("_r_logical_not"))
unary("bitwise_not", np.invert, kind="int", te=_te("_r_bitwise_not"))


# -- binary arithmetic ----------------------------------------------------------------------------
def _divide(a, b):
    """True division for floats; for integers, truncation toward zero (C, ONNX Div)."""
    if a.dtype.kind in "iu":
        q = np.floor_divide(a, b)
        r = a - q * b
        fix = (r != 0) & ((a < 0) != (b < 0))
        return np.where(b == 0, 0, q + fix).astype(a.dtype)
    return np.true_divide(a, b)


def _floor_divide(a, b):
    if a.dtype.kind in "iu":
        return np.where(b == 0, 0, np.floor_divide(a, np.where(b == 0, 1, b))).astype(a.dtype)
    return np.floor(np.true_divide(a, b))


def _mod(a, b):
    """Remainder with the dividend's sign (C fmod)."""
    if a.dtype.kind in "iu":
        return np.where(b == 0, 0, np.fmod(a, np.where(b == 0, 1, b))).astype(a.dtype)
    return np.fmod(a, b)


def _floor_mod(a, b):
    """Remainder with the divisor's sign (Python %)."""
    if a.dtype.kind in "iu":
        return np.where(b == 0, 0, np.mod(a, np.where(b == 0, 1, b))).astype(a.dtype)
    return np.mod(a, b)


def _power(a, b):
    if a.dtype.kind in "iu":
        # numpy refuses negative integer exponents; define them as 1 / a**|b| truncated.
        neg = b < 0
        r = np.power(a, np.where(neg, 0, b))
        return np.where(neg, np.where(np.abs(a) == 1, np.power(a, np.abs(b) % 2), 0), r)
    return np.power(a, b)


binary("add", np.add, te=_te("_r_add"), grad=_grad("_g_add"))
binary("subtract", np.subtract, te=_te("_r_subtract"), grad=_grad("_g_subtract"))
binary("multiply", np.multiply, te=_te("_r_multiply"), grad=_grad("_g_multiply"))
binary(
    "divide",
    _divide,
    nonzero_rhs=True,
    doc="true division; integers truncate toward zero",
    te=_te("_r_divide"),
    grad=_grad("_g_divide"),
)
binary(
    "floor_divide",
    _floor_divide,
    nonzero_rhs=True,
    te=_te("_r_floor_divide"),
    grad=_grad("_g_floor_divide"),
)
binary(
    "mod",
    _mod,
    nonzero_rhs=True,
    doc="remainder with the sign of the dividend (C fmod)",
    te=_te("_r_mod"),
    grad=_grad("_g_mod"),
)
binary(
    "floor_mod",
    _floor_mod,
    nonzero_rhs=True,
    doc="remainder with the sign of the divisor (Python %)",
    te=_te("_r_floor_mod"),
    grad=_grad("_g_floor_mod"),
)
binary("power", _power, domain=(0.5, 2.0), te=_te("_r_power"), grad=_grad("_g_power"))
binary(
    "maximum",
    np.maximum,
    kind="any",
    doc="NaN-propagating",
    te=_te("_r_maximum"),
    grad=_grad("_minmax", "maximum", "greater_equal", "less"),
)
binary(
    "minimum",
    np.minimum,
    kind="any",
    doc="NaN-propagating",
    te=_te("_r_minimum"),
    grad=_grad("_minmax", "minimum", "less_equal", "greater"),
)
binary(
    "fmax",
    np.fmax,
    kind="any",
    doc="NaN-ignoring",
    te=_te("_r_fmax"),
    grad=_grad("_minmax", "fmax", "greater_equal", "less"),
)
binary(
    "fmin",
    np.fmin,
    kind="any",
    doc="NaN-ignoring",
    te=_te("_r_fmin"),
    grad=_grad("_minmax", "fmin", "less_equal", "greater"),
)
binary("atan2", np.arctan2, kind="float", te=_te("_r_atan2"), grad=_grad("_g_atan2"))

# -- comparisons and logic ------------------------------------------------------------------------
for _name, _fn, _cmp in [
    ("equal", np.equal, "eq"),
    ("not_equal", np.not_equal, "ne"),
    ("less", np.less, "lt"),
    ("less_equal", np.less_equal, "le"),
    ("greater", np.greater, "gt"),
    ("greater_equal", np.greater_equal, "ge"),
]:
    binary(_name, _fn, kind="all", out_dtype="bool", te=_te("_compare", _name, _cmp))

binary("logical_and", np.logical_and, kind="bool", te=_te("_r_logical_and"))
binary("logical_or", np.logical_or, kind="bool", te=_te("_r_logical_or"))
binary("logical_xor", np.logical_xor, kind="bool", te=_te("_r_logical_xor"))

binary("bitwise_and", np.bitwise_and, kind="intbool", te=_te("_r_bitwise_and"))
binary("bitwise_or", np.bitwise_or, kind="intbool", te=_te("_r_bitwise_or"))
binary("bitwise_xor", np.bitwise_xor, kind="intbool", te=_te("_r_bitwise_xor"))


def _shift(fn):
    def run(a, b):
        bits = a.dtype.itemsize * 8
        out = fn(a, np.minimum(b, bits - 1).astype(a.dtype))
        return np.where(b >= bits, 0, out).astype(a.dtype)

    return run


binary("left_shift", _shift(np.left_shift), kind="int", te=_te("_r_left_shift"))
binary("right_shift", _shift(np.right_shift), kind="int", te=_te("_r_right_shift"))

__all__ = ["OpPattern"]
