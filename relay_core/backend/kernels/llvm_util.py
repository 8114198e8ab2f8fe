"""Small llvmlite helpers shared by the kernel generators: types, constants, loops, intrinsics.

Loops are built with phi nodes (`for_range`, `for_carry`); scratch scalars use allocas placed in
the entry block, which LLVM's mem2reg turns into registers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import contextmanager

import llvmlite.ir as ir

VOID = ir.VoidType()
I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F16 = ir.HalfType()
F32 = ir.FloatType()
F64 = ir.DoubleType()
I8P = ir.PointerType(I8)
F32P = ir.PointerType(F32)
V8F = ir.VectorType(F32, 8)
V8FP = ir.PointerType(V8F)

_DTYPES = {
    "float32": F32,
    "float64": F64,
    "float16": F16,
    "bfloat16": I16,  # stored as raw bits; see load_as / store_from
    "bool": I8,
    "int8": I8,
    "uint8": I8,
    "int16": I16,
    "uint16": I16,
    "int32": I32,
    "uint32": I32,
    "int64": I64,
    "uint64": I64,
}


def llvm_type(dtype: str) -> ir.Type:
    """The LLVM storage type of a tensor element of `dtype`."""
    try:
        return _DTYPES[dtype]
    except KeyError:
        raise NotImplementedError(f"kernels do not support dtype {dtype}") from None


def is_float_dtype(dtype: str) -> bool:
    return dtype in ("float16", "bfloat16", "float32", "float64")


def is_unsigned(dtype: str) -> bool:
    return dtype.startswith("uint") or dtype == "bool"


def ptr(t: ir.Type) -> ir.PointerType:
    return ir.PointerType(t)


def i64(v: int) -> ir.Constant:
    return ir.Constant(I64, int(v))


def i32(v: int) -> ir.Constant:
    return ir.Constant(I32, int(v))


def f32(v: float) -> ir.Constant:
    return ir.Constant(F32, float(v))


def const(t: ir.Type, v) -> ir.Constant:
    """A constant of scalar or vector type `t` (vectors are splatted)."""
    if isinstance(t, ir.VectorType):
        return ir.Constant(t, [ir.Constant(t.element, v)] * t.count)
    if isinstance(t, (ir.FloatType, ir.DoubleType, ir.HalfType)):
        return ir.Constant(t, float(v))
    return ir.Constant(t, int(v))


def as_i64(b: ir.IRBuilder, v) -> ir.Value:
    """An i64 value from a Python int or an integer value of any width (sign-extended)."""
    if isinstance(v, int):
        return i64(v)
    if v.type == I64:
        return v
    return b.sext(v, I64) if v.type.width < 64 else b.trunc(v, I64)


# ---------------------------------------------------------------------------------------------
# Declarations.


def declare(llmod: ir.Module, name: str, ret: ir.Type, args: Sequence[ir.Type], var_arg=False):
    """The function `name` of the module, declared if absent."""
    g = llmod.globals.get(name)
    if g is not None:
        return g
    return ir.Function(llmod, ir.FunctionType(ret, list(args), var_arg=var_arg), name=name)


def intrinsic(llmod: ir.Module, name: str, ret: ir.Type, args: Sequence[ir.Type]):
    return declare(llmod, name, ret, args)


def prefetch(b: ir.IRBuilder, p: ir.Value, idx, locality: int = 2) -> None:
    """A read prefetch of the cache line holding p[idx] (locality 3 = L1 ... 1 = L3); never
    faults, so the address may lie past the end of the buffer."""
    i8p = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    fn = intrinsic(b.module, "llvm.prefetch.p0", ir.VoidType(), [i8p, i32, i32, i32])
    b.call(
        fn,
        [
            b.bitcast(gep(b, p, idx), i8p),
            ir.Constant(i32, 0),
            ir.Constant(i32, locality),
            ir.Constant(i32, 1),
        ],
    )


def fma(b: ir.IRBuilder, x, y, z):
    """x * y + z as one fused multiply-add (scalar or vector float)."""
    t = x.type
    suffix = _type_suffix(t)
    fn = intrinsic(b.module, f"llvm.fma.{suffix}", t, [t, t, t])
    return b.call(fn, [x, y, z])


def _type_suffix(t: ir.Type) -> str:
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{_type_suffix(t.element)}"
    if isinstance(t, ir.FloatType):
        return "f32"
    if isinstance(t, ir.DoubleType):
        return "f64"
    if isinstance(t, ir.HalfType):
        return "f16"
    return f"i{t.width}"


def call_intrinsic(b: ir.IRBuilder, base: str, args: list, ret: ir.Type | None = None):
    """`llvm.<base>.<type>` (e.g. maxnum, minnum, floor, sqrt) applied to `args`."""
    t = args[0].type
    fn = intrinsic(b.module, f"llvm.{base}.{_type_suffix(t)}", ret or t, [a.type for a in args])
    return b.call(fn, args)


def malloc(b: ir.IRBuilder, nbytes) -> ir.Value:
    """A 64-byte aligned heap block of `nbytes` (returned pointer is i8*); free with `free`."""
    fn = declare(b.module, "aligned_alloc", I8P, [I64, I64])
    size = as_i64(b, nbytes)
    size = b.and_(b.add(size, i64(63 + 64)), i64(~63))  # aligned_alloc needs a multiple of 64
    return b.call(fn, [i64(64), size])


def free(b: ir.IRBuilder, p: ir.Value) -> None:
    fn = declare(b.module, "free", VOID, [I8P])
    b.call(fn, [b.bitcast(p, I8P)])


def memset0(b: ir.IRBuilder, p: ir.Value, nbytes) -> None:
    fn = intrinsic(b.module, "llvm.memset.p0i8.i64", VOID, [I8P, I8, I64, I1])
    b.call(fn, [b.bitcast(p, I8P), ir.Constant(I8, 0), as_i64(b, nbytes), ir.Constant(I1, 0)])


def memcpy(b: ir.IRBuilder, dst: ir.Value, src: ir.Value, nbytes) -> None:
    fn = intrinsic(b.module, "llvm.memcpy.p0i8.p0i8.i64", VOID, [I8P, I8P, I64, I1])
    b.call(fn, [b.bitcast(dst, I8P), b.bitcast(src, I8P), as_i64(b, nbytes), ir.Constant(I1, 0)])


# ---------------------------------------------------------------------------------------------
# Memory.


def gep(b: ir.IRBuilder, p: ir.Value, idx) -> ir.Value:
    return b.gep(p, [as_i64(b, idx)], inbounds=True)


def load(b: ir.IRBuilder, p: ir.Value, idx=None) -> ir.Value:
    return b.load(p if idx is None else gep(b, p, idx))


def store(b: ir.IRBuilder, v: ir.Value, p: ir.Value, idx=None) -> None:
    b.store(v, p if idx is None else gep(b, p, idx))


def _align(t: ir.Type) -> int:
    if isinstance(t, ir.HalfType):
        return 2
    if isinstance(t, ir.FloatType):
        return 4
    if isinstance(t, ir.DoubleType):
        return 8
    return max(1, t.width // 8)


def vload(b: ir.IRBuilder, p: ir.Value, idx, n: int = 8) -> ir.Value:
    """An unaligned load of n consecutive elements starting at p[idx]."""
    et = p.type.pointee
    return b.load(b.bitcast(gep(b, p, idx), ptr(ir.VectorType(et, n))), align=_align(et))


def vstore(b: ir.IRBuilder, v: ir.Value, p: ir.Value, idx) -> None:
    b.store(v, b.bitcast(gep(b, p, idx), ptr(v.type)), align=_align(v.type.element))


def vector_width() -> int:
    """Floats per vector register on the target being built (llvm_target.host(), after
    RELAY_CPU_FEATURES): 16 with AVX-512, else 8."""
    from ..llvm_target import host

    return 16 if "+avx512f" in host()[2].split(",") else 8


# CPUs that run a 16-lane FMA as two 8-lane halves: no more multiply-adds per cycle than with
# AVX2 (AMD Zen 4), against two full-width FMA units on Intel's AVX-512 server cores (where the
# AVX-512 rules were measured)
HALF_RATE_512 = ("znver4",)


def half_rate_512() -> bool:
    """Whether the target has AVX-512 but multiply-adds 16-lane vectors at half rate, so that
    arithmetic is dearer against memory traffic than on the cores the AVX-512 rules assume."""
    from ..llvm_target import host

    return vector_width() == 16 and host()[1] in HALF_RATE_512


def _masked_intrinsic(b: ir.IRBuilder, name: str, vt: ir.VectorType) -> ir.Function:
    """llvm.masked.load / llvm.masked.store of float vectors `vt` (declared once per module)."""
    full = f"llvm.masked.{name}.v{vt.count}f32.p0v{vt.count}f32"
    fn = b.module.globals.get(full)
    if fn is None:
        mt = ir.VectorType(I1, vt.count)
        if name == "load":
            fnt = ir.FunctionType(vt, [vt.as_pointer(), I32, mt, vt])
        else:
            fnt = ir.FunctionType(VOID, [vt, vt.as_pointer(), I32, mt])
        fn = ir.Function(b.module, fnt, name=full)
    return fn


def lanes_below(width: int, n: int) -> ir.Constant:
    """A <width x i1> constant with the first n lanes set (a mask known at compile time)."""
    return ir.Constant(ir.VectorType(I1, width), [int(j < n) for j in range(width)])


def masked_load(b: ir.IRBuilder, p: ir.Value, idx, mask: ir.Value, fill) -> ir.Value:
    """The float32 lanes of p[idx:idx + len(mask)] where `mask` is set, `fill` (a float, or a
    vector whose lanes are kept) elsewhere (the others are not read: no fault past a buffer's
    end)."""
    vt = ir.VectorType(F32, mask.type.count)
    fn = _masked_intrinsic(b, "load", vt)
    fv = fill if isinstance(fill, ir.Value) else const(vt, fill)
    return b.call(fn, [b.bitcast(gep(b, p, idx), vt.as_pointer()), i32(4), mask, fv])


def masked_store(b: ir.IRBuilder, v: ir.Value, p: ir.Value, idx, mask: ir.Value) -> None:
    """Store the lanes of float32 vector `v` where `mask` is set to p[idx:idx + len(mask)]."""
    fn = _masked_intrinsic(b, "store", v.type)
    b.call(fn, [v, b.bitcast(gep(b, p, idx), v.type.as_pointer()), i32(4), mask])


def splat(b: ir.IRBuilder, x: ir.Value, n: int = 8) -> ir.Value:
    """A vector of n copies of scalar x."""
    vt = ir.VectorType(x.type, n)
    v = b.insert_element(ir.Constant(vt, ir.Undefined), x, i32(0))
    return b.shuffle_vector(
        v, ir.Constant(vt, ir.Undefined), ir.Constant(ir.VectorType(I32, n), [0] * n)
    )


def entry_alloca(b: ir.IRBuilder, t: ir.Type, count: int | None = None, name: str = "") -> ir.Value:
    """An alloca at the start of the function's entry block (allocated once, promotable)."""
    entry = b.function.entry_basic_block
    tmp = ir.IRBuilder(entry)
    tmp.position_at_start(entry)
    a = tmp.alloca(t, size=None if count is None else i64(count), name=name)
    if b.block is entry:  # keep b's insertion point after the new instruction
        b._anchor += 1  # noqa: SLF001
    return a


