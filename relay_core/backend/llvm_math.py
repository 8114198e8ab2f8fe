"""Polynomial exp / log / tanh / erf / sigmoid as straight-line LLVM IR.

No vector math library is available here, and LLVM's loop vectoriser only vectorises calls it
knows a vector version of, so the hot transcendental functions are emitted inline: range
reduction, a minimax / Cephes polynomial and exponent bit tricks. Every function works on a
float scalar or a `<N x float>` vector (constants are splatted) and keeps IEEE special values
(NaN in -> NaN out, exp(+inf) = inf, log(0) = -inf, ...). Accuracy: a few ulp in float32.
"""

from __future__ import annotations

import math

from llvmlite import ir

F32 = ir.FloatType()
I32 = ir.IntType(32)


def _vec(t: ir.Type, elem: ir.Type) -> ir.Type:
    return ir.VectorType(elem, t.count) if isinstance(t, ir.VectorType) else elem


def _c(t: ir.Type, v):
    """Constant `v` of scalar-or-vector type `t`."""
    if isinstance(t, ir.VectorType):
        return ir.Constant(t, [ir.Constant(t.element, v)] * t.count)
    return ir.Constant(t, v)


def _intr(b: ir.IRBuilder, name: str, t: ir.Type, nargs: int = 1):
    mod = b.module
    suffix = f"v{t.count}f32" if isinstance(t, ir.VectorType) else "f32"
    full = f"llvm.{name}.{suffix}"
    fn = mod.globals.get(full)
    if fn is None:
        fn = ir.Function(mod, ir.FunctionType(t, [t] * nargs), full)
    return fn


_FM = ("contract",)


def _fma_poly(b, x, coeffs):
    """Horner evaluation of sum coeffs[i] * x**(n-1-i) (highest degree first)."""
    t = x.type
    acc = _c(t, coeffs[0])
    for c in coeffs[1:]:
        acc = b.fadd(b.fmul(acc, x, flags=_FM), _c(t, c), flags=_FM)
    return acc


def _select_nan_safe_clamp(b, x, lo, hi):
    t = x.type
    x = b.select(b.fcmp_ordered(">", x, _c(t, hi)), _c(t, hi), x)
    return b.select(b.fcmp_ordered("<", x, _c(t, lo)), _c(t, lo), x)


def _pow2i(b, n_int):
    """2**n for int32 n in [-126, 127], as float bits."""
    t = n_int.type
    bits = b.shl(b.add(n_int, _c(t, 127)), _c(t, 23))
    return b.bitcast(bits, _vec(t, F32))


EXP_POLY = [  # exp(r) = 1 + r + r^2 * p(r) on [-ln2/2, ln2/2] (Cephes expf)
    1.9875691500e-4,
    1.3981999507e-3,
    8.3334519073e-3,
    4.1665795894e-2,
    1.6666665459e-1,
    5.0000001201e-1,
]


def _exp_reduced(b: ir.IRBuilder, r):
    """exp(r) for the reduced argument r = x - n*ln2."""
    p = _fma_poly(b, r, EXP_POLY)
    rr = b.fmul(r, r, flags=_FM)
    return b.fadd(b.fadd(b.fmul(p, rr, flags=_FM), r, flags=_FM), _c(r.type, 1.0), flags=_FM)


def exp_f32(b: ir.IRBuilder, x):
    t = x.type
    it = _vec(t, I32)
    xc = _select_nan_safe_clamp(b, x, -104.0, 89.0)
    fn = b.fmul(xc, _c(t, 1.4426950408889634), flags=_FM)
    fn = b.call(_intr(b, "roundeven", t), [fn])
    isnan = b.fcmp_unordered("uno", x, x)
    fn_safe = b.select(isnan, _c(t, 0.0), fn)
    # Cody-Waite: r = x - n*ln2 with ln2 split in two parts
    r = b.fsub(xc, b.fmul(fn, _c(t, 0.693359375)))
    r = b.fsub(r, b.fmul(fn, _c(t, -2.12194440e-4)))
    y = _exp_reduced(b, r)
    n = b.fptosi(fn_safe, it)
    n1 = b.ashr(n, _c(it, 1))
    n2 = b.sub(n, n1)
    y = b.fmul(b.fmul(y, _pow2i(b, n1)), _pow2i(b, n2))
    return b.select(isnan, x, y)


