"""Lowering of the elementwise family (relay_core/ops/elemwise.py) to tensor expressions.

Each rule reproduces its op's numpy reference exactly, including the integer corner cases
(division by zero gives 0, shifts by >= the bit width give 0).
"""

from __future__ import annotations

from ..ir import dtype as _dt
from . import expr as E
from .expr import Const, call, cast, select
from .lowering import broadcast_read, broadcast_shape, out_shape
from .tensor import compute


def _unary(name: str, fn):
    def lower(inputs, attrs, out_type):
        x = inputs[0]
        return compute(x.shape, lambda *i: fn(x[i]), name)

    return lower


def _binary(name: str, fn):
    def lower(inputs, attrs, out_type):
        a, b = inputs
        shape = out_shape(out_type, broadcast_shape(a.shape, b.shape))
        return compute(
            shape, lambda *i: fn(broadcast_read(a, i, shape), broadcast_read(b, i, shape)), name
        )

    return lower


def _c(x, v):
    return E.as_expr(v, x.dtype)


# -- unary float ---------------------------------------------------------------------------------
def _intrinsic(name: str):
    """An op computed by the intrinsic of its name (exp, sin, floor, ...)."""
    return _unary(name, lambda x, _n=name: call(_n, x))


_r_reciprocal = _unary("reciprocal", lambda x: _c(x, 1.0) / x)
_r_isnan = _unary("isnan", lambda x: call("isnan", x, dtype="bool"))
_r_isinf = _unary("isinf", lambda x: call("isinf", x, dtype="bool"))
_r_isfinite = _unary("isfinite", lambda x: call("isfinite", x, dtype="bool"))
_r_isposinf = _unary(
    "isposinf", lambda x: E.logical_and(call("isinf", x, dtype="bool"), x > _c(x, 0))
)
_r_isneginf = _unary(
    "isneginf", lambda x: E.logical_and(call("isinf", x, dtype="bool"), x < _c(x, 0))
)


# -- unary numeric -------------------------------------------------------------------------------
def _abs(x):
    if x.dtype in _dt.UNSIGNED_INT_DTYPES or x.dtype == "bool":
        return x
    return call("abs", x)


def _sign(x):
    if x.dtype in _dt.UNSIGNED_INT_DTYPES:
        return select(x > _c(x, 0), _c(x, 1), _c(x, 0))
    # numpy: sign(nan) is nan; sign(+-0) is 0
    return select(
        x > _c(x, 0),
        _c(x, 1),
        select(x < _c(x, 0), _c(x, -1), x * _c(x, 0) if E.is_float(x.dtype) else _c(x, 0)),
    )


_r_abs = _unary("abs", _abs)
_r_negative = _unary("negative", lambda x: E.neg(x))
_r_sign = _unary("sign", _sign)
_r_square = _unary("square", lambda x: x * x)
_r_copy = _unary("copy", lambda x: x)
_r_logical_not = _unary("logical_not", lambda x: E.not_(x))
_r_bitwise_not = _unary("bitwise_not", lambda x: E.not_(x))


# -- binary arithmetic ---------------------------------------------------------------------------
def _int_guard(a, b, fn):
    """`fn(a, b)` with b == 0 giving 0 (and the divisor made safe)."""
    zero = _c(b, 0)
    safe = select(E.eq(b, zero), _c(b, 1), b)
    return select(E.eq(b, zero), _c(a, 0), fn(a, safe))


def _divide(a, b):
    if E.is_float(a.dtype):
        return a / b
    return _int_guard(a, b, E.truncdiv)


def _floor_divide(a, b):
    if E.is_float(a.dtype):
        return call("floor", a / b)
    return _int_guard(a, b, E.floordiv)


def _mod(a, b):
    if E.is_float(a.dtype):
        return call("fmod", a, b)
    return _int_guard(a, b, E.truncmod)


def _floor_mod(a, b):
    if E.is_float(a.dtype):
        r = call("fmod", a, b)
        zero = _c(a, 0)
        fix = E.logical_and(E.ne(r, zero), E.ne(r < zero, b < zero))
        # numpy's mod: a zero result takes the divisor's sign
        return select(fix, r + b, select(E.eq(r, zero), call("copysign", zero, b), r))
    return _int_guard(a, b, E.floormod)