# ---------------------------------------------------------------------------------------------
# Control flow.


@contextmanager
def for_range(b: ir.IRBuilder, start, stop, step=1, name: str = "i"):
    """`for i in range(start, stop, step)` (step > 0, an int or an i64 value); yields the i64
    induction value."""
    start, stop = as_i64(b, start), as_i64(b, stop)
    pre = b.block
    head = b.append_basic_block(f"{name}.head")
    body = b.append_basic_block(f"{name}.body")
    end = b.append_basic_block(f"{name}.end")
    b.branch(head)
    b.position_at_end(head)
    iv = b.phi(I64, name=name)
    iv.add_incoming(start, pre)
    b.cbranch(b.icmp_signed("<", iv, stop), body, end)
    b.position_at_end(body)
    yield iv
    nxt = b.add(iv, as_i64(b, step), name=f"{name}.next")
    iv.add_incoming(nxt, b.block)
    b.branch(head)
    b.position_at_end(end)


def for_carry(
    b: ir.IRBuilder,
    start,
    stop,
    init: list[ir.Value],
    body: Callable[[ir.Value, list[ir.Value]], list[ir.Value]],
    step: int = 1,
    name: str = "k",
) -> list[ir.Value]:
    """A loop with loop-carried values in phis: returns the values after the last iteration."""
    start, stop = as_i64(b, start), as_i64(b, stop)
    pre = b.block
    head = b.append_basic_block(f"{name}.head")
    bodyb = b.append_basic_block(f"{name}.body")
    end = b.append_basic_block(f"{name}.end")
    b.branch(head)
    b.position_at_end(head)
    iv = b.phi(I64, name=name)
    iv.add_incoming(start, pre)
    phis = []
    for v in init:
        p = b.phi(v.type)
        p.add_incoming(v, pre)
        phis.append(p)
    b.cbranch(b.icmp_signed("<", iv, stop), bodyb, end)
    b.position_at_end(bodyb)
    new = body(iv, phis)
    latch = b.block
    iv.add_incoming(b.add(iv, i64(step)), latch)
    for p, v in zip(phis, new):
        p.add_incoming(v, latch)
    b.branch(head)
    b.position_at_end(end)
    return phis