def log_f32(b: ir.IRBuilder, x):
    t = x.type
    it = _vec(t, I32)
    # scale subnormals into the normal range
    small = b.fcmp_ordered("<", x, _c(t, 1.17549435e-38))
    xs = b.select(small, b.fmul(x, _c(t, 8388608.0)), x)
    eadj = b.select(small, _c(it, -23), _c(it, 0))
    bits = b.bitcast(xs, it)
    e = b.sub(b.and_(b.lshr(bits, _c(it, 23)), _c(it, 0xFF)), _c(it, 126))
    e = b.add(e, eadj)
    m = b.bitcast(b.or_(b.and_(bits, _c(it, 0x807FFFFF)), _c(it, 0x3F000000)), t)
    lt = b.fcmp_ordered("<", m, _c(t, 0.707106781186547524))
    e = b.select(lt, b.sub(e, _c(it, 1)), e)
    m = b.select(lt, b.fsub(b.fadd(m, m), _c(t, 1.0)), b.fsub(m, _c(t, 1.0)))
    ef = b.sitofp(e, t)
    z = b.fmul(m, m, flags=_FM)
    p = _fma_poly(
        b,
        m,
        [
            7.0376836292e-2,
            -1.1514610310e-1,
            1.1676998740e-1,
            -1.2420140846e-1,
            1.4249322787e-1,
            -1.6668057665e-1,
            2.0000714765e-1,
            -2.4999993993e-1,
            3.3333331174e-1,
        ],
    )
    y = b.fmul(b.fmul(p, m, flags=_FM), z, flags=_FM)
    y = b.fadd(y, b.fmul(ef, _c(t, -2.12194440e-4)), flags=_FM)
    y = b.fsub(y, b.fmul(z, _c(t, 0.5)), flags=_FM)
    r = b.fadd(b.fadd(m, y), b.fmul(ef, _c(t, 0.693359375)))
    # special values
    r = b.select(b.fcmp_ordered("==", x, _c(t, math.inf)), x, r)
    r = b.select(b.fcmp_ordered("==", x, _c(t, 0.0)), _c(t, -math.inf), r)
    r = b.select(b.fcmp_ordered("<", x, _c(t, 0.0)), _c(t, math.nan), r)
    return b.select(b.fcmp_unordered("uno", x, x), x, r)


def tanh_f32(b: ir.IRBuilder, x):
    t = x.type
    ax = b.call(_intr(b, "fabs", t), [x])
    z = b.fmul(x, x, flags=_FM)
    p = _fma_poly(
        b,
        z,
        [
            -5.70498872745e-3,
            2.06390887954e-2,
            -5.37397155531e-2,
            1.33314422036e-1,
            -3.33332819422e-1,
        ],
    )
    small = b.fadd(b.fmul(b.fmul(p, z, flags=_FM), x, flags=_FM), x, flags=_FM)
    e = exp_f32(b, b.fadd(ax, ax))
    big = b.fsub(_c(t, 1.0), b.fdiv(_c(t, 2.0), b.fadd(e, _c(t, 1.0))))
    big = b.call(_intr(b, "copysign", t, 2), [big, x])
    return b.select(b.fcmp_ordered("<", ax, _c(t, 0.625)), small, big)


def _rcp_intrinsic(b: ir.IRBuilder, t: ir.Type):
    """(function, extra args) of the x86 reciprocal estimate for vector type t, or None: rcp14
    (relative error < 2**-14) for 16 lanes (avx512f) and 8 lanes (avx512vl), rcpps (< 1.5 *
    2**-12) for 8 lanes with AVX only."""
    if not (isinstance(t, ir.VectorType) and t.element == F32 and t.count in (8, 16)):
        return None
    from .llvm_target import host

    triple, _, features = host()
    if not triple.startswith(("x86_64", "i686", "i386")):
        return None
    on = {f[1:] for f in features.split(",") if f.startswith("+")}
    mod = b.module
    if t.count == 16 and "avx512f" in on:
        name, mask = "llvm.x86.avx512.rcp14.ps.512", ir.IntType(16)
    elif t.count == 8 and {"avx512f", "avx512vl"} <= on:
        name, mask = "llvm.x86.avx512.rcp14.ps.256", ir.IntType(8)
    elif t.count == 8 and "avx" in on:
        fn = mod.globals.get("llvm.x86.avx.rcp.ps.256") or ir.Function(
            mod, ir.FunctionType(t, [t]), "llvm.x86.avx.rcp.ps.256"
        )
        return fn, []
    else:
        return None
    fn = mod.globals.get(name) or ir.Function(mod, ir.FunctionType(t, [t, t, mask]), name)
    return fn, [_c(t, 0.0), ir.Constant(mask, -1)]


def _reduce_exp(b: ir.IRBuilder, z):
    """(n, r) with z = n ln2 + r, n = roundeven(z / ln2), |r| <= ln2 / 2 (Cody-Waite: ln2 in two
    parts; n * 0.693359375 is exact)."""
    t = z.type
    n = b.call(_intr(b, "roundeven", t), [b.fmul(z, _c(t, 1.4426950408889634))])
    fma_ = _intr(b, "fma", t, 3)
    r = b.call(fma_, [b.fneg(n), _c(t, 0.693359375), z])
    return n, b.call(fma_, [b.fneg(n), _c(t, -2.12194440e-4), r])


