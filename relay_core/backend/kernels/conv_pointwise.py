"""1x1 stride-1 unpadded channel-first convolution (pointwise, as in MobileNet / ResNet
bottlenecks) with constant weights, float32: per image Y[O, P] = W[O, C] @ X[C, P].

The work is cut into units of (image, block of output positions, block of output channels),
taken dynamically by the pool's threads. A unit packs its positions of X (every input channel)
into 16-column panels in a per-thread buffer, once, and reuses them for all its output
channels: each 6 x 16 tile of Y is accumulated over the whole reduction in 12 <8 x float>
registers and stored straight into Y (no KC blocking, no tile buffer, no store callback; the
driver of gemm_core re-packed X for every shard and every KC block, which dominated when the
reduction is long and the plane small). The weights are packed at compile time into the 6-row
panels of gemm_core.pack_a_panels. The epilogue runs over the unit's rows afterwards, while
they are still in cache.
"""

from __future__ import annotations

import llvmlite.ir as ir

from .gemm_core import MR, NR, pack_a_panels
from .llvm_util import (
    F32,
    F32P,
    I64,
    V8F,
    VOID,
    const,
    entry_alloca,
    fma,
    for_carry,
    for_range,
    free,
    gep,
    i64,
    imin,
    load,
    malloc,
    splat,
    store,
    vload,
    vstore,
)
from .parallel import clamp_threads, parallel

PACK_BUDGET = 64 * 1024  # bytes of packed X per unit (stays in L2 while all rows use it)
MIN_UNITS = 16  # units per call when the shape allows: several shards per thread


