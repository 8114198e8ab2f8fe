"""Elementwise math: unary functions, broadcasting arithmetic, comparisons, logic, bitwise."""

from __future__ import annotations

import math

import numpy as np

from ..ir.expr import call
from .factories import binary, unary
from .grads import mul
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


# -- unary, float -------------------------------------------------------------------------------
unary("exp", np.exp)
declare(
    "exp",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "exp"),
    grad=Rule("relay_core.ops.grads:_g_exp"),
)
unary("exp2", np.exp2)
declare(
    "exp2",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "exp2"),
    grad=Rule("relay_core.ops.grads:_g_exp2"),
)
unary("expm1", np.expm1)
declare(
    "expm1",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "expm1"),
    grad=Rule("relay_core.ops.grads:_g_expm1"),
)
unary("log", domain=(0.1, 5.0), fn=np.log)
declare(
    "log",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "log"),
    grad=Rule("relay_core.ops.grads:_g_log"),
)
unary("log2", domain=(0.1, 5.0), fn=np.log2)
declare(
    "log2",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "log2"),
    grad=Rule("relay_core.ops.grads:_g_log2"),
)
unary("log10", domain=(0.1, 5.0), fn=np.log10)
declare(
    "log10",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "log10"),
    grad=Rule("relay_core.ops.grads:_g_log10"),
)
unary("log1p", domain=(-0.9, 5.0), fn=np.log1p)
declare(
    "log1p",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "log1p"),
    grad=Rule("relay_core.ops.grads:_g_log1p"),
)
unary("sqrt", domain=(0.0, 5.0), fn=np.sqrt)
declare(
    "sqrt",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "sqrt"),
    grad=Rule("relay_core.ops.grads:_g_sqrt"),
)
unary("rsqrt", domain=(0.1, 5.0), fn=_rsqrt)
declare(
    "rsqrt",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "rsqrt"),
    grad=Rule("relay_core.ops.grads:_g_rsqrt"),
)
unary("sin", np.sin)
declare(
    "sin",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "sin"),
    grad=Rule("relay_core.ops.grads:_g_sin"),
)
unary("cos", np.cos)
declare(
    "cos",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "cos"),
    grad=Rule("relay_core.ops.grads:_g_cos"),
)
unary("tan", np.tan)
declare(
    "tan",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "tan"),
    grad=Rule("relay_core.ops.grads:_g_tan"),
)
unary("asin", domain=(-0.99, 0.99), fn=np.arcsin)
declare(
    "asin",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "asin"),
    grad=Rule("relay_core.ops.grads:_g_asin"),
)
unary("acos", domain=(-0.99, 0.99), fn=np.arccos)
declare(
    "acos",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "acos"),
    grad=Rule("relay_core.ops.grads:_g_acos"),
)
unary("atan", np.arctan)
declare(
    "atan",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "atan"),
    grad=Rule("relay_core.ops.grads:_g_atan"),
)
unary("sinh", np.sinh)
declare(
    "sinh",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "sinh"),
    grad=Rule("relay_core.ops.grads:_g_sinh"),
)
unary("cosh", np.cosh)
declare(
    "cosh",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "cosh"),
    grad=Rule("relay_core.ops.grads:_g_cosh"),
)
unary("tanh", np.tanh)
declare(
    "tanh",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "tanh"),
    grad=Rule("relay_core.ops.grads:_g_tanh"),
)
unary("asinh", np.arcsinh)
declare(
    "asinh",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "asinh"),
    grad=Rule("relay_core.ops.grads:_g_asinh"),
)
unary("acosh", domain=(1.01, 5.0), fn=np.arccosh)
declare(
    "acosh",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "acosh"),
    grad=Rule("relay_core.ops.grads:_g_acosh"),
)
unary("atanh", domain=(-0.99, 0.99), fn=np.arctanh)
declare(
    "atanh",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "atanh"),
    grad=Rule("relay_core.ops.grads:_g_atanh"),
)
unary("erf", _erf_np)
declare(
    "erf",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "erf"),
    grad=Rule("relay_core.ops.grads:_g_erf"),
)
unary(
    "erfinv",
    _erfinv_np,
    domain=(-0.99, 0.99),
    doc="the inverse of erf on (-1, 1); +-inf at +-1",
    grad=lambda x, y, g, k: mul(g, mul(k.scalar(math.sqrt(math.pi) / 2), call("exp", mul(y, y)))),
    te=_erfinv_te,
)
unary("sigmoid", _sigmoid)
declare(
    "sigmoid",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "sigmoid"),
    grad=Rule("relay_core.ops.grads:_g_sigmoid"),
)
unary("floor", np.floor)
declare(
    "floor",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "floor"),
    grad=Rule("relay_core.ops.grads:zero_grad", "floor"),
)
unary("ceil", np.ceil)
declare(
    "ceil",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "ceil"),
    grad=Rule("relay_core.ops.grads:zero_grad", "ceil"),
)
unary("round", np.round, doc="round half to even")
declare(
    "round",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "round"),
    grad=Rule("relay_core.ops.grads:zero_grad", "round"),
)
unary("trunc", np.trunc)
declare(
    "trunc",
    lower=Rule("relay_core.te.lower_elemwise:_intrinsic", "trunc"),
    grad=Rule("relay_core.ops.grads:zero_grad", "trunc"),
)
unary("reciprocal", domain=(0.1, 5.0), fn=np.reciprocal)
declare(
    "reciprocal",
    lower=Rule("relay_core.te.lower_elemwise:_r_reciprocal"),
    grad=Rule("relay_core.ops.grads:_g_reciprocal"),
)
unary("isnan", np.isnan, out_dtype="bool")
declare("isnan", lower=Rule("relay_core.te.lower_elemwise:_r_isnan"))
unary("isinf", np.isinf, out_dtype="bool")
declare("isinf", lower=Rule("relay_core.te.lower_elemwise:_r_isinf"))
unary("isfinite", np.isfinite, out_dtype="bool")
declare("isfinite", lower=Rule("relay_core.te.lower_elemwise:_r_isfinite"))
unary("isposinf", np.isposinf, out_dtype="bool")
declare("isposinf", lower=Rule("relay_core.te.lower_elemwise:_r_isposinf"))
unary("isneginf", np.isneginf, out_dtype="bool")
declare("isneginf", lower=Rule("relay_core.te.lower_elemwise:_r_isneginf"))

