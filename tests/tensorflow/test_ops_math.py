"""Op-level parity with TF: elementwise math, comparisons, logic, casts, reductions."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import Case, params, rand, run_case, tf

R = tf.raw_ops

# (TF op, domain low, high); each runs on a (3, 4) float32 tensor.
UNARY = [
    ("Abs", -2, 2),
    ("Acos", -0.9, 0.9),
    ("Acosh", 1.1, 3),
    ("Asin", -0.9, 0.9),
    ("Asinh", -2, 2),
    ("Atan", -2, 2),
    ("Atanh", -0.9, 0.9),
    ("Ceil", -2, 2),
    ("Cos", -2, 2),
    ("Cosh", -2, 2),
    ("Erf", -2, 2),
    ("Erfc", -2, 2),
    ("Exp", -2, 2),
    ("Expm1", -2, 2),
    ("Floor", -2, 2),
    ("Log", 0.1, 3),
    ("Log1p", -0.5, 3),
    ("Neg", -2, 2),
    ("Reciprocal", 0.5, 3),
    ("Inv", 0.5, 3),
    ("Round", -3, 3),
    ("Rint", -3, 3),
    ("Rsqrt", 0.2, 3),
    ("Sigmoid", -4, 4),
    ("Sign", -2, 2),
    ("Sin", -2, 2),
    ("Sinh", -2, 2),
    ("Sqrt", 0.0, 3),
    ("Square", -2, 2),
    ("Tan", -1, 1),
    ("Tanh", -3, 3),
    ("Relu", -2, 2),
    ("Relu6", -3, 9),
    ("Elu", -2, 2),
    ("Selu", -2, 2),
    ("Softplus", -30, 30),
    ("Softsign", -2, 2),
]


def _unary(op):
    fn = getattr(R, op)
    return lambda x: fn(features=x) if op in _FEATURES else fn(x=x)


_FEATURES = {"Relu", "Relu6", "Elu", "Selu", "Softplus", "Softsign"}

CASES = [Case(op, _unary(op), [rand(3, 4, lo=lo, hi=hi)], (op,)) for op, lo, hi in UNARY]
CASES += [
    Case(
        "Round_halves",
        lambda x: R.Round(x=x),
        [np.array([0.5, 1.5, 2.5, -0.5, -1.5], np.float32)],
        ("Round",),
    ),
    Case("Abs_int", lambda x: R.Abs(x=x), [rand(5, dtype="int32", lo=-9, hi=9)], ("Abs",)),
    Case("LeakyRelu", lambda x: R.LeakyRelu(features=x, alpha=0.3), [rand(3, 4)], ("LeakyRelu",)),
    Case(
        "IsNan_IsInf_IsFinite",
        lambda x: (R.IsNan(x=x), R.IsInf(x=x), R.IsFinite(x=x)),
        [np.array([1.0, np.nan, np.inf, -np.inf], np.float32)],
        ("IsNan", "IsInf", "IsFinite"),
    ),
    Case("LogicalNot", lambda x: R.LogicalNot(x=x), [rand(6, dtype="bool")], ("LogicalNot",)),
    Case("Invert", lambda x: R.Invert(x=x), [rand(6, dtype="int32", lo=-9, hi=9)], ("Invert",)),
]

BINARY = [
    ("Add", "float32"),
    ("AddV2", "float32"),
    ("Sub", "float32"),
    ("Mul", "float32"),
    ("RealDiv", "float32"),
    ("Maximum", "float32"),
    ("Minimum", "float32"),
    ("Atan2", "float32"),
    ("SquaredDifference", "float32"),
    ("FloorDiv", "float32"),
    ("FloorMod", "float32"),
    ("TruncateMod", "float32"),
    ("Div", "float32"),
    ("Equal", "float32"),
    ("NotEqual", "float32"),
    ("Less", "float32"),
    ("LessEqual", "float32"),
    ("Greater", "float32"),
    ("GreaterEqual", "float32"),
    ("DivNoNan", "float32"),
    ("MulNoNan", "float32"),
    ("Xdivy", "float32"),
]
for _op, _dt in BINARY:
    _fn = getattr(R, _op)
    CASES.append(
        Case(
            _op,
            lambda x, y, f=_fn: f(x=x, y=y),
            [rand(3, 4, lo=-3, hi=3), rand(1, 4, lo=0.5, hi=2.5, seed=1)],
            (_op,),
        )
    )
CASES += [
    Case(
        "Equal_ties",
        lambda x, y: R.Equal(x=x, y=y),
        [np.array([1, 2, 3], np.int32), np.array([1, 0, 3], np.int32)],
        ("Equal",),
    ),
    Case(
        "DivNoNan_zero",
        lambda x, y: R.DivNoNan(x=x, y=y),
        [rand(4), np.array([0.0, 2.0, 0.0, -1.0], np.float32)],
        ("DivNoNan",),
    ),
    Case(
        "MulNoNan_zero",
        lambda x, y: R.MulNoNan(x=x, y=y),
        [
            np.array([np.inf, 1.0, np.nan, 2.0], np.float32),
            np.array([0.0, 2.0, 0.0, -1.0], np.float32),
        ],
        ("MulNoNan",),
    ),
    Case(
        "Xlogy",
        lambda x, y: R.Xlogy(x=x, y=y),
        [np.array([0.0, 2.0, 1.5], np.float32), np.array([0.0, 2.0, 3.0], np.float32)],
        ("Xlogy",),
    ),
    Case(
        "Pow",
        lambda x, y: R.Pow(x=x, y=y),
        [rand(3, 4, lo=0.5, hi=2), rand(3, 4, lo=-2, hi=2)],
        ("Pow",),
    ),
    Case(
        "Div_int",
        lambda x, y: R.Div(x=x, y=y),
        [np.array([-7, 7, 9, -9], np.int32), np.array([2, -2, 4, 4], np.int32)],
        ("Div",),
    ),
    Case(
        "TruncateDiv_int",
        lambda x, y: R.TruncateDiv(x=x, y=y),
        [np.array([-7, 7, 9, -9], np.int32), np.array([2, -2, 4, 4], np.int32)],
        ("TruncateDiv",),
    ),
    Case(
        "TruncateDiv_float",
        lambda x, y: R.TruncateDiv(x=x, y=y),
        [rand(5, lo=-5, hi=5), rand(5, lo=0.5, hi=2, seed=2)],
        ("TruncateDiv",),
    ),
    Case(
        "FloorDiv_int",
        lambda x, y: R.FloorDiv(x=x, y=y),
        [np.array([-7, 7, 9, -9], np.int64), np.array([2, -2, 4, 4], np.int64)],
        ("FloorDiv",),
    ),
    Case(
        "FloorMod_int",
        lambda x, y: R.FloorMod(x=x, y=y),
        [np.array([-7, 7, 9, -9], np.int32), np.array([2, -2, 4, 4], np.int32)],
        ("FloorMod",),
    ),
    Case(
        "TruncateMod_int",
        lambda x, y: R.TruncateMod(x=x, y=y),
        [np.array([-7, 7, 9, -9], np.int32), np.array([2, -2, 4, 4], np.int32)],
        ("TruncateMod",),
    ),
    Case(
        "Logical",
        lambda x, y: (R.LogicalAnd(x=x, y=y), R.LogicalOr(x=x, y=y)),
        [rand(6, dtype="bool"), rand(6, dtype="bool", seed=3)],
        ("LogicalAnd", "LogicalOr"),
    ),
    Case(
        "Bitwise",
        lambda x, y: (R.BitwiseAnd(x=x, y=y), R.BitwiseOr(x=x, y=y), R.BitwiseXor(x=x, y=y)),
        [rand(6, dtype="int32", lo=-50, hi=50), rand(6, dtype="int32", lo=-50, hi=50, seed=4)],
        ("BitwiseAnd", "BitwiseOr", "BitwiseXor"),
    ),
    Case(
        "Shifts",
        lambda x, y: (R.LeftShift(x=x, y=y), R.RightShift(x=x, y=y)),
        [rand(6, dtype="int32", lo=-50, hi=50), rand(6, dtype="int32", lo=0, hi=8, seed=5)],
        ("LeftShift", "RightShift"),
    ),
    Case(
        "AddN",
        lambda a, b, c: R.AddN(inputs=[a, b, c]),
        [rand(2, 3), rand(2, 3, seed=1), rand(2, 3, seed=2)],
        ("AddN",),
    ),
    Case(
        "ClipByValue",
        lambda x: R.ClipByValue(t=x, clip_value_min=-0.5, clip_value_max=1.0),
        [rand(3, 4)],
        ("ClipByValue",),
    ),
    Case(
        "Select_rows",
        lambda c, x, y: R.Select(condition=c, x=x, y=y),
        [rand(3, dtype="bool"), rand(3, 4), rand(3, 4, seed=1)],
        ("Select",),
    ),
    Case(
        "SelectV2",
        lambda c, x, y: R.SelectV2(condition=c, t=x, e=y),
        [rand(3, 1, dtype="bool"), rand(1, 4), rand(3, 4, seed=1)],
        ("SelectV2",),
    ),
    Case("Cast_f2i", lambda x: R.Cast(x=x, DstT=tf.int32), [rand(6, lo=-9, hi=9)], ("Cast",)),
    Case(
        "Cast_i2f16",
        lambda x: R.Cast(x=x, DstT=tf.float16),
        [rand(6, dtype="int64", lo=-9, hi=9)],
        ("Cast",),
    ),
    Case(
        "Cast_bool",
        lambda x: R.Cast(x=x, DstT=tf.bool),
        [np.array([0.0, 1.5, -2.0], "f4")],
        ("Cast",),
    ),
    Case(
        "ApproximateEqual",
        lambda x, y: R.ApproximateEqual(x=x, y=y, tolerance=0.01),
        [np.array([1.0, 2.0, 3.0], "f4"), np.array([1.001, 2.5, 3.0], "f4")],
        ("ApproximateEqual",),
    ),
]

# -- reductions -----------------------------------------------------------------------------------
for _op in ("Sum", "Mean", "Max", "Min", "Prod", "EuclideanNorm"):
    _fn = getattr(R, _op)
    CASES.append(
        Case(
            f"{_op}_axis",
            lambda x, f=_fn: f(input=x, axis=[1, -1], keep_dims=False),
            [rand(2, 3, 4)],
            (_op,),
        )
    )
    CASES.append(
        Case(
            f"{_op}_keep",
            lambda x, f=_fn: f(input=x, axis=0, keep_dims=True),
            [rand(2, 3, 4)],
            (_op,),
        )
    )
CASES += [
    Case(
        "Mean_int",
        lambda x: R.Mean(input=x, axis=[0], keep_dims=False),
        [np.array([[-3, 4], [2, -7]], np.int32)],
        ("Mean",),
    ),
    Case(
        "Sum_empty_axes",
        lambda x: R.Sum(input=x, axis=tf.zeros([0], tf.int32)),
        [rand(2, 3)],
        ("Sum",),
    ),
    Case(
        "All_Any",
        lambda x: (R.All(input=x, axis=[1]), R.Any(input=x, axis=[0, 1])),
        [rand(3, 4, dtype="bool")],
        ("All", "Any"),
    ),
    Case("ArgMax", lambda x: R.ArgMax(input=x, dimension=1), [rand(3, 5)], ("ArgMax",)),
    Case(
        "ArgMin_int32",
        lambda x: R.ArgMin(input=x, dimension=-1, output_type=tf.int32),
        [rand(3, 5)],
        ("ArgMin",),
    ),
    Case("Cumsum", lambda x: R.Cumsum(x=x, axis=1), [rand(3, 5)], ("Cumsum",)),
    Case(
        "Cumsum_excl_rev",
        lambda x: R.Cumsum(x=x, axis=0, exclusive=True, reverse=True),
        [rand(4, 2)],
        ("Cumsum",),
    ),
    Case("Cumprod", lambda x: R.Cumprod(x=x, axis=-1, exclusive=True), [rand(2, 5)], ("Cumprod",)),
]


@pytest.mark.parametrize("case", params(CASES))
def test_math(case):
    run_case(case)
