"""Op cases: elementwise math, arithmetic with promotion, comparisons, logic, where/clamp."""

from __future__ import annotations

import torch

from .harness import fn_case
from .inputs import B, I, R

CASES = []
add = CASES.append

_UNARY = {
    "acos": (-0.9, 0.9),
    "acosh": (1.1, 4.0),
    "asin": (-0.9, 0.9),
    "asinh": (-3, 3),
    "atan": (-3, 3),
    "atanh": (-0.9, 0.9),
    "cos": (-3, 3),
    "cosh": (-3, 3),
    "erf": (-3, 3),
    "erfinv": (-0.95, 0.95),
    "exp": (-3, 3),
    "exp2": (-3, 3),
    "expm1": (-3, 3),
    "log": (0.1, 4),
    "log10": (0.1, 4),
    "log1p": (-0.5, 4),
    "log2": (0.1, 4),
    "rsqrt": (0.1, 4),
    "sigmoid": (-6, 6),
    "sin": (-3, 3),
    "sinh": (-3, 3),
    "sqrt": (0.0, 4),
    "tan": (-1.2, 1.2),
    "tanh": (-3, 3),
    "reciprocal": (0.2, 4),
    "abs": (-3, 3),
    "neg": (-3, 3),
    "sign": (-3, 3),
    "ceil": (-3, 3),
    "floor": (-3, 3),
    "trunc": (-3, 3),
    "round": (-3, 3),
}
for _name, (_lo, _hi) in _UNARY.items():
    _fn = getattr(torch, _name)
    add(fn_case(_name, _fn, R(3, 5, lo=_lo, hi=_hi), expect=(f"aten.{_name}.default",)))

add(fn_case("sin_int", torch.sin, I(4, 3), expect=("aten.sin.default",)))
add(fn_case("abs_int", torch.abs, I(4, 3), expect=("aten.abs.default",)))
add(fn_case("floor_int", torch.floor, I(4, 3), expect=("aten.floor.default",)))
add(
    fn_case(
        "round_decimals",
        lambda x: torch.round(x, decimals=2),
        R(3, 4),
        expect=("aten.round.decimals",),
    )
)
add(
    fn_case(
        "isnan",
        torch.isnan,
        torch.tensor([1.0, float("nan"), float("inf"), -2.0]),
        expect=("aten.isnan.default",),
    )
)
add(
    fn_case(
        "isinf",
        torch.isinf,
        torch.tensor([1.0, float("nan"), float("inf"), -float("inf")]),
        expect=("aten.isinf.default",),
    )
)
add(fn_case("bitwise_not", torch.bitwise_not, I(3, 3), expect=("aten.bitwise_not.default",)))
add(fn_case("bitwise_not_bool", torch.bitwise_not, B(3, 3), expect=("aten.bitwise_not.default",)))
add(fn_case("logical_not", torch.logical_not, R(3, 3), expect=("aten.logical_not.default",)))

