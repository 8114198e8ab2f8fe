"""LLVM types of Relay dtypes and constants shared by the code generators."""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir

from ..errors import RelayError
from ..ir import dtype as _dt

I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
VOID = ir.VoidType()
PTR = I8.as_pointer()
FM = ("contract",)
FM_RED = ("contract", "reassoc", "nsz")


class CodegenError(RelayError):
    """A construct the LLVM backend cannot compile."""


def storage_type(dtype: str) -> ir.Type:
    if dtype == "bool":
        return I8
    if dtype in ("float32",):
        return F32
    if dtype == "float64":
        return F64
    if dtype == "float16":
        return F16
    if dtype == "bfloat16":
        return I16
    if _dt.is_int(dtype) and dtype in _dt.NATIVE_DTYPES:
        return ir.IntType(_dt.bits(dtype))
    if dtype in _SUB_BYTE or dtype in _FLOAT8:  # ml_dtypes keeps one element per byte
        return I8
    raise CodegenError(f"the LLVM backend does not support dtype {dtype}")


def compute_type(dtype: str) -> ir.Type:
    if dtype == "bool":
        return I1
    if dtype in ("float16", "bfloat16", "float32") or dtype in _FLOAT8:
        return F32
    return storage_type(dtype)


_SUB_BYTE = {"int4": 4, "uint4": 4, "int2": 2, "uint2": 2}
_FLOAT8 = (
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float4_e2m1fn",
    "float8_e8m0fnu",
)
_ROUNDED = ("float16", "bfloat16") + _FLOAT8


def _fp(t) -> bool:
    """A float scalar or float vector type."""
    if isinstance(t, ir.VectorType):
        t = t.element
    return isinstance(t, (ir.FloatType, ir.DoubleType, ir.HalfType))


def is_unsigned(dtype: str) -> bool:
    return dtype in _dt.UNSIGNED_INT_DTYPES or dtype == "bool"


# libm functions for intrinsics LLVM has no (reliably lowered) intrinsic for
_LIBM = {
    "expm1",
    "log1p",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "atan2",
    "erf",
    "tanh",
    "exp",
    "log",
}
_LLVM_INTR = {
    "sqrt": "sqrt",
    "floor": "floor",
    "ceil": "ceil",
    "trunc": "trunc",
    "round": "roundeven",
    "exp2": "exp2",
    "log2": "log2",
    "log10": "log10",
    "sin": "sin",
    "cos": "cos",
    "pow": "pow",
    "fmax": "maxnum",
    "fmin": "minnum",
    "copysign": "copysign",
}


def _splat_const(t: ir.Type, v):
    if isinstance(t, ir.VectorType):
        return ir.Constant(t, [ir.Constant(t.element, v)] * t.count)
    return ir.Constant(t, v)


def _const(t: ir.Type, dtype: str, value):
    if isinstance(t, ir.IntType):
        if t.width == 1:
            return ir.Constant(t, int(bool(value)))
        v = int(value)
        return ir.Constant(t, v & ((1 << t.width) - 1))
    v = float(value)
    if dtype in ("float16", "bfloat16"):  # the immediate as that type would hold it
        v = float(np.asarray(v).astype(_dt.to_numpy(dtype)).astype(np.float32))
    elif dtype == "float32" and not math.isnan(v) and not math.isinf(v):
        v = float(np.float32(v))
    return ir.Constant(t, v)
