"""Scalar (and vector) arithmetic of the code generator: dtype conversions, integer division
and shifts with numpy's corner cases, casts with numpy's x86 rounding, math intrinsics.

Mixed into the statement emitter of relay_core.backend.codegen; `self.b` is the IRBuilder and
`self.ctx` the ModuleContext.
"""

from __future__ import annotations

import math

from llvmlite import ir

from ..te.expr import Call
from .llvm_math import POLY_F32
from .llvm_types import (
    _FLOAT8,
    _LIBM,
    _LLVM_INTR,
    _ROUNDED,
    _SUB_BYTE,
    F16,
    F32,
    F64,
    I1,
    I8,
    I16,
    I32,
    I64,
    CodegenError,
    _fp,
    _splat_const,
    compute_type,
    is_unsigned,
)


class ArithMixin:
    """Conversions and arithmetic on LLVM values of Relay dtypes."""

    def to_storage(self, v, dtype: str):
        b = self.b
        if dtype == "bool":
            return b.zext(v, I8)
        if dtype in _SUB_BYTE:  # ml_dtypes keeps the low bits only
            return b.and_(v, ir.Constant(I8, (1 << _SUB_BYTE[dtype]) - 1))
        if dtype == "float16":
            return b.fptrunc(v, F16)
        if dtype in _FLOAT8:
            from .float8 import encode

            return encode(b, v, dtype)
        if dtype == "bfloat16":
            bits = b.bitcast(v, I32)
            # round to nearest even; NaN stays NaN
            lsb = b.and_(b.lshr(bits, ir.Constant(I32, 16)), ir.Constant(I32, 1))
            r = b.add(bits, b.add(ir.Constant(I32, 0x7FFF), lsb))
            isnan = b.fcmp_unordered("uno", v, v)
            r = b.select(isnan, b.or_(bits, ir.Constant(I32, 0x400000)), r)
            return b.trunc(b.lshr(r, ir.Constant(I32, 16)), I16)
        return v

    def from_storage(self, v, dtype: str):
        b = self.b
        if dtype == "bool":
            return b.icmp_unsigned("!=", v, ir.Constant(I8, 0))
        if dtype in _FLOAT8:
            from .float8 import decode

            return decode(b, v, dtype)
        if dtype in _SUB_BYTE:
            return self.wrap_int(v, dtype)
        if dtype == "float16":
            return b.fpext(v, F32)
        if dtype == "bfloat16":
            return b.bitcast(b.shl(b.zext(v, I32), ir.Constant(I32, 16)), F32)
        return v

    def _min_max(self, op: str, a, c):
        """NaN-propagating max / min. Against a constant that is not NaN (ReLU's 0, clip's
        bounds), on float vectors, it is x86's maxps / minps with the constant first: the
        other operand is returned where it is NaN. llvm.maximum (and any compare + select)
        there becomes a select against the operand itself, which LLVM turns into a masked
        store when the result goes back to where the operand was loaded (an in-place
        epilogue): vmaskmovps, microcoded on AMD (a stem convolution + ReLU took 5.1 ms
        instead of 2.8)."""
        b = self.b
        for x, k in ((a, c), (c, a)):
            v = _known_float(k)
            if v is not None and not math.isnan(v):
                r = self._x86_min_max(op, k, x)
                if r is not None:
                    return r
                if not isinstance(x.type, ir.VectorType):  # scalars: no masked store
                    keep_k = b.fcmp_ordered(">" if op == "max" else "<", k, x)
                    return b.select(keep_k, k, x)
        name = "maximum" if op == "max" else "minimum"
        return b.call(self.ctx.intrinsic(name, a.type, 2), [a, c])

    def _x86_min_max(self, op: str, k, x):
        """x86's max / min (k, x) on float vectors, in pieces of the widest vector the target
        has (a 16-lane epilogue on AVX2: two halves); None off x86 or for other types."""
        t = x.type
        n = _x86_lanes(t)
        if n is None:
            return None
        b = self.b
        elem = "ps" if t.element == F32 else "pd"
        bits = n * (32 if elem == "ps" else 64)
        name = {
            128: f"llvm.x86.sse{'2' if elem == 'pd' else ''}.{op}.{elem}",
            256: f"llvm.x86.avx.{op}.{elem}.256",
            512: f"llvm.x86.avx512.{op}.{elem}.512",
        }[bits]
        pt = ir.VectorType(t.element, n)
        extra = [ir.Constant(I32, 4)] if bits == 512 else []  # current rounding mode
        fn = self.ctx.declare(name, pt, [pt, pt] + [e.type for e in extra])
        if n == t.count:
            return b.call(fn, [k, x, *extra])
        parts = []
        for lo in range(0, t.count, n):
            sel = ir.Constant(ir.VectorType(I32, n), list(range(lo, lo + n)))
            kp, xp = (b.shuffle_vector(v, ir.Constant(t, ir.Undefined), sel) for v in (k, x))
            parts.append(b.call(fn, [kp, xp, *extra]))
        while len(parts) > 1:  # concatenate pairwise
            m = parts[0].type.count
            sel = ir.Constant(ir.VectorType(I32, 2 * m), list(range(2 * m)))
            parts = [b.shuffle_vector(parts[i], parts[i + 1], sel) for i in range(0, len(parts), 2)]
        return parts[0]

    def binary(self, op: str, a, c, dtype: str):
        b = self.b
        fl = _fp(a.type)
        if fl:
            if op == "add":
                return b.fadd(a, c, flags=self.fm)
            if op == "sub":
                return b.fsub(a, c, flags=self.fm)
            if op == "mul":
                return b.fmul(a, c, flags=self.fm)
            if op == "div":
                return b.fdiv(a, c, flags=self.fm)
            if op in ("max", "min"):
                return self._min_max(op, a, c)
            raise CodegenError(f"float operation {op} is not supported")
        uns = is_unsigned(dtype)
        if op == "add":
            return b.add(a, c)
        if op == "sub":
            return b.sub(a, c)
        if op == "mul":
            return b.mul(a, c)
        if op in ("max", "min"):
            cmp = (b.icmp_unsigned if uns else b.icmp_signed)(">" if op == "max" else "<", a, c)
            return b.select(cmp, a, c)
        if op == "and":
            return b.and_(a, c)
        if op == "or":
            return b.or_(a, c)
        if op == "xor":
            return b.xor(a, c)
        if op == "shl":
            return b.shl(a, c)
        if op == "shr":
            return b.lshr(a, c) if uns else b.ashr(a, c)
        if op in ("truncdiv", "truncmod", "floordiv", "floormod"):
            return self.int_div(op, a, c, uns)
        raise CodegenError(f"integer operation {op} is not supported")

    def int_div(self, op, a, c, uns: bool):
        b = self.b
        t = a.type
        if uns:
            return b.udiv(a, c) if op in ("truncdiv", "floordiv") else b.urem(a, c)
        const_c = isinstance(c, ir.Constant) and c.constant not in (0, -1)
        if not const_c:  # sdiv by -1 overflows for INT_MIN: compute a / 1 and negate
            minus1 = b.icmp_signed("==", c, ir.Constant(t, -1))
            safe = b.select(minus1, ir.Constant(t, 1), c)
        else:
            minus1, safe = None, c
        q = b.sdiv(a, safe)
        r = b.srem(a, safe)
        if op in ("floordiv", "floormod"):
            zero = ir.Constant(t, 0)
            adjust = b.and_(
                b.icmp_signed("!=", r, zero),
                b.icmp_signed("!=", b.icmp_signed("<", r, zero), b.icmp_signed("<", safe, zero)),
            )
            if op == "floordiv":
                q = b.select(adjust, b.sub(q, ir.Constant(t, 1)), q)
            else:
                r = b.select(adjust, b.add(r, safe), r)
        if minus1 is not None:
            q = b.select(minus1, b.neg(a), q)
            r = b.select(minus1, ir.Constant(t, 0), r)
        return q if op in ("truncdiv", "floordiv") else r

    def compare(self, op: str, a, c, dtype: str):
        b = self.b
        sym = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op]
        if _fp(a.type):
            if op == "ne":
                return b.fcmp_unordered("!=", a, c)
            return b.fcmp_ordered(sym, a, c)
        if is_unsigned(dtype):
            return b.icmp_unsigned(sym, a, c)
        return b.icmp_signed(sym, a, c)

    def cast(self, v, src: str, dst: str):
        b = self.b
        st, dt_ = compute_type(src), compute_type(dst)
        sf = isinstance(st, (ir.FloatType, ir.DoubleType))
        df = isinstance(dt_, (ir.FloatType, ir.DoubleType))
        if dst == "bool":
            if sf:
                return b.fcmp_unordered("!=", v, ir.Constant(st, 0.0))
            return b.icmp_unsigned("!=", v, ir.Constant(st, 0))
        if sf and df:
            if dst in _FLOAT8 and st == F64:  # rounds once, from the double (as ml_dtypes)
                return self.from_storage(self.to_storage(v, dst), dst)
            if st != dt_:
                v = b.fpext(v, dt_) if dt_ == F64 else b.fptrunc(v, dt_)
            return self.round_to(v, dst)
        if sf:
            if dst in _SUB_BYTE:
                return self.float_to_sub_byte(v, st, dst)
            return self.wrap_int(self.float_to_int(v, st, dt_, dst), dst)
        if df:
            if dst in _ROUNDED:
                f = b.uitofp(v, F32) if is_unsigned(src) else b.sitofp(v, F32)
                return self.round_to(f, dst)
            return b.uitofp(v, dt_) if is_unsigned(src) else b.sitofp(v, dt_)
        if st.width == dt_.width:
            return self.wrap_int(v, dst)
        if st.width > dt_.width:
            return self.wrap_int(b.trunc(v, dt_), dst)
        return self.wrap_int(b.zext(v, dt_) if is_unsigned(src) else b.sext(v, dt_), dst)

    def float_to_int(self, v, st, dt_, dst: str):
        """numpy's conversion on x86: through int32 for narrow targets and int32, through int64
        for int64 / uint32; out-of-range and NaN give the "integer indefinite" 0x80...0."""
        b = self.b
        if dst == "uint64":
            ok = b.and_(
                b.fcmp_ordered(">", v, ir.Constant(st, -1.0)),
                b.fcmp_ordered("<", v, ir.Constant(st, 2.0**64)),
            )
            r = b.fptoui(b.select(ok, v, ir.Constant(st, 0.0)), I64)
            return b.select(ok, r, ir.Constant(I64, 1 << 63))
        wide = I64 if dst in ("int64", "uint32") else I32
        lim = 2.0 ** (wide.width - 1)
        ok = b.and_(
            b.fcmp_ordered(">=", v, ir.Constant(st, -lim)),
            b.fcmp_ordered("<", v, ir.Constant(st, lim)),
        )
        r = b.fptosi(b.select(ok, v, ir.Constant(st, 0.0)), wide)
        r = b.select(ok, r, ir.Constant(wide, 1 << (wide.width - 1)))
        if dt_.width < wide.width:
            r = b.trunc(r, dt_)
        return r

    def float_to_sub_byte(self, v, st, dst: str):
        """ONNX's reference for floats to int4 / uint2 ...: truncate toward zero; a result out
        of the type's range, +-inf and NaN give 0 (ml_dtypes >= 0.7), not the wrapped bits."""
        b = self.b
        bits = _SUB_BYTE[dst]
        lo, hi = (
            (0, (1 << bits) - 1)
            if is_unsigned(dst)
            else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        )
        # trunc(v) in [lo, hi]  <=>  lo - 1 < v < hi + 1
        ok = b.and_(
            b.fcmp_ordered(">", v, ir.Constant(st, lo - 1.0)),
            b.fcmp_ordered("<", v, ir.Constant(st, hi + 1.0)),
        )
        return b.fptosi(b.select(ok, v, ir.Constant(st, 0.0)), I8)

    def wrap_int(self, v, dtype: str):
        """Sub-byte integers (int4, uint2, ...) live in an i8: keep them in their range."""
        bits = _SUB_BYTE.get(dtype)
        if bits is None:
            return v
        b = self.b
        sh = ir.Constant(I8, 8 - bits)
        if is_unsigned(dtype):
            return b.and_(v, ir.Constant(I8, (1 << bits) - 1))
        return b.ashr(b.shl(v, sh), sh)

    def round_to(self, v, dtype: str):
        """A float value rounded to the precision of `dtype` (half / bfloat16 / float8)."""
        if dtype in _ROUNDED:
            return self.from_storage(self.to_storage(v, dtype), dtype)
        return v

    def call(self, e: Call):
        b = self.b
        if e.name == "entropy":  # the C runtime's fresh 64-bit seed
            return b.call(self.ctx.declare("relay_entropy", I64, []), [])
        if e.name == "check_index":
            return self.check_index(*[self.val(a) for a in e.args])
        args = [self.val(a) for a in e.args]
        name = e.name
        a0 = args[0]
        t = a0.type
        fl = _fp(t)
        if name in ("isnan", "isinf", "isfinite"):
            if name == "isnan":
                return b.fcmp_unordered("uno", a0, a0)
            ab = b.call(self.ctx.intrinsic("fabs", t), [a0])
            inf = _splat_const(t, math.inf)
            return b.fcmp_ordered("==" if name == "isinf" else "!=", ab, inf)
        if not fl:
            if name == "abs":
                neg = b.icmp_signed("<", a0, ir.Constant(t, 0))
                return b.select(neg, b.neg(a0), a0)
            if name == "pow":
                return self.int_pow(a0, args[1])
            if name == "popcount":
                return b.call(self.ctx.intrinsic("ctpop", t), [a0])
            raise CodegenError(f"{name} is not defined for {e.args[0].dtype}")
        if name == "abs":
            return b.call(self.ctx.intrinsic("fabs", t), [a0])
        if name == "rsqrt":
            s = b.call(self.ctx.intrinsic("sqrt", t), [a0])
            return b.fdiv(_splat_const(t, 1.0), s)
        if name == "fmod":
            return b.frem(a0, args[1])
        if (t == F32 or (isinstance(t, ir.VectorType) and t.element == F32)) and name in POLY_F32:
            return POLY_F32[name](b, a0)
        if name == "sigmoid":
            e_ = self.libm("exp", t, [b.fneg(a0)])
            return b.fdiv(ir.Constant(t, 1.0), b.fadd(ir.Constant(t, 1.0), e_))
        if name in _LLVM_INTR:
            return b.call(self.ctx.intrinsic(_LLVM_INTR[name], t, len(args)), args)
        if name in _LIBM:
            return self.libm(name, t, args)
        raise CodegenError(f"unknown intrinsic {name}")

    def check_index(self, v, n, shown):
        """v if 0 <= v < n; else report it to the C runtime and read element 0 instead."""
        b = self.b
        self.ctx.has_checks = True
        ok = b.icmp_unsigned("<", v, n)
        bad = self.fn.append_basic_block("oob")
        cont = self.fn.append_basic_block("oob.end")
        with b.goto_block(bad):
            fn = self.ctx.declare("relay_index_error", ir.VoidType(), [I64, I64])
            b.call(fn, [shown, n])
            b.branch(cont)
        b.cbranch(ok, cont, bad).set_weights([1000, 1])
        b.position_at_end(cont)
        return b.select(ok, v, ir.Constant(I64, 0))

    def libm(self, name: str, t, args):
        cname = name + ("f" if t == F32 else "")
        fn = self.ctx.declare(cname, t, [t] * len(args))
        return self.b.call(fn, args)

    def int_pow(self, base, exp):
        """base ** exp for exp >= 0 by squaring (wrapping like numpy)."""
        b = self.b
        t = base.type
        pre = b.block
        loop = self.fn.append_basic_block("ipow")
        done = self.fn.append_basic_block("ipow.end")
        one = ir.Constant(t, 1)
        b.branch(loop)
        b.position_at_end(loop)
        r = b.phi(t)
        x = b.phi(t)
        n = b.phi(exp.type)
        r.add_incoming(one, pre)
        x.add_incoming(base, pre)
        n.add_incoming(exp, pre)
        cont = b.icmp_signed(">", n, ir.Constant(n.type, 0))
        odd = b.trunc(n, I1)
        r2 = b.select(b.and_(cont, odd), b.mul(r, x), r)
        x2 = b.mul(x, x)
        n2 = b.lshr(n, ir.Constant(n.type, 1))
        r.add_incoming(r2, loop)
        x.add_incoming(x2, loop)
        n.add_incoming(n2, loop)
        b.cbranch(cont, loop, done)
        b.position_at_end(done)
        return r2


def _known_float(v) -> float | None:
    """The value of a float constant, scalar or a vector of one value, else None."""
    if not isinstance(v, ir.Constant):
        return None
    if isinstance(v.type, ir.VectorType):
        lanes = v.constant if isinstance(v.constant, list) else None
        vals = {_known_float(q) for q in lanes} if lanes else {None}
        return vals.pop() if len(vals) == 1 else None
    if isinstance(v.type, (ir.FloatType, ir.DoubleType, ir.HalfType)):
        return float(v.constant)
    return None


def _x86_lanes(t) -> int | None:
    """Lanes of the widest x86 vector the target has that evenly cuts float vector type t
    into a power-of-two number of pieces, else None (not x86, not a float vector)."""
    from .llvm_target import host

    if not isinstance(t, ir.VectorType) or t.element not in (F32, F64):
        return None
    triple, _, feats = host()
    if not triple.startswith(("x86_64", "i686")):
        return None
    feats = feats.split(",")
    size = 32 if t.element == F32 else 64
    for bits, need in ((512, "+avx512f"), (256, "+avx"), (128, None)):
        n = bits // size
        pieces = t.count // n
        if t.count % n == 0 and pieces & (pieces - 1) == 0 and (need is None or need in feats):
            return n
    return None
