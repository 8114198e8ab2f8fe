"""Elementwise math, comparisons, logic, casts and reductions."""

from __future__ import annotations

import numpy as np

from relay_core.ir import dtype as dt

from .table import TF
from .util import cast_to, reduce_call, scalar_like

# -- unary: one Relay op each ------------------------------------------------------------------
_UNARY = {
    "Abs": "abs",
    "Acos": "acos",
    "Acosh": "acosh",
    "Asin": "asin",
    "Asinh": "asinh",
    "Atan": "atan",
    "Atanh": "atanh",
    "Ceil": "ceil",
    "Cos": "cos",
    "Cosh": "cosh",
    "Erf": "erf",
    "Exp": "exp",
    "Expm1": "expm1",
    "Floor": "floor",
    "Log": "log",
    "Log1p": "log1p",
    "Neg": "negative",
    "Reciprocal": "reciprocal",
    "Inv": "reciprocal",
    "Round": "round",
    "Rint": "round",
    "Rsqrt": "rsqrt",
    "Sigmoid": "sigmoid",
    "Sign": "sign",
    "Sin": "sin",
    "Sinh": "sinh",
    "Sqrt": "sqrt",
    "Square": "square",
    "Tan": "tan",
    "Tanh": "tanh",
    "IsNan": "isnan",
    "IsInf": "isinf",
    "IsFinite": "isfinite",
    "LogicalNot": "logical_not",
    "Invert": "bitwise_not",
}


def _unary(relay_op: str):
    def convert(ctx, x):
        return ctx.call(relay_op, x)

    return convert


for _tf_op, _relay_op in _UNARY.items():
    _fn = _unary(_relay_op)
    _fn.__name__ = _fn.__qualname__ = _tf_op
    TF.register(_tf_op)(_fn)


@TF.register("Erfc")
def Erfc(ctx, x):
    return ctx.call("subtract", scalar_like(ctx, 1, x), ctx.call("erf", x))


@TF.register("Relu")
def Relu(ctx, x):
    return ctx.call("maximum", x, scalar_like(ctx, 0, x))


@TF.register("Relu6")
def Relu6(ctx, x):
    return ctx.call("clip", x, a_min=0.0, a_max=6.0)


@TF.register("LeakyRelu")
def LeakyRelu(ctx, x, alpha=0.2):
    return ctx.call("nn.leaky_relu", x, alpha=alpha)


@TF.register("Elu")
def Elu(ctx, x):
    return ctx.call("nn.elu", x, alpha=1.0)


@TF.register("Selu")
def Selu(ctx, x):
    return ctx.call("nn.selu", x)


@TF.register("Softplus")
def Softplus(ctx, x):
    # log(1 + exp(x)) computed stably: max(x, 0) + log1p(exp(-|x|))
    pos = ctx.call("maximum", x, scalar_like(ctx, 0, x))
    tail = ctx.call("log1p", ctx.call("exp", ctx.call("negative", ctx.call("abs", x))))
    return ctx.call("add", pos, tail)


@TF.register("Softsign")
def Softsign(ctx, x):
    den = ctx.call("add", scalar_like(ctx, 1, x), ctx.call("abs", x))
    return ctx.call("divide", x, den)


# -- binary ---------------------------------------------------------------------------------------
_BINARY = {
    "Add": "add",
    "AddV2": "add",
    "Sub": "subtract",
    "Mul": "multiply",
    "RealDiv": "divide",
    "FloorDiv": "floor_divide",
    "FloorMod": "floor_mod",
    "TruncateMod": "mod",
    "Maximum": "maximum",
    "Minimum": "minimum",
    "Pow": "power",
    "Atan2": "atan2",
    "Equal": "equal",
    "NotEqual": "not_equal",
    "Less": "less",
    "LessEqual": "less_equal",
    "Greater": "greater",
    "GreaterEqual": "greater_equal",
    "LogicalAnd": "logical_and",
    "LogicalOr": "logical_or",
    "BitwiseAnd": "bitwise_and",
    "BitwiseOr": "bitwise_or",
    "BitwiseXor": "bitwise_xor",
    "LeftShift": "left_shift",
    "RightShift": "right_shift",
}


def _binary(relay_op: str):
    def convert(ctx, x, y):
        return ctx.call(relay_op, x, y)

    return convert


for _tf_op, _relay_op in _BINARY.items():
    _fn = _binary(_relay_op)
    _fn.__name__ = _fn.__qualname__ = _tf_op
    TF.register(_tf_op)(_fn)


@TF.register("Div")
def Div(ctx, x, y):
    """True division; integers truncate toward zero (as Relay's divide)."""
    return ctx.call("divide", x, y)


@TF.register("TruncateDiv")
def TruncateDiv(ctx, x, y):
    if dt.is_int(ctx.dtype(x)):
        return ctx.call("divide", x, y)
    return ctx.call("trunc", ctx.call("divide", x, y))