def _const_value(e):
    """The value of an immediate, or of a read of a scalar constant's tensor; else None."""
    if type(e) is E.Read and not e.tensor.shape and e.tensor.op is not None:
        e = e.tensor.op.body
    return e.value if type(e) is Const else None


def _power(a, b):
    if E.is_float(a.dtype):
        if _const_value(b) in (1.0, 2.0, 3.0):
            # x**2 and x**3 (layer norms' variance, GPT-2's tanh GELU) as products: a libm pow
            # call per element cost more than the matrix product they follow, and stops the
            # expression from fusing into it as an epilogue
            r = a
            for _ in range(int(_const_value(b)) - 1):
                r = r * a
            return r
        return call("pow", a, b)
    if a.dtype in _dt.UNSIGNED_INT_DTYPES:
        return call("pow", a, b)
    one, zero = _c(a, 1), _c(a, 0)
    negexp = b < _c(b, 0)
    pos = call("pow", a, select(negexp, _c(b, 0), b))
    odd = E.ne(E.truncmod(b, _c(b, 2)), _c(b, 0))
    neg_res = select(
        E.eq(a, one), one, select(E.eq(a, _c(a, -1)), select(odd, _c(a, -1), one), zero)
    )
    return select(negexp, neg_res, pos)


def _maximum(a, b):
    return E.max_(a, b)


def _minimum(a, b):
    return E.min_(a, b)


def _fmax(a, b):
    return call("fmax", a, b) if E.is_float(a.dtype) else E.max_(a, b)


def _fmin(a, b):
    return call("fmin", a, b) if E.is_float(a.dtype) else E.min_(a, b)


_r_add = _binary("add", lambda a, b: a + b)
_r_subtract = _binary("subtract", lambda a, b: a - b)
_r_multiply = _binary("multiply", lambda a, b: a * b)
_r_divide = _binary("divide", _divide)
_r_floor_divide = _binary("floor_divide", _floor_divide)
_r_mod = _binary("mod", _mod)
_r_floor_mod = _binary("floor_mod", _floor_mod)
_r_power = _binary("power", _power)
_r_maximum = _binary("maximum", _maximum)
_r_minimum = _binary("minimum", _minimum)
_r_fmax = _binary("fmax", _fmax)
_r_fmin = _binary("fmin", _fmin)
_r_atan2 = _binary("atan2", lambda a, b: call("atan2", a, b))


def _compare(name: str, op: str):
    return _binary(name, lambda a, b, _op=op: E.compare(_op, a, b))


_r_logical_and = _binary("logical_and", E.logical_and)
_r_logical_or = _binary("logical_or", E.logical_or)
_r_logical_xor = _binary("logical_xor", lambda a, b: E.binary("xor", a, b))
_r_bitwise_and = _binary("bitwise_and", lambda a, b: E.binary("and", a, b))
_r_bitwise_or = _binary("bitwise_or", lambda a, b: E.binary("or", a, b))
_r_bitwise_xor = _binary("bitwise_xor", lambda a, b: E.binary("xor", a, b))


def _shift(left: bool):
    def fn(a, b):
        bits = _dt.bits(a.dtype)
        # numpy: a shift by a negative amount or >= the width gives 0 (or -1 for negative a
        # shifted right); the op's reference then maps amounts >= width to 0.
        ok = E.logical_and(b >= _c(b, 0), b < _c(b, bits))
        safe = select(ok, b, _c(b, 0))
        shifted = E.binary("shl" if left else "shr", a, safe)
        if left or a.dtype in _dt.UNSIGNED_INT_DTYPES:
            other = _c(a, 0)
        else:
            other = select(a < _c(a, 0), _c(a, -1), _c(a, 0))
        return select(ok, shifted, select(b >= _c(b, bits), _c(a, 0), other))

    return fn


_r_left_shift = _binary("left_shift", _shift(True))
_r_right_shift = _binary("right_shift", _shift(False))

__all__ = ["Const", "cast"]