def _exp_bounded(b: ir.IRBuilder, z):
    """exp(z) for z in [-86, 88] (NaN: an unspecified value): exp_f32 without its clamps and
    NaN handling, the power-of-two scaling an integer add to the exponent field."""
    t = z.type
    n, r = _reduce_exp(b, z)
    y = _exp_reduced(b, r)
    # y * 2**n: n added to y's exponent field (y in [0.7, 1.5]: exponent 126 or 127; with
    # n in [-124, 127] the sum stays a normal exponent)
    it = _vec(t, I32)
    bits = b.add(b.bitcast(y, it), b.shl(b.fptosi(n, it), _c(it, 23)))
    return b.bitcast(bits, t)


def exp_nonpos_f32(b: ir.IRBuilder, x):
    """exp(x) for x <= 0 or NaN (softmax's x - max): exp_f32 without the overflow handling;
    below -87.34 (a subnormal result) 0."""
    t = x.type
    lo = -87.33654
    uno = b.fcmp_unordered("uno", x, x)
    small = b.fcmp_ordered("<", x, _c(t, lo))
    z = b.select(uno, _c(t, 0.0), b.select(small, _c(t, lo), x))
    n, r = _reduce_exp(b, z)
    y = b.fmul(_exp_reduced(b, r), _pow2i(b, b.fptosi(n, _vec(t, I32))))  # n in [-126, 0]
    return b.select(uno, x, b.select(small, _c(t, 0.0), y))


def sigmoid_f32(b: ir.IRBuilder, x):
    t = x.type
    rcp = _rcp_intrinsic(b, t)
    if rcp is None:
        e = exp_f32(b, b.fneg(x))
        return b.fdiv(_c(t, 1.0), b.fadd(_c(t, 1.0), e))
    # 8- or 16-lane vectors on x86 (conv / GEMM epilogues: SiLU after every convolution of
    # EfficientNet): a reciprocal estimate and one Newton step instead of a divide (vdivps is
    # one per 5 cycles for 8 lanes on Zen 4, more than the rest of the sigmoid); -x clamped
    # to [-86, 88], where 1 + exp(-x) stays finite (sigmoid(86) = 1 in float32); below -88 the
    # result is 0 (sigmoid(-88) = 6e-39)
    uno = b.fcmp_unordered("uno", x, x)
    z = _select_nan_safe_clamp(b, b.fneg(x), -86.0, 88.0)  # NaN stays NaN: selected out below
    d = b.fadd(_c(t, 1.0), _exp_bounded(b, z))
    fn, extra = rcp
    r0 = b.call(fn, [d, *extra])
    fma_ = _intr(b, "fma", t, 3)
    r1 = r0
    for _ in range(1 if extra else 2):  # rcp14: one Newton step; rcpps (12 bits): two
        err = b.call(fma_, [b.fneg(d), r1, _c(t, 1.0)])  # 1 - d * r1
        r1 = b.call(fma_, [r1, err, r1])
    r1 = b.select(b.fcmp_ordered("<", x, _c(t, -88.0)), _c(t, 0.0), r1)  # below 6e-39: 0
    return b.select(uno, x, r1)


# erf(x) ~ x * P(x^2) / Q(x^2) on [-3.925, 3.925] (|erf| rounds to 1 beyond): a rational
# least-squares fit made for this file (Sanathanan-Koerner iterations with Lawson weights, in
# float64). Max error in float32 ~4e-7 absolute and relative, against ~1e-7 for a
# Taylor / erfc-Chebyshev pair (which it replaced: a third of its instructions, one division and
# no exp, which matters in GELU epilogues).
_ERF_X = 3.925
_ERF_P = [
    2.030821860898868e-06,
    0.000287490343907848,
    0.0038763682823628187,
    0.05308446288108826,
    0.19297388195991516,
    1.128378987312317,
]
_ERF_Q = [
    3.803086292464286e-05,
    0.001189755043014884,
    0.015188438817858696,
    0.11516795307397842,
    0.5043503046035767,
    1.0,
]


def erf_f32(b: ir.IRBuilder, x):
    # NaN passes through the clamp (ordered compares) and the arithmetic
    xc = _select_nan_safe_clamp(b, x, -_ERF_X, _ERF_X)
    z = b.fmul(xc, xc, flags=_FM)
    num = b.fmul(xc, _fma_poly(b, z, _ERF_P), flags=_FM)
    return b.fdiv(num, _fma_poly(b, z, _ERF_Q))


POLY_F32 = {
    "exp": exp_f32,
    "log": log_f32,
    "tanh": tanh_f32,
    "sigmoid": sigmoid_f32,
    "erf": erf_f32,
}