@TF.register("DivNoNan")
def DivNoNan(ctx, x, y):
    zero = scalar_like(ctx, 0, y)
    is_zero = ctx.call("equal", y, zero)
    safe = ctx.call("where", is_zero, scalar_like(ctx, 1, y), y)
    return ctx.call("where", is_zero, zero, ctx.call("divide", x, safe))


@TF.register("MulNoNan")
def MulNoNan(ctx, x, y):
    zero = scalar_like(ctx, 0, y)
    return ctx.call("where", ctx.call("equal", y, zero), zero, ctx.call("multiply", x, y))


@TF.register("SquaredDifference")
def SquaredDifference(ctx, x, y):
    d = ctx.call("subtract", x, y)
    return ctx.call("multiply", d, d)


@TF.register("Xdivy")
def Xdivy(ctx, x, y):
    zero = scalar_like(ctx, 0, x)
    return ctx.call("where", ctx.call("equal", x, zero), zero, ctx.call("divide", x, y))


@TF.register("Xlogy")
def Xlogy(ctx, x, y):
    zero = scalar_like(ctx, 0, x)
    return ctx.call(
        "where", ctx.call("equal", x, zero), zero, ctx.call("multiply", x, ctx.call("log", y))
    )


@TF.register("AddN")
def AddN(ctx, *xs):
    out = xs[0]
    for x in xs[1:]:
        out = ctx.call("add", out, x)
    return out


@TF.register("ClipByValue")
def ClipByValue(ctx, x, lo, hi):
    return ctx.call("minimum", ctx.call("maximum", x, lo), hi)


@TF.register("Select")
def Select(ctx, cond, x, y):
    """TF1 Select: a rank-1 condition picks whole rows of higher-rank x / y."""
    cn, xn = ctx.ndim(cond), ctx.ndim(x)
    if cn == 1 and xn > 1:
        cond = ctx.call("reshape", cond, newshape=(-1,) + (1,) * (xn - 1))
    return ctx.call("where", cond, x, y)


@TF.register("SelectV2")
def SelectV2(ctx, cond, x, y):
    return ctx.call("where", cond, x, y)


@TF.register("Cast")
def Cast(ctx, x, DstT="float32", Truncate=False):
    if ctx.dtype(x) == DstT:
        return x
    return ctx.call("cast", x, dtype=DstT)


@TF.register("ApproximateEqual")
def ApproximateEqual(ctx, x, y, tolerance=1e-5):
    d = ctx.call("abs", ctx.call("subtract", x, y))
    return ctx.call("less", d, scalar_like(ctx, tolerance, x))


# -- reductions -----------------------------------------------------------------------------------
_REDUCE = {
    "Sum": "sum",
    "Mean": "mean",
    "Max": "max",
    "Min": "min",
    "Prod": "prod",
    "All": "all",
    "Any": "any",
    "EuclideanNorm": "l2_norm",
}


def _reduce(relay_op: str):
    def convert(ctx, x, axis, keep_dims=False):
        if relay_op in ("sum", "prod") and ctx.dtype(x) == "bool":
            x = ctx.call("cast", x, dtype="int32")  # never produced by TF; defensive
        return reduce_call(ctx, relay_op, x, axis, keep_dims)

    return convert


for _tf_op, _relay_op in _REDUCE.items():
    _fn = _reduce(_relay_op)
    _fn.__name__ = _fn.__qualname__ = _tf_op
    TF.register(_tf_op)(_fn)


def _arg_reduce(relay_op: str):
    def convert(ctx, x, axis, output_type="int64"):
        nd = ctx.ndim(x)
        a = int(np.asarray(ctx.require_value(axis, "axis")).reshape(-1)[0])
        out = ctx.call(relay_op, x, axis=(a % nd,), keepdims=False)
        return cast_to(ctx, out, output_type)

    return convert


for _tf_op, _relay_op in {"ArgMax": "argmax", "ArgMin": "argmin"}.items():
    _fn = _arg_reduce(_relay_op)
    _fn.__name__ = _fn.__qualname__ = _tf_op
    TF.register(_tf_op)(_fn)


def _scan(relay_op: str):
    def convert(ctx, x, axis, exclusive=False, reverse=False):
        a = int(np.asarray(ctx.require_value(axis, "axis")).reshape(-1)[0])
        return ctx.call(
            relay_op, x, axis=a % max(ctx.ndim(x), 1), exclusive=exclusive, reverse=reverse
        )

    return convert


for _tf_op, _relay_op in {"Cumsum": "cumsum", "Cumprod": "cumprod"}.items():
    _fn = _scan(_relay_op)
    _fn.__name__ = _fn.__qualname__ = _tf_op
    TF.register(_tf_op)(_fn)
