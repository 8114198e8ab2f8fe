"""Data types: names, numpy equivalents, and classification.

Dtypes are plain strings ("float32", "int64", "bool", "float8_e4m3fn", ...). Exotic ONNX types
(bfloat16, float8, int4, float4) are backed by ml_dtypes.
"""

from __future__ import annotations

import re

import numpy as np

try:  # ml_dtypes is a hard dependency, but keep the core importable without it
    import ml_dtypes as _mld
except ImportError:  # pragma: no cover
    _mld = None

_NUMPY = {
    "bool": np.bool_,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "float16": np.float16,
    "float32": np.float32,
    "float64": np.float64,
    "complex64": np.complex64,
    "complex128": np.complex128,
    "string": np.object_,
}
_ML_NAMES = [
    "bfloat16",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float4_e2m1fn",
    "int4",
    "uint4",
    "int2",
    "uint2",
]
if _mld is not None:
    for _n in _ML_NAMES:
        if hasattr(_mld, _n):
            _NUMPY[_n] = getattr(_mld, _n)

DTYPES: tuple[str, ...] = tuple(_NUMPY)
FLOAT_DTYPES = frozenset(d for d in DTYPES if d.startswith(("float", "bfloat")))
INT_DTYPES = frozenset(d for d in DTYPES if d.startswith(("int", "uint")))
SIGNED_INT_DTYPES = frozenset(d for d in INT_DTYPES if d.startswith("int"))
UNSIGNED_INT_DTYPES = INT_DTYPES - SIGNED_INT_DTYPES
# Types numpy computes natively; ml_dtypes types are computed via float32 / int8.
NATIVE_DTYPES = frozenset(
    ["bool", "float16", "float32", "float64"]
    + [f"{s}int{b}" for s in ("", "u") for b in (8, 16, 32, 64)]
)


# TVM's spellings of our dtypes: `int` is int32, `uint1` is bool (TVM's bool is uint1).
ALIASES = {"int": "int32", "uint1": "bool"}
_VECTOR_RE = re.compile(r"(?P<base>[a-z]+\d*(?:_[a-z0-9]+)?)x(?P<lanes>\d+)\Z")


def canonical(name: str) -> str | None:
    """The dtype a type name spells (aliases resolved, vector dtypes `int8x4` kept), or None."""
    name = ALIASES.get(name, name)
    if name in _NUMPY or is_vector(name):
        return name
    return None


def is_vector(dtype: str) -> bool:
    """`int8x4`, `float16x4`: TVM's vector dtypes (lanes > 1 of a scalar dtype)."""
    m = _VECTOR_RE.match(dtype)
    return bool(m) and m.group("base") in _NUMPY and int(m.group("lanes")) > 1


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


def is_int(dtype: str) -> bool:
    return dtype in INT_DTYPES


def is_signed(dtype: str) -> bool:
    return dtype in SIGNED_INT_DTYPES or dtype in FLOAT_DTYPES


def is_bool(dtype: str) -> bool:
    return dtype == "bool"


def check_dtype(dtype: str) -> str:
    dtype = ALIASES.get(dtype, dtype)
    if dtype not in _NUMPY and not is_vector(dtype):
        raise ValueError(f"unknown dtype {dtype!r}; known dtypes: {', '.join(DTYPES)}")
    return dtype


def to_numpy(dtype: str) -> np.dtype:
    """The numpy dtype that stores `dtype`."""
    try:
        return np.dtype(_NUMPY[dtype])
    except KeyError:
        if is_vector(dtype):
            raise ValueError(
                f"vector dtype {dtype} can be parsed, printed and typechecked but not computed "
                "on here; convert it to tensors of its scalar dtype (an extra axis of the lanes)"
            ) from None
        raise ValueError(f"unknown dtype {dtype!r}") from None


def from_numpy(dt) -> str:
    """The Relay dtype name of a numpy dtype (or anything np.dtype accepts)."""
    dt = np.dtype(dt)
    if dt.kind in "OUS":
        return "string"
    name = dt.name
    if name in _NUMPY:
        return name
    raise ValueError(f"numpy dtype {dt} has no Relay equivalent")


def bits(dtype: str) -> int:
    if dtype == "bool":
        return 8
    if dtype == "string":
        return 64
    dt = to_numpy(dtype)
    if dtype.startswith(("int4", "uint4", "float4")):
        return 4
    if dtype.startswith(("int2", "uint2")):
        return 2
    return dt.itemsize * 8


def itemsize(dtype: str) -> int:
    return to_numpy(dtype).itemsize


def compute_dtype(dtype: str) -> str:
    """The dtype numpy arithmetic should run in for `dtype` (ml_dtypes floats -> float32)."""
    if dtype in NATIVE_DTYPES or dtype == "string":
        return dtype
    if dtype in FLOAT_DTYPES:
        return "float32"
    if dtype in ("int4", "int2"):
        return "int8"
    if dtype in ("uint4", "uint2"):
        return "uint8"
    return dtype


def finfo(dtype: str):
    """np.finfo that also knows the ml_dtypes floats (bfloat16, float8, float4)."""
    if dtype in NATIVE_DTYPES or _mld is None:
        return np.finfo(to_numpy(dtype))
    return _mld.finfo(to_numpy(dtype))


def iinfo(dtype: str):
    """np.iinfo that also knows int4 / uint4 / int2 / uint2."""
    if dtype in NATIVE_DTYPES or _mld is None:
        return np.iinfo(to_numpy(dtype))
    return _mld.iinfo(to_numpy(dtype))
