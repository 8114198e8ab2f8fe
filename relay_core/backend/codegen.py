"""LLVM IR for loop-IR kernels (llvmlite.ir).

Types: every dtype has a storage type (how it sits in memory) and a compute type (what
arithmetic runs in): bool is i8 / i1, float16 and bfloat16 are stored as half / i16 and computed
in float. Floating-point arithmetic carries `contract` (so FMAs form); reductions carry
`reassoc` too (so they vectorise). A parallel loop is outlined into a function run by
the runtime's thread pool (`relay_parallel`, relay_core/backend/c/relay_pool.c) with the kernel's
explicit thread count; the loop is cut into several shards per thread, taken dynamically.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from ..te.expr import Binary, Call, Cast, Compare, Const, Load, PrimExpr, Select, Unary, Var
from ..te.visit import operands
from . import tir as T
from .codegen_arith import ArithMixin
from .kernels.parallel import TASK_FN, Shards, pool_call
from .llvm_types import (  # noqa: F401  (re-exported: the other backend modules import them here)
    _ROUNDED,
    F16,
    F32,
    F64,
    FM,
    FM_RED,
    I1,
    I8,
    I16,
    I32,
    I64,
    PTR,
    VOID,
    CodegenError,
    _const,
    _fp,
    _splat_const,
    compute_type,
    is_unsigned,
    storage_type,
)
from .runtime import _contig


class ModuleContext:
    """Per-LLVM-module state: declarations and externally emitted kernels."""

    def __init__(self, llmod: ir.Module):
        self.llmod = llmod
        self.decls: dict[str, ir.Function] = {}
        self.externs: set[str] = set()
        self.counter = 0
        self.consts: dict = {}
        self.has_checks = False  # some kernel checks indices (relay_error_pending after it)
        self.kernels: list[str] = []  # top-level kernels: one compilation unit each (split.py)

    def const_data(self, buf) -> ir.Value:
        """A module-level read-only array holding `buf.data` (deduplicated by content)."""
        arr = _contig(buf.data)
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
        self.ctx.kernels.append(k.name)
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


class _FuncEmitter(ArithMixin):
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
        """Outline the loop body into `void f(i8* ctx, i8* task, i64 nshards, i64 worker)` and
        run it on the thread pool: each participating thread takes shards of the range until
        none is left."""
        free_vars, free_bufs, checks = _free(s)
        if checks:  # index errors are kept per calling thread: run such loops on it
            self.stmt(T.For(s.var, s.extent, s.body, "serial", s.begin))
            return
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
        outl = ir.Function(self.ctx.llmod, TASK_FN, fname)
        outl.linkage = "internal"
        pool_call(b, outl, b.bitcast(slot, PTR), self.env.nthreads)
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
        shards = Shards(outl)
        n = sb.sub(hi0, lo0)
        n = sb.select(sb.icmp_signed("<", n, ir.Constant(I64, 0)), ir.Constant(I64, 0), n)
        lo, hi = shards.range(sb, n)
        lo_var, hi_var = Var("lo"), Var("hi")
        env.vars[id(lo_var)] = sb.add(lo0, lo)
        env.vars[id(hi_var)] = sb.add(lo0, hi)
        sub.local_bufs = dict(self.local_bufs)
        sub.stmt(T.For(s.var, hi_var, s.body, "serial", lo_var))
        shards.end(sb)
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
        # the runtime's block cache (c/relay_obj.c): the same sizes come back at every call
        alloc = self.ctx.declare("relay_scratch_alloc", PTR, [I64])
        free = self.ctx.declare("relay_scratch_free", VOID, [PTR, I64])
        raw = b.call(alloc, [nbytes])
        self.env.bufs[buf.id] = b.bitcast(raw, st.as_pointer())
        self.stmt(s.body)
        b.call(free, [raw, nbytes])

    def call_kernel(self, s: T.CallKernel) -> None:
        if s.name not in self.ctx.externs and s.emit is not None:
            s.emit(self.ctx.llmod, s.name)
            self.ctx.externs.add(s.name)
        fn = self.ctx.llmod.globals[s.name]
        args = []
        for a, pt in zip(s.args, fn.function_type.args):
            if isinstance(a, T.Offset):
                v = self.b.gep(self.bufptr(a.buffer), [self.index(a.offset)])
                args.append(self.b.bitcast(v, pt) if v.type != pt else v)
            elif isinstance(a, T.Buffer):
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
    """ids of Vars and Buffers used inside `s` (bound or not; the caller filters), and whether
    it checks indices."""
    vars_, bufs, checks = [], [], False
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
                if isinstance(a, T.Offset):
                    exprs.append(a.offset)
                    a = a.buffer
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
        elif type(e) is Call and e.name == "check_index":
            checks = True
        exprs.extend(operands(e))
    return vars_, bufs, checks
