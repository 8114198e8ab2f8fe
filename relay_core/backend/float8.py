"""8-bit (and 4-bit) floats: conversions generated from tables that ml_dtypes defines.

Each format is stored one element per byte. Decoding is a 256-entry table. Encoding rounds to
nearest-even by counting the midpoints between consecutive representable magnitudes that the
value exceeds (the direction of an exact tie is the one ml_dtypes takes), then maps the count
to a code for each sign; overflow and NaN get the codes ml_dtypes gives them. All the tables
come from ml_dtypes at compile time, so the compiled conversions agree with numpy exactly.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from llvmlite import ir

from ..ir import dtype as _dt

FLOAT8 = (
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float4_e2m1fn",
    "float8_e8m0fnu",
)


@functools.cache
def tables(dtype: str) -> dict:
    t = _dt.to_numpy(dtype)
    decode = np.arange(256, dtype=np.uint8).view(t).astype(np.float32)
    codes = np.arange(256, dtype=np.uint8)
    finite = np.isfinite(decode)
    pos = [(float(decode[c]), int(c)) for c in codes if finite[c] and decode[c] >= 0]
    # one code per magnitude (+0 over -0), sorted
    by_value: dict[float, int] = {}
    for v, c in pos:
        if v not in by_value and not (v == 0 and math.copysign(1.0, v) < 0):
            by_value[v] = c
    values = sorted(by_value)

    def enc(x: float) -> int:
        return int(np.array([x], np.float32).astype(t).view(np.uint8)[0])

    mids, up = [], []
    for lo, hi in zip(values, values[1:]):
        m = np.float32((lo + hi) / 2)
        mids.append(float(m))
        up.append(enc(float(m)) == by_value[hi] and float(m) != hi)
    pos_codes = [by_value[v] for v in values]
    neg_codes = [enc(-v) if v != 0 else enc(-0.0) for v in values]
    # the smallest float32 that overflows (no longer encodes a finite value)
    top = values[-1]
    lo_bits = int(np.array([top], np.float32).view(np.uint32)[0])
    hi_bits = int(np.array([np.inf], np.float32).view(np.uint32)[0])
    while hi_bits - lo_bits > 1:
        mid = (lo_bits + hi_bits) // 2
        x = float(np.array([mid], np.uint32).view(np.float32)[0])
        if np.isfinite(decode[enc(x)]):
            lo_bits = mid
        else:
            hi_bits = mid
    thr = float(np.array([hi_bits], np.uint32).view(np.float32)[0])
    return {
        "decode": decode,
        "mids": mids,
        "up": up,
        "pos": pos_codes,
        "neg": neg_codes,
        "thr": thr,
        "ovf_pos": enc(math.inf),
        "ovf_neg": enc(-math.inf),
        "nan": enc(math.nan),
        "zero": (enc(0.0), enc(-0.0)),  # float8_e8m0fnu has no zero: NaN
        "max": float(top),
    }


def _global_table(mod: ir.Module, name: str, ty: ir.Type, values) -> ir.GlobalVariable:
    g = mod.globals.get(name)
    if g is None:
        aty = ir.ArrayType(ty, len(values))
        g = ir.GlobalVariable(mod, aty, name)
        g.initializer = ir.Constant(aty, [ir.Constant(ty, v) for v in values])
        g.global_constant = True
        g.linkage = "internal"
    return g


def decode(b: ir.IRBuilder, code, dtype: str):
    """float32 value of an i8 code."""
    tab = tables(dtype)
    g = _global_table(
        b.module, f"relay.{dtype}.decode", ir.FloatType(), [float(v) for v in tab["decode"]]
    )
    i = b.zext(code, ir.IntType(64))
    return b.load(b.gep(g, [ir.Constant(ir.IntType(32), 0), i]))


def encode(b: ir.IRBuilder, v, dtype: str):
    """i8 code of a float (float32 or float64) value, rounded to nearest even."""
    tab = tables(dtype)
    t = v.type
    i8, i64 = ir.IntType(8), ir.IntType(64)
    fabs = b.module.globals.get(f"llvm.fabs.{'f64' if t == ir.DoubleType() else 'f32'}")
    if fabs is None:
        fabs = ir.Function(
            b.module,
            ir.FunctionType(t, [t]),
            f"llvm.fabs.{'f64' if t == ir.DoubleType() else 'f32'}",
        )
    a = b.call(fabs, [v])
    bits = b.bitcast(
        v, ir.IntType(t.width if hasattr(t, "width") else (64 if t == ir.DoubleType() else 32))
    )
    neg = b.icmp_signed("<", bits, ir.Constant(bits.type, 0))
    idx = ir.Constant(i64, 0)
    for m, up in zip(tab["mids"], tab["up"]):
        c = b.fcmp_ordered(">=" if up else ">", a, ir.Constant(t, m))
        idx = b.add(idx, b.zext(c, i64))
    gp = _global_table(b.module, f"relay.{dtype}.pos", i8, tab["pos"])
    gn = _global_table(b.module, f"relay.{dtype}.neg", i8, tab["neg"])
    z = ir.Constant(ir.IntType(32), 0)
    code = b.select(neg, b.load(b.gep(gn, [z, idx])), b.load(b.gep(gp, [z, idx])))
    ovf = b.fcmp_ordered(">=", a, ir.Constant(t, tab["thr"]))
    code = b.select(
        ovf, b.select(neg, ir.Constant(i8, tab["ovf_neg"]), ir.Constant(i8, tab["ovf_pos"])), code
    )
    zp, zn = tab["zero"]
    if (zp, zn) != (tab["pos"][0], tab["neg"][0]):
        zero = b.fcmp_ordered("==", a, ir.Constant(t, 0.0))
        code = b.select(zero, b.select(neg, ir.Constant(i8, zn), ir.Constant(i8, zp)), code)
    isnan = b.fcmp_unordered("uno", v, v)
    return b.select(isnan, ir.Constant(i8, tab["nan"]), code)
