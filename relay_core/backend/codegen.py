"""LLVM IR for loop-IR kernels (llvmlite.ir).

Types: every dtype has a storage type (how it sits in memory) and a compute type (what
arithmetic runs in): bool is i8 / i1, float16 and bfloat16 are stored as half / i16 and computed
in float. Floating-point arithmetic carries `contract` (so FMAs form); reductions carry
`reassoc` too (so they vectorise). A parallel loop is outlined into a function run by
`GOMP_parallel` with the kernel's explicit thread count; each thread takes one contiguous chunk.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir

from ..errors import RelayError
from ..ir import dtype as _dt
from ..te.expr import Binary, Call, Cast, Compare, Const, Load, PrimExpr, Select, Unary, Var
from ..te.visit import operands
from . import tir as T
from .llvm_math import POLY_F32

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
    if dtype in _SUB_BYTE:  # ml_dtypes keeps one element per byte
        return I8
    raise CodegenError(f"the LLVM backend does not support dtype {dtype}")


def compute_type(dtype: str) -> ir.Type:
    if dtype == "bool":
        return I1
    if dtype in ("float16", "bfloat16", "float32"):
        return F32
    return storage_type(dtype)


_SUB_BYTE = {"int4": 4, "uint4": 4, "int2": 2, "uint2": 2}
_ROUNDED = ("float16", "bfloat16")


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


class ModuleContext:
    """Per-LLVM-module state: declarations and externally emitted kernels."""

    def __init__(self, llmod: ir.Module):
        self.llmod = llmod
        self.decls: dict[str, ir.Function] = {}
        self.externs: set[str] = set()
        self.counter = 0
        self.consts: dict = {}

    def const_data(self, buf) -> ir.Value:
        """A module-level read-only array holding `buf.data` (deduplicated by content)."""
        arr = np.ascontiguousarray(buf.data)
        st = storage_type(buf.dtype)
        if buf.dtype == "bool":
            arr = arr.astype(np.uint8)
        key = (buf.dtype, arr.shape, arr.tobytes())
        g = self.consts.get(key)
        if g is None:
            flat = arr.reshape(-1)
            if isinstance(st, ir.IntType):
                vals = [ir.Constant(st, int(v) & ((1 << st.width) - 1)) for v in flat.tolist()]
            else:
                vals = [ir.Constant(st, float(v)) for v in flat.tolist()]
            aty = ir.ArrayType(st, max(len(vals), 1))
            g = ir.GlobalVariable(self.llmod, aty, self.unique("table"))
            g.initializer = ir.Constant(aty, vals or [ir.Constant(st, 0)])
            g.global_constant = True
            g.linkage = "internal"
            self.consts[key] = g
        return g.gep([ir.Constant(I32, 0), ir.Constant(I32, 0)])

    def unique(self, base: str) -> str:
        self.counter += 1
        return f"{base}.{self.counter}"

    def declare(self, name: str, ret: ir.Type, args: list) -> ir.Function:
        fn = self.decls.get(name) or self.llmod.globals.get(name)
        if fn is None:
            fn = ir.Function(self.llmod, ir.FunctionType(ret, args), name)
        self.decls[name] = fn
        return fn

    def intrinsic(self, name: str, t: ir.Type, nargs: int = 1) -> ir.Function:
        suffix = {F32: "f32", F64: "f64"}.get(t)
        if suffix is None:
            if isinstance(t, ir.IntType):
                suffix = f"i{t.width}"
            else:
                suffix = f"v{t.count}f32"
        return self.declare(f"llvm.{name}.{suffix}", t, [t] * nargs)

    def gomp(self):
        ctxp = PTR
        fnty = ir.FunctionType(VOID, [ctxp])
        par = self.declare("GOMP_parallel", VOID, [fnty.as_pointer(), ctxp, I32, I32])
        tn = self.declare("omp_get_thread_num", I32, [])
        nt = self.declare("omp_get_num_threads", I32, [])
        return par, tn, nt


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


class KernelCodegen:
    """Emits one `tir.Kernel` as `void name(params..., i32 nthreads)`."""

    def __init__(self, ctx: ModuleContext, kernel: T.Kernel, linkage: str = "internal"):
        self.ctx = ctx
        self.kernel = kernel
        self.linkage = linkage

    def emit(self) -> ir.Function:
        k = self.kernel
        argtys = [
            storage_type(p.dtype).as_pointer() if isinstance(p, T.Buffer) else compute_type(p.dtype)
            for p in k.params
        ] + [I32]
        fn = ir.Function(self.ctx.llmod, ir.FunctionType(VOID, argtys), k.name)
        fn.linkage = self.linkage
        env = _Env()
        for p, a in zip(k.params, fn.args):
            a.name = p.name
            if isinstance(p, T.Buffer):
                a.add_attribute("noalias")
                env.bufs[p.id] = a
            else:
                env.vars[id(p)] = a
        env.nthreads = fn.args[-1]
        em = _FuncEmitter(self.ctx, fn, env)
        if not k.contract:
            em.fm, em.fm_red = (), ("reassoc", "nsz")
        em.body(k.body)
        return fn


class ExprEmitter:
    """Scalar PrimExprs emitted with an existing builder (shapes and values computed by the
    caller of a kernel): `ExprEmitter(ctx, builder, {id(var): value})(expr)`."""

    def __init__(self, ctx: ModuleContext, b: ir.IRBuilder, values: dict):
        em = _FuncEmitter.__new__(_FuncEmitter)
        em.ctx, em.fn, em.b = ctx, b.function, b
        em.env = _Env()
        em.env.vars.update(values)
        em.scopes, em.has_load, em.local_bufs = [{}], {}, {}
        em.fm, em.fm_red = FM, FM_RED
        self.em = em

    def __call__(self, e):
        if isinstance(e, int):
            return ir.Constant(I64, e)
        v = self.em.expr(e)
        if e.dtype != "int64":
            v = self.em.cast(v, e.dtype, "int64")
        return v


class _Env:
    def __init__(self):
        self.vars: dict[int, ir.Value] = {}
        self.bufs: dict[int, ir.Value] = {}
        self.nthreads = None


class _FuncEmitter:
    """Emits statements into one LLVM function (a kernel or an outlined parallel body)."""

    def __init__(self, ctx: ModuleContext, fn: ir.Function, env: _Env):
        self.ctx = ctx
        self.fn = fn
        self.env = env
        self.entry = fn.append_basic_block("entry")
        self.b = ir.IRBuilder(self.entry)
        self.alloca_builder = ir.IRBuilder(self.entry)
        self.scopes: list[dict] = [{}]
        self.has_load: dict[int, bool] = {}
        self.local_bufs: dict[int, str] = {}
        self.fm, self.fm_red = FM, FM_RED

    def body(self, s: T.Stmt) -> None:
        start = self.fn.append_basic_block("start")
        self.b.position_at_end(start)
        self.stmt(s)
        self.b.ret_void()
        self.alloca_builder.position_at_end(self.entry)
        self.alloca_builder.branch(start)

    # -- statements ----------------------------------------------------------------------------
    def stmt(self, s: T.Stmt) -> None:
        t = type(s)
        if t is T.Seq:
            for x in s.stmts:
                self.stmt(x)
        elif t is T.For:
            if s.kind == "parallel":
                self.parallel_for(s)
            else:
                self.serial_for(s)
        elif t is T.Store:
            self.store(s.buffer, self.expr(s.index), self.expr(s.value), s.value.dtype)
        elif t is T.ReduceUpdate:
            self.reduce_update(s)
        elif t is T.IfThenElse:
            c = self.expr(s.cond)
            with self.b.if_else(c) as (then, otherwise):
                with then:
                    self.scoped(s.then)
                with otherwise:
                    if s.else_ is not None:
                        self.scoped(s.else_)
        elif t is T.LetStmt:
            self.env.vars[id(s.var)] = self.expr(s.value)
            self.stmt(s.body)
        elif t is T.Allocate:
            self.allocate(s)
        elif t is T.CallKernel:
            self.call_kernel(s)
        else:
            raise CodegenError(f"cannot emit {t.__name__}")

    def scoped(self, s: T.Stmt) -> None:
        self.scopes.append({})
        try:
            self.stmt(s)
        finally:
            self.scopes.pop()

    def serial_for(self, s: T.For) -> None:
        b = self.b
        begin = self.index(s.begin)
        ext = self.index(s.extent)
        pre = b.block
        loop = self.fn.append_basic_block(f"for.{s.var.name}")
        done = self.fn.append_basic_block(f"end.{s.var.name}")
        b.cbranch(b.icmp_signed("<", begin, ext), loop, done)
        b.position_at_end(loop)
        i = b.phi(I64, name=s.var.name)
        i.add_incoming(begin, pre)
        self.env.vars[id(s.var)] = i
        self.scoped(s.body)
        nxt = b.add(i, ir.Constant(I64, 1), flags=["nsw"])
        i.add_incoming(nxt, b.block)
        b.cbranch(b.icmp_signed("<", nxt, ext), loop, done)
        b.position_at_end(done)

    def parallel_for(self, s: T.For) -> None:
        """Outline the loop body into `void f(i8* ctx)` and run it with GOMP_parallel."""
        free_vars, free_bufs = _free(s)
        captured = [(k, self.env.vars[k]) for k in free_vars if k in self.env.vars]
        captured_bufs = [(k, self.env.bufs[k]) for k in free_bufs if k in self.env.bufs]
        ext = self.index(s.extent)
        begin = self.index(s.begin)
        fields = [v.type for _, v in captured] + [v.type for _, v in captured_bufs] + [I64, I64]
        st = ir.LiteralStructType(fields)
        b = self.b
        slot = self.alloca_builder.alloca(st)
        vals = [v for _, v in captured] + [v for _, v in captured_bufs] + [begin, ext]
        for k, v in enumerate(vals):
            b.store(v, b.gep(slot, [ir.Constant(I32, 0), ir.Constant(I32, k)]))
        fname = self.ctx.unique(self.fn.name + ".par")
        outl = ir.Function(self.ctx.llmod, ir.FunctionType(VOID, [PTR]), fname)
        outl.linkage = "internal"
        par, tn, nt = self.ctx.gomp()
        b.call(par, [outl, b.bitcast(slot, PTR), self.env.nthreads, ir.Constant(I32, 0)])
        # the outlined body
        env = _Env()
        env.nthreads = ir.Constant(I32, 1)  # kernels called inside run single-threaded
        sub = _FuncEmitter(self.ctx, outl, env)
        sub.fm, sub.fm_red = self.fm, self.fm_red
        sb = sub.b
        start = outl.append_basic_block("start")
        sb.position_at_end(start)
        p = sb.bitcast(outl.args[0], st.as_pointer())
        loaded = [
            sb.load(sb.gep(p, [ir.Constant(I32, 0), ir.Constant(I32, k)]))
            for k in range(len(fields))
        ]
        for (k, _), v in zip(captured, loaded):
            env.vars[k] = v
        for (k, _), v in zip(captured_bufs, loaded[len(captured) :]):
            env.bufs[k] = v
        lo0, hi0 = loaded[-2], loaded[-1]
        tid = sb.sext(sb.call(tn, []), I64)
        nth = sb.sext(sb.call(nt, []), I64)
        n = sb.sub(hi0, lo0)
        chunk = sb.sdiv(sb.add(n, sb.sub(nth, ir.Constant(I64, 1))), nth)
        lo = sb.add(lo0, sb.mul(tid, chunk))
        hi = sb.add(lo, chunk)
        hi = sb.select(sb.icmp_signed("<", hi, hi0), hi, hi0)
        lo_var, hi_var = Var("lo"), Var("hi")
        env.vars[id(lo_var)] = lo
        env.vars[id(hi_var)] = hi
        sub.local_bufs = dict(self.local_bufs)
        sub.stmt(T.For(s.var, hi_var, s.body, "serial", lo_var))
        sb.ret_void()
        sub.alloca_builder.position_at_end(sub.entry)
        sub.alloca_builder.branch(start)

    def allocate(self, s: T.Allocate) -> None:
        buf = s.buffer
        b = self.b
        if buf.scope == "local":
            t = compute_type(buf.dtype)
            n = buf.size if isinstance(buf.size, int) else None
            if n is None:
                raise CodegenError("a local buffer needs a static size")
            ptr = self.alloca_builder.alloca(t, size=ir.Constant(I64, n))
            self.env.bufs[buf.id] = ptr
            self.local_bufs[buf.id] = "local"
            self.stmt(s.body)
            return
        st = storage_type(buf.dtype)
        itemsize = (
            max(1, st.width // 8) if isinstance(st, ir.IntType) else {F16: 2, F32: 4, F64: 8}[st]
        )
        nbytes = b.mul(self.index(buf.size), ir.Constant(I64, itemsize))
        nbytes = b.and_(b.add(nbytes, ir.Constant(I64, 63)), ir.Constant(I64, -64))
        nbytes = b.select(
            b.icmp_signed("==", nbytes, ir.Constant(I64, 0)), ir.Constant(I64, 64), nbytes
        )
        alloc = self.ctx.declare("aligned_alloc", PTR, [I64, I64])
        free = self.ctx.declare("free", VOID, [PTR])
        raw = b.call(alloc, [ir.Constant(I64, 64), nbytes])
        self.env.bufs[buf.id] = b.bitcast(raw, st.as_pointer())
        self.stmt(s.body)
        b.call(free, [raw])

    def call_kernel(self, s: T.CallKernel) -> None:
        if s.name not in self.ctx.externs and s.emit is not None:
            s.emit(self.ctx.llmod, s.name)
            self.ctx.externs.add(s.name)
        fn = self.ctx.llmod.globals[s.name]
        args = []
        for a, pt in zip(s.args, fn.function_type.args):
            if isinstance(a, T.Buffer):
                v = self.bufptr(a)
                args.append(self.b.bitcast(v, pt) if v.type != pt else v)
            else:
                v = self.expr(a)
                args.append(self.b.trunc(v, pt) if v.type != pt else v)
        args.append(self.env.nthreads)
        self.b.call(fn, args)

    # -- memory --------------------------------------------------------------------------------
    def bufptr(self, buf: T.Buffer):
        p = self.env.bufs.get(buf.id)
        if p is None and buf.scope == "const":
            p = self.env.bufs[buf.id] = self.ctx.const_data(buf)
        if p is None:
            raise CodegenError(f"buffer {buf.name} is not available in {self.fn.name}")
        return p

    def store(self, buf: T.Buffer, idx, value, dtype: str) -> None:
        b = self.b
        ptr = b.gep(self.bufptr(buf), [idx])
        if self.local_bufs.get(buf.id) == "local":
            b.store(value, ptr)
            return
        b.store(self.to_storage(value, buf.dtype), ptr)

    def load(self, buf: T.Buffer, idx, dtype: str):
        b = self.b
        ptr = b.gep(self.bufptr(buf), [idx])
        v = b.load(ptr)
        if self.local_bufs.get(buf.id) == "local":
            return v
        return self.from_storage(v, buf.dtype)

    def to_storage(self, v, dtype: str):
        b = self.b
        if dtype == "bool":
            return b.zext(v, I8)
        if dtype in _SUB_BYTE:  # ml_dtypes keeps the low bits only
            return b.and_(v, ir.Constant(I8, (1 << _SUB_BYTE[dtype]) - 1))
        if dtype == "float16":
            return b.fptrunc(v, F16)
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
        if dtype in _SUB_BYTE:
            return self.wrap_int(v, dtype)
        if dtype == "float16":
            return b.fpext(v, F32)
        if dtype == "bfloat16":
            return b.bitcast(b.shl(b.zext(v, I32), ir.Constant(I32, 16)), F32)
        return v

    # -- expressions ---------------------------------------------------------------------------
    def index(self, e) -> ir.Value:
        if isinstance(e, int):
            return ir.Constant(I64, e)
        v = self.expr(e)
        if v.type != I64:
            v = self.b.sext(v, I64) if v.type.width < 64 else v
        return v

    def lookup(self, e):
        for sc in reversed(self.scopes):
            v = sc.get(id(e))
            if v is not None:
                return v
        return None

    def _guarded(self, e) -> bool:
        """A select whose branches read memory: emitted as a branch (the read may be out of
        bounds when not taken, e.g. padding)."""
        if type(e) is not Select:
            return False
        return self._reads(e.t) or self._reads(e.f)

    def _reads(self, e) -> bool:
        r = self.has_load.get(id(e))
        if r is None:
            stack, found = [e], False
            seen = set()
            while stack:
                n = stack.pop()
                if id(n) in seen:
                    continue
                seen.add(id(n))
                if type(n) is Load:
                    found = True
                    break
                stack.extend(operands(n))
            r = self.has_load[id(e)] = found
        return r

    def expr(self, root: PrimExpr) -> ir.Value:
        v = self.lookup(root)
        if v is not None:
            return v
        # operands first, iteratively; guarded selects evaluate only their condition first
        order, seen = [], set()
        stack = [(root, False)]
        while stack:
            n, done = stack.pop()
            if done:
                order.append(n)
                continue
            if id(n) in seen or self.lookup(n) is not None:
                continue
            seen.add(id(n))
            stack.append((n, True))
            kids = (n.cond,) if self._guarded(n) else operands(n)
            for c in reversed(kids):
                stack.append((c, False))
        top = self.scopes[-1]
        for n in order:
            if self.lookup(n) is None:
                top[id(n)] = self.node(n)
        return self.lookup(root)

    def val(self, e) -> ir.Value:
        v = self.lookup(e)
        if v is None:
            v = self.expr(e)
        return v

    def node(self, e) -> ir.Value:
        v = self._node(e)
        if e.dtype in _ROUNDED and type(e) in (Binary, Unary, Call):
            v = self.round_to(v, e.dtype)  # numpy rounds every float16 result
        return v

    def _node(self, e) -> ir.Value:
        t = type(e)
        b = self.b
        if t is Const:
            return _const(compute_type(e.dtype), e.dtype, e.value)
        if t is Var:
            v = self.env.vars.get(id(e))
            if v is None:
                raise CodegenError(f"unbound variable {e.name} in kernel {self.fn.name}")
            return v
        if t is Load:
            return self.load(e.buffer, self.val(e.index), e.dtype)
        if t is Binary:
            return self.binary(e.op, self.val(e.a), self.val(e.b), e.a.dtype)
        if t is Compare:
            return self.compare(e.op, self.val(e.a), self.val(e.b), e.a.dtype)
        if t is Unary:
            a = self.val(e.a)
            if e.op == "neg":
                return b.fneg(a) if _fp(a.type) else b.neg(a)
            return b.not_(a)
        if t is Select:
            if self._guarded(e):
                return self.guarded_select(e)
            return b.select(self.val(e.cond), self.val(e.t), self.val(e.f))
        if t is Cast:
            return self.cast(self.val(e.a), e.a.dtype, e.dtype)
        if t is Call:
            return self.call(e)
        raise CodegenError(f"cannot emit {t.__name__} in a kernel")

    def guarded_select(self, e: Select):
        b = self.b
        c = self.val(e.cond)
        then_bb = self.fn.append_basic_block("sel.t")
        else_bb = self.fn.append_basic_block("sel.f")
        merge = self.fn.append_basic_block("sel.end")
        b.cbranch(c, then_bb, else_bb)
        b.position_at_end(then_bb)
        self.scopes.append({})
        tv = self.expr(e.t)
        self.scopes.pop()
        t_end = b.block
        b.branch(merge)
        b.position_at_end(else_bb)
        self.scopes.append({})
        fv = self.expr(e.f)
        self.scopes.pop()
        f_end = b.block
        b.branch(merge)
        b.position_at_end(merge)
        phi = b.phi(tv.type)
        phi.add_incoming(tv, t_end)
        phi.add_incoming(fv, f_end)
        return phi

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
            if op == "max":
                return b.call(self.ctx.intrinsic("maximum", a.type, 2), [a, c])
            if op == "min":
                return b.call(self.ctx.intrinsic("minimum", a.type, 2), [a, c])
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
            if st != dt_:
                v = b.fpext(v, dt_) if dt_ == F64 else b.fptrunc(v, dt_)
            return self.round_to(v, dst)
        if sf:
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
        """A float value rounded to the precision of `dtype` (half / bfloat16)."""
        if dtype in ("float16", "bfloat16"):
            return self.from_storage(self.to_storage(v, dtype), dtype)
        return v

    def call(self, e: Call):
        b = self.b
        if e.name == "entropy":  # the C runtime's fresh 64-bit seed
            return b.call(self.ctx.declare("relay_entropy", I64, []), [])
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

    def reduce_update(self, s: T.ReduceUpdate) -> None:
        b = self.b
        zero = ir.Constant(I64, 0)
        v = self.expr(s.value)
        acc_ptr = b.gep(self.bufptr(s.acc), [zero])
        acc = b.load(acc_ptr)
        fl = isinstance(acc.type, (ir.FloatType, ir.DoubleType))
        k = s.kind
        if k in ("argmax", "argmin"):
            gt = ">" if k == "argmax" else "<"
            if fl:
                better = b.fcmp_ordered(gt if not s.last else gt + "=", v, acc)
                vnan = b.fcmp_unordered("uno", v, v)
                anan = b.fcmp_unordered("uno", acc, acc)
                if s.last:
                    upd = b.or_(vnan, b.and_(b.not_(anan), better))
                else:
                    upd = b.and_(b.not_(anan), b.or_(better, vnan))
            else:
                cmp = b.icmp_unsigned if is_unsigned(s.value.dtype) else b.icmp_signed
                upd = cmp(gt if not s.last else gt + "=", v, acc)
            b.store(b.select(upd, v, acc), acc_ptr)
            ip = b.gep(self.bufptr(s.acc_index), [zero])
            b.store(b.select(upd, self.expr(s.pos), b.load(ip)), ip)
            return
        if fl:
            if k == "sum":
                r = b.fadd(acc, v, flags=self.fm_red)
            elif k == "prod":
                r = b.fmul(acc, v, flags=self.fm_red)
            elif k in ("max", "min"):
                r = b.call(
                    self.ctx.intrinsic("maximum" if k == "max" else "minimum", acc.type, 2),
                    [acc, v],
                )
            else:
                raise CodegenError(f"reduction {k} on floats")
        else:
            uns = is_unsigned(s.value.dtype)
            if k == "sum":
                r = b.or_(acc, v) if acc.type == I1 else b.add(acc, v)
            elif k == "prod":
                r = b.and_(acc, v) if acc.type == I1 else b.mul(acc, v)
            elif k in ("max", "min"):
                cmp = (b.icmp_unsigned if uns else b.icmp_signed)(
                    ">" if k == "max" else "<", v, acc
                )
                r = b.select(cmp, v, acc)
            elif k == "any":
                r = b.or_(acc, v)
            elif k == "all":
                r = b.and_(acc, v)
            else:
                raise CodegenError(f"reduction {k}")
        b.store(r, acc_ptr)


def _free(s: T.Stmt) -> tuple[list[int], list[int]]:
    """ids of Vars and Buffers used inside `s` (bound or not; the caller filters)."""
    vars_, bufs = [], []
    seen_v, seen_b = set(), set()
    exprs: list = []
    stack = [s]
    while stack:
        x = stack.pop()
        t = type(x)
        if t is T.For:
            exprs += [x.extent] if isinstance(x.extent, PrimExpr) else []
            exprs += [x.begin] if isinstance(x.begin, PrimExpr) else []
        elif t is T.Store:
            exprs += [x.index, x.value]
            if x.buffer.id not in seen_b:
                seen_b.add(x.buffer.id)
                bufs.append(x.buffer.id)
        elif t is T.ReduceUpdate:
            exprs.append(x.value)
            if x.pos is not None:
                exprs.append(x.pos)
            for bb in (x.acc, x.acc_index):
                if bb is not None and bb.id not in seen_b:
                    seen_b.add(bb.id)
                    bufs.append(bb.id)
        elif t is T.IfThenElse:
            exprs.append(x.cond)
        elif t is T.LetStmt:
            exprs.append(x.value)
        elif t is T.Allocate:
            if isinstance(x.buffer.size, PrimExpr):
                exprs.append(x.buffer.size)
        elif t is T.CallKernel:
            for a in x.args:
                if isinstance(a, T.Buffer):
                    if a.id not in seen_b:
                        seen_b.add(a.id)
                        bufs.append(a.id)
                else:
                    exprs.append(a)
        stack.extend(T.stmt_children(x))
    seen_e = set()
    while exprs:
        e = exprs.pop()
        if not isinstance(e, PrimExpr) or id(e) in seen_e:
            continue
        seen_e.add(id(e))
        if type(e) is Var:
            if id(e) not in seen_v:
                seen_v.add(id(e))
                vars_.append(id(e))
        elif type(e) is Load:
            if e.buffer.id not in seen_b:
                seen_b.add(e.buffer.id)
                bufs.append(e.buffer.id)
        exprs.extend(operands(e))
    return vars_, bufs