def imin(b: ir.IRBuilder, x, y):
    x, y = as_i64(b, x), as_i64(b, y)
    return b.select(b.icmp_signed("<", x, y), x, y)


def imax(b: ir.IRBuilder, x, y):
    x, y = as_i64(b, x), as_i64(b, y)
    return b.select(b.icmp_signed(">", x, y), x, y)


def floordiv(b: ir.IRBuilder, x, d: int):
    """Floor division of an i64 by a positive constant (correct for negative x)."""
    x = as_i64(b, x)
    q = b.sdiv(x, i64(d))
    r = b.srem(x, i64(d))
    return b.select(b.icmp_signed("<", r, i64(0)), b.sub(q, i64(1)), q)


def floordiv_rt(b: ir.IRBuilder, x, d):
    """Floor division of i64 x by a positive i64 value d (correct for negative x)."""
    x, d = as_i64(b, x), as_i64(b, d)
    q = b.sdiv(x, d)
    r = b.srem(x, d)
    return b.select(b.icmp_signed("<", r, i64(0)), b.sub(q, i64(1)), q)


def clamp(b: ir.IRBuilder, x, lo, hi):
    return imin(b, imax(b, x, lo), hi)


def ceildiv(b: ir.IRBuilder, x, d: int):
    """Ceiling division of a non-negative i64 by a positive constant."""
    return b.udiv(b.add(as_i64(b, x), i64(d - 1)), i64(d))