def usable(win, G: int, Cg: int, Og: int, packed: bool, cl: bool) -> bool:
    """A 1x1 stride-1 unpadded channel-first convolution with constant weights whose plane is
    wide enough for 16-column panels (narrow planes keep the transposed path of conv.py)."""
    if not (packed and G == 1 and not cl and win.KK == 1):
        return False
    if win.s != (1, 1, 1) or win.pb != (0, 0, 0) or win.pe != (0, 0, 0) or win.sp != win.osp:
        return False
    P = win.P
    col_waste = (-(-P // NR) * NR) / P
    row_waste = (-(-P // MR) * MR) / P
    return P >= 128 or col_waste <= row_waste + 0.1 or Og < NR


def blocking(N: int, O: int, K: int, P: int) -> tuple[int, int]:
    """(16-column panels per unit, 6-row panels per unit)."""
    npan = -(-P // NR)
    nrp = -(-O // MR)
    cbp = max(1, min(npan, PACK_BUDGET // (4 * NR * max(K, 1))))
    ncb = -(-npan // cbp)
    cbp = -(-npan // ncb)
    nrb = max(1, min(nrp, -(-MIN_UNITS // (N * ncb))))
    rbp = -(-nrp // nrb)
    return cbp, rbp


def _ukr_fn(llmod: ir.Module, mr: int) -> ir.Function:
    """c[0:mr, 0:nv] (row stride ldc) = A panel (K x mr) @ B panel (K rows of 16);
    nv == 16 stores with vectors, fewer through a tile on the stack."""
    name = f"relay.pw.ukr{mr}"
    fn = llmod.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(llmod, ir.FunctionType(VOID, [I64, F32P, F32P, F32P, I64, I64]), name=name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    K, ap, bp, cp, ldc, nv = fn.args
    sets = {1: 4, 2: 2, 3: 2}.get(mr, 1)  # independent accumulators against the FMA latency
    zero = const(V8F, 0.0)

    def one(k, accs):
        bk = b.mul(k, i64(NR))
        b0 = vload(b, bp, bk)
        b1 = vload(b, bp, b.add(bk, i64(8)))
        ak = b.mul(k, i64(mr))
        out = []
        for i in range(mr):
            av = splat(b, load(b, ap, b.add(ak, i64(i))))
            out.append(fma(b, av, b0, accs[2 * i]))
            out.append(fma(b, av, b1, accs[2 * i + 1]))
        return out

    def step(k, accs):
        n = 2 * mr
        out = []
        for s_ in range(sets):
            out += one(b.add(k, i64(s_)), accs[s_ * n : (s_ + 1) * n])
        return out

    main = b.mul(b.udiv(K, i64(sets)), i64(sets)) if sets > 1 else K
    accs = for_carry(b, 0, main, [zero] * (2 * mr * sets), step, step=sets, name="kk")
    if sets > 1:
        accs = list(for_carry(b, main, K, accs[: 2 * mr], one, name="kt")) + list(
            accs[2 * mr :]
        )
        total = accs[: 2 * mr]
        for s_ in range(1, sets):
            total = [b.fadd(x, y) for x, y in zip(total, accs[s_ * 2 * mr : (s_ + 1) * 2 * mr])]
        accs = total
    tile = entry_alloca(b, F32, MR * NR, name="tile")
    with b.if_else(b.icmp_signed("==", nv, i64(NR))) as (full, part):
        with full:
            for j, v in enumerate(accs):
                vstore(b, v, cp, b.add(b.mul(i64(j // 2), ldc), i64(8 * (j % 2))))
        with part:
            for j, v in enumerate(accs):
                vstore(b, v, tile, (j // 2) * NR + 8 * (j % 2))
            for i in range(mr):
                with for_range(b, 0, nv, name=f"t{i}") as q:
                    store(b, load(b, tile, b.add(i64(i * NR), q)), cp, b.add(b.mul(i64(i), ldc), q))
    b.ret_void()
    return fn


def emit(kf, win, O: int, K: int):
    """Emit the body of kf (x, packed w, y[, extras]); returns the weight prepack."""
    from .conv import _epilogue_chunk

    N, P = win.N, win.P
    cbp, rbp = blocking(N, O, K, P)
    CB, RB = cbp * NR, rbp * MR
    ncb, nrb = -(-P // CB), -(-O // RB)
    units = N * ncb * nrb
    O6 = O // MR * MR
    ukr = _ukr_fn(kf.b.module, MR)
    ukr_tail = _ukr_fn(kf.b.module, O - O6) if O6 < O else None
    nt = clamp_threads(kf.b, kf.nthreads, 2.0 * N * O * P * K, units)
    OW = win.osp[2]

    def body(b, vals, sh):
        x, wp, y = vals[0], vals[1], vals[2]
        extras = vals[3:]
        buf = b.bitcast(malloc(b, i64(4 * K * CB)), F32P)
        u0, u1 = sh.range(b, units)
        with for_range(b, u0, u1, name="unit") as u:
            n = b.udiv(u, i64(ncb * nrb))
            cb = b.urem(b.udiv(u, i64(nrb)), i64(ncb))
            rb = b.urem(u, i64(nrb))
            p0 = b.mul(cb, i64(CB))
            pc = imin(b, i64(CB), b.sub(i64(P), p0))
            nfull = b.udiv(pc, i64(NR))
            tail = b.urem(pc, i64(NR))
            xn = gep(b, x, b.add(b.mul(n, i64(K * P)), p0))
            yn = gep(b, y, b.add(b.mul(n, i64(O * P)), p0))
            # pack X[:, p0:p0+pc] into panels buf[j][k][16], row by row (contiguous reads)
            with for_range(b, 0, K, name="pk") as k:
                src = gep(b, xn, b.mul(k, i64(P)))
                with for_range(b, 0, nfull, name="pj") as j:
                    s = b.mul(j, i64(NR))
                    d = b.add(b.mul(j, i64(K * NR)), b.mul(k, i64(NR)))
                    vstore(b, vload(b, src, s), buf, d)
                    vstore(b, vload(b, src, b.add(s, i64(8))), buf, b.add(d, i64(8)))
                with b.if_then(b.icmp_signed(">", tail, i64(0))):
                    s = b.mul(nfull, i64(NR))
                    d = b.add(b.mul(nfull, i64(K * NR)), b.mul(k, i64(NR)))
                    with for_range(b, 0, NR, name="pt") as q:
                        ok = b.icmp_signed("<", q, tail)
                        v = load(b, src, b.add(s, imin(b, q, b.sub(tail, i64(1)))))
                        store(b, b.select(ok, v, const(F32, 0.0)), buf, b.add(d, q))
            r0 = b.mul(rb, i64(RB))
            r1 = imin(b, b.add(r0, i64(RB)), i64(O))
            r1f = imin(b, r1, i64(O6))
            npan = b.udiv(b.add(pc, i64(NR - 1)), i64(NR))
            with for_range(b, 0, npan, name="jp") as j:
                col = b.mul(j, i64(NR))
                nv = imin(b, i64(NR), b.sub(pc, col))
                bpan = gep(b, buf, b.mul(j, i64(K * NR)))
                with for_range(b, r0, r1f, MR, name="ip") as r:
                    args = [i64(K), gep(b, wp, b.mul(r, i64(K))), bpan]
                    b.call(ukr, args + [gep(b, yn, b.add(b.mul(r, i64(P)), col)), i64(P), nv])
                if ukr_tail is not None:
                    with b.if_then(b.icmp_signed(">", r1, i64(O6))):
                        args = [i64(K), gep(b, wp, i64(O6 * K)), bpan]
                        cptr = gep(b, yn, b.add(i64(O6 * P), col))
                        b.call(ukr_tail, args + [cptr, i64(P), nv])
            if kf.ep:
                _epilogue_chunk(b, kf.ep, extras, y, win, O, n, i64(0), r0, r1, p0, pc, OW)
        sh.end(b)
        free(b, buf)

    parallel(kf.b, kf.fn.name, kf.ins[:1] + [kf.ins[1]] + kf.outs + kf.extras, nt, body)

    def prepack(wc):
        return pack_a_panels(wc.reshape(O, K))

    return prepack