# -- unary, numeric / int / bool ----------------------------------------------------------------
unary("abs", np.abs, kind="numeric")
declare(
    "abs",
    lower=Rule("relay_core.te.lower_elemwise:_r_abs"),
    grad=Rule("relay_core.ops.grads:_g_abs"),
)
unary("negative", np.negative, kind="numeric")
declare(
    "negative",
    lower=Rule("relay_core.te.lower_elemwise:_r_negative"),
    grad=Rule("relay_core.ops.grads:_g_negative"),
)
unary("sign", np.sign, kind="numeric")
declare(
    "sign",
    lower=Rule("relay_core.te.lower_elemwise:_r_sign"),
    grad=Rule("relay_core.ops.grads:zero_grad", "sign"),
)
unary("square", np.square, kind="numeric")
declare(
    "square",
    lower=Rule("relay_core.te.lower_elemwise:_r_square"),
    grad=Rule("relay_core.ops.grads:_g_square"),
)
unary("copy", np.copy, kind="all", doc="identity")
declare(
    "copy",
    lower=Rule("relay_core.te.lower_elemwise:_r_copy"),
    view=True,
    grad=Rule("relay_core.ops.grads:_g_copy"),
)
unary("logical_not", np.logical_not, kind="bool")
declare("logical_not", lower=Rule("relay_core.te.lower_elemwise:_r_logical_not"))
unary("bitwise_not", np.invert, kind="int")
declare("bitwise_not", lower=Rule("relay_core.te.lower_elemwise:_r_bitwise_not"))


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


