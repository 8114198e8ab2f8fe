"""The simple, correct matrix product for dtypes other than float32.

float64 / float16 / bfloat16 and integer operands (uint8 x int8 -> int32, MatMulInteger): one
output row at a time, accumulated over k in a per-thread row buffer of the accumulation type
(float64 if an operand is float64, float32 for other floats, int64 for integers: exact for 8/16-bit
products, wrapping like numpy for wider ones), then converted to the output dtype.
"""

from __future__ import annotations

import math

from .common import KernelInfo, epilogue_run, kernel_function
from .llvm_util import (
    compute_type,
    const,
    convert,
    for_range,
    free,
    gep,
    i64,
    is_float_dtype,
    load,
    load_as,
    malloc,
    store,
    store_from,
)
from .parallel import clamp_threads, parallel


def accumulate_dtype(*dtypes: str, terms: int | None = None) -> str:
    """float64 / float32 for floats; for integers int64, or int32 when the sum of `terms`
    products of 8-bit values cannot overflow it (then exact, and faster)."""
    if all(is_float_dtype(d) for d in dtypes):
        return "float64" if "float64" in dtypes else "float32"
    small = all(d in ("int8", "uint8", "bool") for d in dtypes)
    if small and terms is not None and terms * 255 * 255 < 2**31:
        return "int32"
    return "int64"


def emit_generic_matmul(llmod, name, in_types, out_types, plan, epilogue=None):
    """A planned matmul (gemm_ops.MatmulPlan) for any supported dtypes."""
    from .gemm_ops import batch_offset, out_indices, zero_fill

    da, db, do = in_types[0].dtype, in_types[1].dtype, out_types[0].dtype
    M, N, K = plan.M, plan.N, plan.K
    acc_dt = accumulate_dtype(da, db, terms=K)
    acc_t = compute_type(acc_dt)
    kf = kernel_function(llmod, name, in_types, out_types, epilogue)
    nbatch = math.prod(plan.batch)
    if M * N * nbatch == 0:
        kf.b.ret_void()
        return KernelInfo(kf.fn)
    if K == 0:
        zero_fill(kf, plan.out_dims, do)
        kf.b.ret_void()
        return KernelInfo(kf.fn)
    isf = is_float_dtype(acc_dt)
    nt = clamp_threads(kf.b, kf.nthreads, 2.0 * nbatch * M * N * K, nbatch * M)

    def body(b, vals, sh):
        a_ptr, b_ptr, c_ptr = vals[0], vals[1], vals[2]
        extras = vals[3:]
        acc = b.bitcast(malloc(b, i64(N * 8)), acc_t.as_pointer())
        u0, u1 = sh.range(b, nbatch * M)
        with for_range(b, u0, u1, name="row") as u:
            bidx = b.udiv(u, i64(M))
            m = b.urem(u, i64(M))
            a_off = b.add(
                batch_offset(b, bidx, plan.batch, plan.a_bstrides), b.mul(m, i64(plan.a_rs))
            )
            b_off = b.mul(batch_offset(b, bidx, plan.batch, plan.b_bmat), i64(K * N))
            with for_range(b, 0, N, name="z") as n:
                store(b, const(acc_t, 0), acc, n)
            with for_range(b, 0, K, name="k") as k:
                av = load_as(b, a_ptr, b.add(a_off, b.mul(k, i64(plan.a_cs))), da)
                av = convert(b, av, da, acc_dt)
                brow = b.add(b_off, b.mul(k, i64(plan.b_rs)))
                with for_range(b, 0, N, name="n") as n:
                    bv = load_as(b, b_ptr, b.add(brow, b.mul(n, i64(plan.b_cs))), db)
                    bv = convert(b, bv, db, acc_dt)
                    old = load(b, acc, n)
                    new = b.fadd(old, b.fmul(av, bv)) if isf else b.add(old, b.mul(av, bv))
                    store(b, new, acc, n)
            row = gep(b, c_ptr, b.mul(u, i64(N)))
            with for_range(b, 0, N, name="o") as n:
                store_from(b, convert(b, load(b, acc, n), acc_dt, do), row, n, do)
            epilogue_run(b, kf.ep, extras, row, N, out_indices(b, plan, bidx, m, i64(0)), do)
        sh.end(b)
        free(b, acc)

    parallel(kf.b, kf.fn.name, kf.ins + kf.outs + kf.extras, nt, body)
    kf.b.ret_void()
    return KernelInfo(kf.fn)