def udiv_const(b: ir.IRBuilder, x, d: int):
    return b.udiv(as_i64(b, x), i64(d)) if d != 1 else as_i64(b, x)


def unravel(b: ir.IRBuilder, flat, dims: Sequence) -> list[ir.Value]:
    """Row-major multi-index of a flat i64 offset into `dims`: ints, or i64 values (extents
    known at run time)."""
    flat = as_i64(b, flat)
    out = []
    for d in reversed(dims[1:]):
        if isinstance(d, int) and d == 1:
            out.append(i64(0))
            continue
        d = i64(d) if isinstance(d, int) else d
        out.append(b.urem(flat, d))
        flat = b.udiv(flat, d)
    out.append(flat if dims else None)
    return list(reversed(out)) if dims else []


def extents(shape: Sequence, values: Sequence) -> list[ir.Value]:
    """A run-time-shaped kernel's extents as i64 values: the compile-time ones of `shape` as
    constants, the others its arguments `values` (passed for every dim, in order)."""
    return [i64(d) if isinstance(d, int) else v for d, v in zip(shape, values)]


def product(b: ir.IRBuilder, dims: Sequence[ir.Value]) -> ir.Value:
    """The product of i64 values (1 for none)."""
    out = i64(1)
    for d in dims:
        out = b.mul(out, d)
    return out