binary("add", np.add)
declare(
    "add",
    lower=Rule("relay_core.te.lower_elemwise:_r_add"),
    grad=Rule("relay_core.ops.grads:_g_add"),
)
binary("subtract", np.subtract)
declare(
    "subtract",
    lower=Rule("relay_core.te.lower_elemwise:_r_subtract"),
    grad=Rule("relay_core.ops.grads:_g_subtract"),
)
binary("multiply", np.multiply)
declare(
    "multiply",
    lower=Rule("relay_core.te.lower_elemwise:_r_multiply"),
    grad=Rule("relay_core.ops.grads:_g_multiply"),
)
binary("divide", _divide, nonzero_rhs=True, doc="true division; integers truncate toward zero")
declare(
    "divide",
    lower=Rule("relay_core.te.lower_elemwise:_r_divide"),
    grad=Rule("relay_core.ops.grads:_g_divide"),
)
binary("floor_divide", _floor_divide, nonzero_rhs=True)
declare(
    "floor_divide",
    lower=Rule("relay_core.te.lower_elemwise:_r_floor_divide"),
    grad=Rule("relay_core.ops.grads:_g_floor_divide"),
)
binary("mod", _mod, nonzero_rhs=True, doc="remainder with the sign of the dividend (C fmod)")
declare(
    "mod",
    lower=Rule("relay_core.te.lower_elemwise:_r_mod"),
    grad=Rule("relay_core.ops.grads:_g_mod"),
)
binary(
    "floor_mod",
    _floor_mod,
    nonzero_rhs=True,
    doc="remainder with the sign of the divisor (Python %)",
)
declare(
    "floor_mod",
    lower=Rule("relay_core.te.lower_elemwise:_r_floor_mod"),
    grad=Rule("relay_core.ops.grads:_g_floor_mod"),
)
binary("power", _power, domain=(0.5, 2.0))
declare(
    "power",
    lower=Rule("relay_core.te.lower_elemwise:_r_power"),
    grad=Rule("relay_core.ops.grads:_g_power"),
)
binary("maximum", np.maximum, kind="any", doc="NaN-propagating")
declare(
    "maximum",
    lower=Rule("relay_core.te.lower_elemwise:_r_maximum"),
    grad=Rule("relay_core.ops.grads:_minmax", "maximum", "greater_equal", "less"),
)
binary("minimum", np.minimum, kind="any", doc="NaN-propagating")
declare(
    "minimum",
    lower=Rule("relay_core.te.lower_elemwise:_r_minimum"),
    grad=Rule("relay_core.ops.grads:_minmax", "minimum", "less_equal", "greater"),
)
binary("fmax", np.fmax, kind="any", doc="NaN-ignoring")
declare(
    "fmax",
    lower=Rule("relay_core.te.lower_elemwise:_r_fmax"),
    grad=Rule("relay_core.ops.grads:_minmax", "fmax", "greater_equal", "less"),
)
binary("fmin", np.fmin, kind="any", doc="NaN-ignoring")
declare(
    "fmin",
    lower=Rule("relay_core.te.lower_elemwise:_r_fmin"),
    grad=Rule("relay_core.ops.grads:_minmax", "fmin", "less_equal", "greater"),
)
binary("atan2", np.arctan2, kind="float")
declare(
    "atan2",
    lower=Rule("relay_core.te.lower_elemwise:_r_atan2"),
    grad=Rule("relay_core.ops.grads:_g_atan2"),
)

# -- comparisons and logic ------------------------------------------------------------------------
for _name, _fn in [
    ("equal", np.equal),
    ("not_equal", np.not_equal),
    ("less", np.less),
    ("less_equal", np.less_equal),
    ("greater", np.greater),
    ("greater_equal", np.greater_equal),
]:
    binary(_name, _fn, kind="all", out_dtype="bool")

binary("logical_and", np.logical_and, kind="bool")
declare("logical_and", lower=Rule("relay_core.te.lower_elemwise:_r_logical_and"))
binary("logical_or", np.logical_or, kind="bool")
declare("logical_or", lower=Rule("relay_core.te.lower_elemwise:_r_logical_or"))
binary("logical_xor", np.logical_xor, kind="bool")
declare("logical_xor", lower=Rule("relay_core.te.lower_elemwise:_r_logical_xor"))

binary("bitwise_and", np.bitwise_and, kind="intbool")
declare("bitwise_and", lower=Rule("relay_core.te.lower_elemwise:_r_bitwise_and"))
binary("bitwise_or", np.bitwise_or, kind="intbool")
declare("bitwise_or", lower=Rule("relay_core.te.lower_elemwise:_r_bitwise_or"))
binary("bitwise_xor", np.bitwise_xor, kind="intbool")
declare("bitwise_xor", lower=Rule("relay_core.te.lower_elemwise:_r_bitwise_xor"))


def _shift(fn):
    def run(a, b):
        bits = a.dtype.itemsize * 8
        out = fn(a, np.minimum(b, bits - 1).astype(a.dtype))
        return np.where(b >= bits, 0, out).astype(a.dtype)

    return run


binary("left_shift", _shift(np.left_shift), kind="int")
declare("left_shift", lower=Rule("relay_core.te.lower_elemwise:_r_left_shift"))
binary("right_shift", _shift(np.right_shift), kind="int")
declare("right_shift", lower=Rule("relay_core.te.lower_elemwise:_r_right_shift"))

__all__ = ["OpPattern"]

# -- how each op is computed (JAX lax style: declared beside the ops; a Rule / Kernel names a
# function of relay_core/te or relay_core/backend, imported on first use) ------------------
declare("equal", lower=Rule("relay_core.te.lower_elemwise:_compare", "equal", "eq"))
declare("not_equal", lower=Rule("relay_core.te.lower_elemwise:_compare", "not_equal", "ne"))
declare("less", lower=Rule("relay_core.te.lower_elemwise:_compare", "less", "lt"))
declare("less_equal", lower=Rule("relay_core.te.lower_elemwise:_compare", "less_equal", "le"))
declare("greater", lower=Rule("relay_core.te.lower_elemwise:_compare", "greater", "gt"))
declare("greater_equal", lower=Rule("relay_core.te.lower_elemwise:_compare", "greater_equal", "ge"))
