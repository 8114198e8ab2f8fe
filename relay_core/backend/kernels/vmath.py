"""Vector math in IR (no vector math library is available): exp and log for float32 scalars and
<N x float> vectors, accurate to a few ulp, NaN-propagating.

exp: x = n ln2 + r with n = rint(x / ln2), |r| <= ln2 / 2 (Cody-Waite split of ln2), then the
Cephes expf polynomial for e^r and 2^n built in the exponent bits. Results below
e^-87.3 (subnormal) are flushed to 0 and above e^88.7 are inf.
log: x = m 2^e with m in [sqrt(1/2), sqrt(2)), the Cephes logf polynomial in m - 1.
"""

from __future__ import annotations

import llvmlite.ir as ir

from .llvm_util import I32, call_intrinsic, const, fma

_EXP_P = [
    1.9875691500e-4,
    1.3981999507e-3,
    8.3334519073e-3,
    4.1665795894e-2,
    1.6666665459e-1,
    5.0000001201e-1,
]
_LOG_P = [
    7.0376836292e-2,
    -1.1514610310e-1,
    1.1676998740e-1,
    -1.2420140846e-1,
    1.4249322787e-1,
    -1.6668057665e-1,
    2.0000714765e-1,
    -2.4999993993e-1,
    3.3333331174e-1,
]
LN2_HI, LN2_LO = 0.693359375, -2.12194440e-4
LOG2E = 1.44269504088896341


def _int_type(t):
    return ir.VectorType(I32, t.count) if isinstance(t, ir.VectorType) else I32


def _clamp(b, x, lo, hi):
    """min(max(x, lo), hi) that keeps NaN."""
    t = x.type
    x = b.select(b.fcmp_ordered("<", x, const(t, lo)), const(t, lo), x)
    return b.select(b.fcmp_ordered(">", x, const(t, hi)), const(t, hi), x)


def exp_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """e^x for a float32 scalar or vector."""
    t = x.type
    x0 = x
    nan = b.fcmp_unordered("uno", x0, x0)
    x = b.select(nan, const(t, 0.0), _clamp(b, x, -87.33654, 88.72283))
    n = call_intrinsic(b, "rint", [b.fmul(x, const(t, LOG2E))])
    r = fma(b, n, const(t, -LN2_HI), x)
    r = fma(b, n, const(t, -LN2_LO), r)
    p = const(t, _EXP_P[0])
    for c in _EXP_P[1:]:
        p = fma(b, p, r, const(t, c))
    r2 = b.fmul(r, r)
    y = fma(b, p, r2, b.fadd(r, const(t, 1.0)))
    it = _int_type(t)
    ni = b.fptosi(n, it)
    # 2^n for n in [-126, 127]; n = 128 (x near the top clamp) is split as 2^127 * 2
    hi = b.icmp_signed(">", ni, const(it, 127))
    ni = b.select(hi, const(it, 127), ni)
    scale = b.bitcast(b.shl(b.add(ni, const(it, 127)), const(it, 23)), t)
    y = b.fmul(y, scale)
    y = b.select(hi, b.fmul(y, const(t, 2.0)), y)
    y = b.select(b.fcmp_ordered(">", x0, const(t, 88.72283)), const(t, float("inf")), y)
    y = b.select(b.fcmp_ordered("<", x0, const(t, -87.33654)), const(t, 0.0), y)
    return b.select(nan, x0, y)


def exp_nonpos_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """e^x for x <= 0 or NaN (softmax's x - max): exp_f32 without the overflow handling."""
    t = x.type
    small = b.fcmp_ordered("<", x, const(t, -87.33654))  # false for NaN, which propagates
    xc = b.select(small, const(t, -87.33654), x)
    n = call_intrinsic(b, "rint", [b.fmul(xc, const(t, LOG2E))])
    r = fma(b, n, const(t, -LN2_HI), xc)
    r = fma(b, n, const(t, -LN2_LO), r)
    p = const(t, _EXP_P[0])
    for c in _EXP_P[1:]:
        p = fma(b, p, r, const(t, c))
    y = fma(b, p, b.fmul(r, r), b.fadd(r, const(t, 1.0)))
    it = _int_type(t)
    ni = b.fptosi(b.select(b.fcmp_unordered("uno", n, n), const(t, 0.0), n), it)
    y = b.fmul(y, b.bitcast(b.shl(b.add(ni, const(it, 127)), const(it, 23)), t))
    return b.select(small, const(t, 0.0), y)


def log_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """ln x for a float32 scalar or vector (0 -> -inf, x < 0 -> NaN, inf -> inf)."""
    t = x.type
    it = _int_type(t)
    tiny = b.fcmp_ordered("<", x, const(t, 1.17549435e-38))  # subnormal: scale by 2^23 first
    xs = b.select(tiny, b.fmul(x, const(t, 8388608.0)), x)
    bits = b.bitcast(xs, it)
    e = b.sub(b.ashr(bits, const(it, 23)), const(it, 126))
    e = b.sub(e, b.select(tiny, const(it, 23), const(it, 0)))
    m = b.bitcast(b.or_(b.and_(bits, const(it, 0x007FFFFF)), const(it, 0x3F000000)), t)  # [0.5, 1)
    small = b.fcmp_ordered("<", m, const(t, 0.70710678118654752))
    e = b.select(small, b.sub(e, const(it, 1)), e)
    m = b.select(small, b.fadd(m, m), m)
    f = b.fsub(m, const(t, 1.0))
    ef = b.sitofp(e, t)
    z = b.fmul(f, f)
    p = const(t, _LOG_P[0])
    for c in _LOG_P[1:]:
        p = fma(b, p, f, const(t, c))
    y = b.fmul(b.fmul(p, f), z)
    y = fma(b, ef, const(t, LN2_LO), y)
    y = fma(b, z, const(t, -0.5), y)
    y = b.fadd(f, y)
    y = fma(b, ef, const(t, LN2_HI), y)
    y = b.select(b.fcmp_ordered("==", x, const(t, 0.0)), const(t, float("-inf")), y)
    y = b.select(b.fcmp_unordered("<", x, const(t, 0.0)), const(t, float("nan")), y)
    return b.select(b.fcmp_ordered("==", x, const(t, float("inf"))), x, y)