def new_function(
    llmod: ir.Module, name: str, arg_types: Sequence[ir.Type], internal: bool = False
) -> tuple[ir.Function, ir.IRBuilder]:
    """A void function with an entry block and a builder positioned in it."""
    fn = ir.Function(llmod, ir.FunctionType(VOID, list(arg_types)), name=name)
    if internal:
        fn.linkage = "internal"
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    return fn, b


# ---------------------------------------------------------------------------------------------
# Conversions between storage and compute types.


def compute_type(dtype: str) -> ir.Type:
    """The type arithmetic on `dtype` runs in (half / bfloat16 compute in float)."""
    if dtype in ("float16", "bfloat16"):
        return F32
    return llvm_type(dtype)


def convert(b: ir.IRBuilder, v: ir.Value, src: str, dst: str) -> ir.Value:
    """Convert a value held in compute_type(src) to compute_type(dst) with numpy astype rules
    (floats to ints truncate toward zero; bool is x != 0)."""
    st, dtt = compute_type(src), compute_type(dst)
    if dst == "bool":
        z = const(v.type, 0)
        nz = b.fcmp_unordered("!=", v, z) if is_float_dtype(src) else b.icmp_unsigned("!=", v, z)
        return b.zext(nz, dtt)
    if st == dtt:
        return v
    sf, df = is_float_dtype(src), is_float_dtype(dst)
    if sf and df:
        return b.fpext(v, dtt) if _fbits(st) < _fbits(dtt) else b.fptrunc(v, dtt)
    if sf:
        return b.fptoui(v, dtt) if is_unsigned(dst) else b.fptosi(v, dtt)
    if df:
        return b.uitofp(v, dtt) if is_unsigned(src) else b.sitofp(v, dtt)
    if st.width < dtt.width:
        return b.zext(v, dtt) if is_unsigned(src) else b.sext(v, dtt)
    return b.trunc(v, dtt) if st.width > dtt.width else v


def _fbits(t: ir.Type) -> int:
    return {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}[type(t)]


def load_as(b: ir.IRBuilder, p: ir.Value, idx, dtype: str) -> ir.Value:
    """Load element p[idx] of `dtype` and widen it to compute_type(dtype)."""
    v = load(b, p, idx)
    if dtype == "float16":
        return b.fpext(v, F32)
    if dtype == "bfloat16":
        return b.bitcast(b.shl(b.zext(v, I32), i32(16)), F32)
    return v


def store_from(b: ir.IRBuilder, v: ir.Value, p: ir.Value, idx, dtype: str) -> None:
    """Store a compute_type(dtype) value into p[idx] of `dtype` (rounding to nearest even)."""
    if dtype == "float16":
        v = b.fptrunc(v, F16)
    elif dtype == "bfloat16":
        bits = b.bitcast(v, I32)
        lsb = b.and_(b.lshr(bits, i32(16)), i32(1))
        rounded = b.add(bits, b.add(i32(0x7FFF), lsb))
        isnan = b.fcmp_unordered("uno", v, v)
        rounded = b.select(isnan, b.or_(bits, i32(0x400000)), rounded)
        v = b.trunc(b.lshr(rounded, i32(16)), I16)
    store(b, v, p, idx)