# arithmetic and promotion
add(fn_case("add", lambda a, b: a + b, R(2, 3, 4), R(3, 1), expect=("aten.add.Tensor",)))
add(
    fn_case(
        "add_alpha",
        lambda a, b: torch.add(a, b, alpha=2.5),
        R(2, 3),
        R(2, 3),
        expect=("aten.add.Tensor",),
    )
)
add(
    fn_case(
        "add_scalar",
        lambda a: torch.ops.aten.add.Scalar(a, 1.5),
        R(2, 3),
        expect=("aten.add.Scalar",),
    )
)
add(fn_case("add_int_float", lambda a, b: a + b, I(2, 3), R(2, 3), expect=("aten.add.Tensor",)))
add(fn_case("add_int_pyfloat", lambda a: a + 0.5, I(2, 3), expect=("aten.add.Tensor",)))
add(
    fn_case(
        "add_f32_0d_f64",
        lambda a, b: a + b,
        R(2, 3),
        R(dtype=torch.float64),
        expect=("aten.add.Tensor",),
    )
)
add(fn_case("add_bool", lambda a, b: a + b, B(4), B(4), expect=("aten.add.Tensor",)))
add(
    fn_case(
        "sub", lambda a, b: torch.sub(a, b, alpha=3), R(2, 3), R(3), expect=("aten.sub.Tensor",)
    )
)
add(
    fn_case(
        "sub_scalar",
        lambda a: torch.ops.aten.sub.Scalar(a, 2),
        R(2, 3),
        expect=("aten.sub.Scalar",),
    )
)
add(fn_case("rsub", lambda a: 2.0 - a, R(2, 3), expect=("aten.rsub.Scalar",), decomposed=False))
add(fn_case("mul", lambda a, b: a * b, R(2, 3), R(2, 3), expect=("aten.mul.Tensor",)))
add(
    fn_case(
        "mul_scalar",
        lambda a: torch.ops.aten.mul.Scalar(a, 3),
        I(2, 3),
        expect=("aten.mul.Scalar",),
    )
)
add(fn_case("mul_bool", lambda a, b: a * b, B(5), B(5), expect=("aten.mul.Tensor",)))
add(fn_case("div", lambda a, b: a / b, R(2, 3), R(2, 3, lo=0.5, hi=2), expect=("aten.div.Tensor",)))
add(
    fn_case(
        "div_int", lambda a, b: a / b, I(2, 3), I(2, 3, lo=1, hi=5), expect=("aten.div.Tensor",)
    )
)
add(
    fn_case(
        "div_scalar",
        lambda a: torch.ops.aten.div.Scalar(a, 4),
        R(2, 3),
        expect=("aten.div.Scalar",),
    )
)
add(
    fn_case(
        "div_trunc",
        lambda a, b: torch.div(a, b, rounding_mode="trunc"),
        R(3, 4),
        R(3, 4, lo=0.3, hi=2),
        expect=("aten.div.Tensor_mode",),
    )
)
add(
    fn_case(
        "div_floor",
        lambda a, b: torch.div(a, b, rounding_mode="floor"),
        R(3, 4),
        R(3, 4, lo=0.3, hi=2),
        expect=("aten.div.Tensor_mode",),
    )
)
add(
    fn_case(
        "div_trunc_int",
        lambda a, b: torch.div(a, b, rounding_mode="trunc"),
        I(3, 4),
        I(3, 4, lo=1, hi=4),
        expect=("aten.div.Tensor_mode",),
    )
)
add(
    fn_case(
        "div_floor_int",
        lambda a, b: torch.div(a, b, rounding_mode="floor"),
        I(3, 4, lo=-9, hi=9),
        I(3, 4, lo=1, hi=4),
        expect=("aten.div.Tensor_mode",),
    )
)
add(
    fn_case(
        "div_scalar_mode",
        lambda a: torch.ops.aten.div.Scalar_mode(a, 3, rounding_mode="floor"),
        R(3, 4),
        expect=("aten.div.Scalar_mode",),
    )
)
add(
    fn_case(
        "floor_divide",
        lambda a, b: a // b,
        I(3, 4, lo=-9, hi=9),
        I(3, 4, lo=1, hi=4),
        expect=("aten.floor_divide.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "remainder",
        lambda a, b: a % b,
        R(3, 4),
        R(3, 4, lo=0.5, hi=2),
        expect=("aten.remainder.Tensor",),
    )
)
add(
    fn_case(
        "remainder_scalar",
        lambda a: torch.remainder(a, -1.5),
        R(3, 4),
        expect=("aten.remainder.Scalar",),
    )
)
add(
    fn_case(
        "remainder_int",
        lambda a, b: a % b,
        I(3, 4, lo=-9, hi=9),
        I(3, 4, lo=1, hi=4),
        expect=("aten.remainder.Tensor",),
    )
)
add(fn_case("fmod", torch.fmod, R(3, 4), R(3, 4, lo=0.5, hi=2), expect=("aten.fmod.Tensor",)))
add(fn_case("fmod_scalar", lambda a: torch.fmod(a, 1.5), R(3, 4), expect=("aten.fmod.Scalar",)))
add(fn_case("pow", torch.pow, R(3, 4, lo=0.5, hi=2), R(3, 4), expect=("aten.pow.Tensor_Tensor",)))
add(fn_case("pow_scalar_exp", lambda a: a**3, R(3, 4), expect=("aten.pow.Tensor_Scalar",)))
add(fn_case("pow_square", lambda a: a**2, R(3, 4), expect=("aten.pow.Tensor_Scalar",)))
add(fn_case("pow_half", lambda a: a**0.5, R(3, 4, lo=0, hi=3), expect=("aten.pow.Tensor_Scalar",)))
add(fn_case("pow_scalar_base", lambda a: 2.0**a, R(3, 4), expect=("aten.pow.Scalar",)))
add(fn_case("pow_int", lambda a: a**2, I(3, 4), expect=("aten.pow.Tensor_Scalar",)))
add(fn_case("atan2", torch.atan2, R(3, 4), R(3, 4), expect=("aten.atan2.default",)))
add(
    fn_case(
        "atan2_out",
        lambda a, b: torch.ops.aten.atan2.out(a, b, out=torch.empty(3, 4)),
        R(3, 4),
        R(3, 4),
        expect=("aten.atan2.out",),
        decomposed=False,
    )
)
add(fn_case("maximum", torch.maximum, R(3, 4), R(4), expect=("aten.maximum.default",)))
add(fn_case("minimum", torch.minimum, R(3, 4), I(4), expect=("aten.minimum.default",)))
add(
    fn_case(
        "maximum_nan",
        torch.maximum,
        torch.tensor([1.0, float("nan"), 2.0]),
        torch.tensor([0.0, 1.0, float("nan")]),
        expect=("aten.maximum.default",),
    )
)

for _op in ("eq", "ne", "lt", "le", "gt", "ge"):
    _f = getattr(torch, _op)
    add(
        fn_case(
            f"{_op}",
            _f,
            I(3, 4, lo=-2, hi=2).float(),
            I(4, lo=-2, hi=2).float(),
            expect=(f"aten.{_op}.Tensor",),
        )
    )
    add(
        fn_case(
            f"{_op}_scalar",
            (lambda f: lambda a: f(a, 0.5))(_f),
            R(3, 4),
            expect=(f"aten.{_op}.Scalar",),
        )
    )
add(
    fn_case(
        "eq_int_float", torch.eq, I(3, 4, lo=-2, hi=2), R(4).round(), expect=("aten.eq.Tensor",)
    )
)

for _op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    _f = getattr(torch, _op)
    add(
        fn_case(_op, _f, I(3, 4, lo=0, hi=15), I(3, 4, lo=0, hi=15), expect=(f"aten.{_op}.Tensor",))
    )
    add(fn_case(f"{_op}_bool", _f, B(3, 4), B(3, 4), expect=(f"aten.{_op}.Tensor",)))
    add(
        fn_case(
            f"{_op}_scalar",
            (lambda f: lambda a: f(a, 6))(_f),
            I(3, 4, lo=0, hi=15),
            expect=(f"aten.{_op}.Scalar",),
        )
    )
for _op in ("logical_and", "logical_or", "logical_xor"):
    _f = getattr(torch, _op)
    add(fn_case(_op, _f, R(3, 4).round(), B(3, 4), expect=(f"aten.{_op}.default",)))

add(fn_case("where", torch.where, B(3, 4), R(3, 4), R(4), expect=("aten.where.self",)))
add(
    fn_case(
        "where_scalar",
        lambda c, a: torch.where(c, a, 0.0),
        B(3, 4),
        R(3, 4),
        expect=("aten.where.self",),
    )
)
add(fn_case("clamp", lambda a: torch.clamp(a, -0.5, 0.7), R(3, 4), expect=("aten.clamp.default",)))
add(
    fn_case(
        "clamp_min_only", lambda a: torch.clamp(a, min=0.1), R(3, 4), expect=("aten.clamp.default",)
    )
)
add(fn_case("clamp_int", lambda a: torch.clamp(a, -1, 2), I(3, 4), expect=("aten.clamp.default",)))
add(
    fn_case(
        "clamp_tensor",
        lambda a, lo, hi: torch.clamp(a, lo, hi),
        R(3, 4),
        R(4, lo=-1, hi=0),
        R(4, lo=0, hi=1),
        expect=("aten.clamp.Tensor",),
    )
)
add(
    fn_case(
        "lerp",
        torch.lerp,
        R(3, 4),
        R(3, 4),
        R(3, 4),
        expect=("aten.lerp.Tensor",),
        decomposed=False,
    )
)
add(
    fn_case(
        "hypot", torch.hypot, R(3, 4), R(3, 4), expect=("aten.hypot.default",), decomposed=False
    )
)
add(
    fn_case(
        "xlogy",
        torch.xlogy,
        R(3, 4, lo=0, hi=2),
        R(3, 4, lo=0.1, hi=2),
        expect=("aten.xlogy.Tensor",),
        decomposed=False,
    )
)
