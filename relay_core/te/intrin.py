"""Math intrinsics of the tensor-expression language and their numpy meaning.

The numpy functions define the semantics (used by the TE evaluator); the LLVM backend implements
each one (polynomials for the hot ones: exp, log, tanh, erf, sigmoid).
"""

from __future__ import annotations

import math

import numpy as np

_erf = np.frompyfunc(math.erf, 1, 1)


def _np_erf(x):
    return np.asarray(_erf(np.asarray(x, np.float64)), np.float64).astype(x.dtype)


def _np_sigmoid(x):
    with np.errstate(over="ignore"):
        return np.where(
            x >= 0, 1 / (1 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x)))
        ).astype(x.dtype)


def _np_check_index(v, n, shown=None):
    """An index checked against its axis size: in [0, n) or a run-time error (no clamping)."""
    from ..errors import EvalError

    v, n = np.asarray(v), np.asarray(n)
    shown = v if shown is None else np.asarray(shown)
    bad = (v < 0) | (v >= n)
    if np.any(bad):
        raise EvalError(
            f"index {np.broadcast_to(shown, bad.shape)[bad].flat[0]} is out of range for an axis "
            f"of size {np.broadcast_to(n, bad.shape)[bad].flat[0]}"
        )
    return v


# name -> numpy function; all take and return arrays of the argument's dtype unless noted.
INTRINSICS = {
    "exp": np.exp,
    "exp2": np.exp2,
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "erf": _np_erf,
    "sigmoid": _np_sigmoid,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.round,  # half to even
    "trunc": np.trunc,
    "abs": np.abs,  # ints wrap: abs(INT_MIN) == INT_MIN
    "pow": np.power,  # floats
    "atan2": np.arctan2,
    "fmod": np.fmod,  # floats: remainder with the dividend's sign
    "fmax": np.fmax,  # NaN-ignoring
    "fmin": np.fmin,
    "copysign": np.copysign,
    "isnan": np.isnan,  # -> bool
    "isinf": np.isinf,  # -> bool
    "isfinite": np.isfinite,  # -> bool
    "popcount": lambda x: np.bitwise_count(x).astype(x.dtype),
    "check_index": _np_check_index,  # int64 (v, n, shown) -> v; out of [0, n): run-time error
    "entropy": lambda: np.random.default_rng().integers(0, 2**63, dtype=np.uint64),  # no args
}

BOOL_RESULT = frozenset({"isnan", "isinf", "isfinite"})
