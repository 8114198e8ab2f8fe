"""1x1 stride-1 channel-first convolutions on small planes (ResNet-50's and MobileNet's 7x7
layers at batch 1), constant weights, float32: Y^T[P, O] = X^T[P, K] @ W^T[K, O].

Positions are the rows of the product: a plane of 49 positions fills 7 row tiles of 7 exactly,
where 16- or 32-wide column tiles of positions would compute 64 (a third wasted). Output
channels are the columns, in panels of `nv` vectors of the target's width (2 x 16 with
AVX-512), the weights packed into such panels at compile time (gemm_core.pack_b_panels).

X is packed once per thread and image (or row block) into strips of `mr` positions, k-major
([k][mr], zero padded), so that a tile's k step reads mr consecutive floats: read in place
from X, every k touched a cache line of its own (a 49-float row apart) and the microkernel ran
at half the rate of the same arithmetic on packed operands (conv_pointwise._emit_transposed).
The strip stays in L1 while the unit's weight panels (at most W_BUDGET bytes, in L2) stream
past it. Each tile accumulates over the whole reduction in registers (mr x nv accumulators)
and is stored transposed into Y.
"""

from __future__ import annotations

import llvmlite.ir as ir

from .gemm_core import gemm_tile, pack_b_panels
from .llvm_util import (
    F32,
    F32P,
    I64,
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

MIN_UNITS = 16  # units per call when the shape allows: several shards per thread
W_BUDGET = 256 * 1024  # bytes of weight panels per unit (a quarter of L2)


def tile(width: int) -> tuple[int, int]:
    """(positions per tile, vectors of output channels per tile) for a vector width: with
    AVX-512 (32 registers) 7 x 2 x 16 (14 accumulators; 49 = 7 x 7 positions), with AVX2
    (16 registers) 6 x 2 x 8."""
    return (7, 2) if width == 16 else (6, 2)


def _ukr_fn(llmod: ir.Module, mr: int, nv: int, w: int) -> ir.Function:
    """c[j * ldc + i] = sum_k a[k * mr + i] * b[k * nv * w + j] for i < mv, j < nj: an
    mr x (nv * w) tile of Y^T over the whole reduction, stored transposed."""
    name = f"relay.pwt.ukr{mr}x{nv}x{w}"
    fn = llmod.globals.get(name)
    if fn is not None:
        return fn
    args = [I64, F32P, F32P, F32P, I64, I64, I64]
    fn = ir.Function(llmod, ir.FunctionType(VOID, args), name=name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    K, ap, bp, cp, ldc, mv, nj = fn.args
    nr = nv * w
    vt = ir.VectorType(F32, w)

    def step(k, accs):
        bk = b.mul(k, i64(nr))
        bv = [vload(b, bp, b.add(bk, i64(w * v)), w) for v in range(nv)]
        ak = b.mul(k, i64(mr))
        out = []
        for i in range(mr):
            av = splat(b, load(b, ap, b.add(ak, i64(i))), w)
            out += [fma(b, av, bv[v], accs[nv * i + v]) for v in range(nv)]
        return out

    accs = for_carry(b, 0, K, [const(vt, 0.0)] * (mr * nv), step, name="kk")
    t = entry_alloca(b, F32, mr * nr, name="tile")
    for j, v in enumerate(accs):
        vstore(b, v, t, (j // nv) * nr + w * (j % nv))
    with for_range(b, 0, nj, name="tj") as q:
        row = gep(b, cp, b.mul(q, ldc))
        with b.if_else(b.icmp_signed("==", mv, i64(mr))) as (full, part):
            with full:
                for i in range(mr):
                    store(b, load(b, t, b.add(i64(i * nr), q)), row, i64(i))
            with part:
                with for_range(b, 0, mv, name="ti") as i:
                    store(b, load(b, t, b.add(b.mul(i, i64(nr)), q)), row, i)
    b.ret_void()
    return fn


def _pack_strips_fn(llmod: ir.Module, mr: int) -> ir.Function:
    """buf[s][k][0:mr] = X[k, p0 + s * mr : + mr] for the strips of positions [p0, p1), zero
    past p1; X rows of P floats. Full strips copy 8 floats per k (mr <= 8: the spill past a
    row is overwritten by the next k; the last k is copied exactly, so that nothing is read
    past X); buf holds 8 floats more than the strips."""
    name = f"relay.pwt.pack{mr}"
    fn = llmod.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(llmod, ir.FunctionType(VOID, [F32P, I64, I64, I64, I64, F32P]), name=name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    x, K, P, p0, p1, buf = fn.args
    ns = b.udiv(b.add(b.sub(p1, p0), i64(mr - 1)), i64(mr))
    last = b.sub(K, i64(1))
    with for_range(b, 0, ns, name="s") as s:
        ps = b.add(p0, b.mul(s, i64(mr)))
        dst = gep(b, buf, b.mul(s, b.mul(K, i64(mr))))
        full = b.icmp_signed("<=", b.add(ps, i64(mr)), p1)
        with b.if_else(full) as (then, other):
            with then:
                with for_range(b, 0, last, name="k") as k:
                    v = vload(b, gep(b, x, b.add(b.mul(k, P), ps)), 0, 8)
                    vstore(b, v, dst, b.mul(k, i64(mr)))
                src = gep(b, x, b.add(b.mul(last, P), ps))
                for i in range(mr):
                    store(b, load(b, src, i64(i)), dst, b.add(b.mul(last, i64(mr)), i64(i)))
            with other:
                valid = b.sub(p1, ps)
                with for_range(b, 0, K, name="kt") as k:
                    src = gep(b, x, b.add(b.mul(k, P), ps))
                    d = b.mul(k, i64(mr))
                    for i in range(mr):
                        ok = b.icmp_signed("<", i64(i), valid)
                        v = load(b, src, imin(b, i64(i), b.sub(valid, i64(1))))
                        store(b, b.select(ok, v, const(F32, 0.0)), dst, b.add(d, i64(i)))
    b.ret_void()
    return fn


def blocking(N: int, O: int, K: int, P: int, mr: int, nr: int) -> tuple[int, int, int, int]:
    """(channel panels per unit, channel blocks, strips per unit, row blocks): channel blocks
    first (X is packed once per thread and row block; more row blocks repeat the weights)."""
    npan, nst = -(-O // nr), -(-P // mr)
    ncb = max(1, min(npan, -(-MIN_UNITS // N)))
    cbp = -(-npan // ncb)
    cbp = max(1, min(cbp, W_BUDGET // (4 * nr * max(K, 1))))
    ncb = -(-npan // cbp)
    nrb = max(1, min(nst, -(-MIN_UNITS // (N * ncb))))
    rbs = -(-nst // nrb)
    nrb = -(-nst // rbs)
    return cbp, ncb, rbs, nrb


def emit(kf, win, O: int, K: int):
    """The body of kf (x, packed w, y[, extras]); returns the weight prepack."""
    from .conv import _epilogue_chunk

    N, P = win.N, win.P
    w = gemm_tile().width
    mr, nv = tile(w)
    nr = nv * w
    cbp, ncb, rbs, nrb = blocking(N, O, K, P, mr, nr)
    CB, RB = cbp * nr, rbs * mr
    units = N * ncb * nrb
    ukr = _ukr_fn(kf.b.module, mr, nv, w)
    pack = _pack_strips_fn(kf.b.module, mr)
    nt = clamp_threads(kf.b, kf.nthreads, 2.0 * N * O * P * K, units)
    OW = win.osp[2]
    strip = K * mr  # floats per packed strip

    def body(b, vals, sh):
        x, wp, y = vals[0], vals[1], vals[2]
        extras = vals[3:]
        buf = b.bitcast(malloc(b, i64(4 * (rbs * strip + 8))), F32P)
        have = entry_alloca(b, I64, name="packed")  # the (image, row block) in buf, -1: none
        b.store(i64(-1), have)
        u0, u1 = sh.range(b, units)
        with for_range(b, u0, u1, name="unit") as u:
            # channel blocks fastest: a thread's consecutive units share its packed strips
            nr_, cb = b.udiv(u, i64(ncb)), b.urem(u, i64(ncb))
            n, rb = b.udiv(nr_, i64(nrb)), b.urem(nr_, i64(nrb))
            p0 = b.mul(rb, i64(RB))
            p1 = imin(b, b.add(p0, i64(RB)), i64(P))
            xn = gep(b, x, b.mul(n, i64(K * P)))
            with b.if_then(b.icmp_signed("!=", b.load(have), nr_)):
                b.call(pack, [xn, i64(K), i64(P), p0, p1, buf])
                b.store(nr_, have)
            o0 = b.mul(cb, i64(CB))
            o1 = imin(b, b.add(o0, i64(CB)), i64(O))
            yn = gep(b, y, b.mul(n, i64(O * P)))
            ns = b.udiv(b.add(b.sub(p1, p0), i64(mr - 1)), i64(mr))
            with for_range(b, 0, ns, name="st") as s:
                ps = b.add(p0, b.mul(s, i64(mr)))
                mv = imin(b, i64(mr), b.sub(p1, ps))
                a = gep(b, buf, b.mul(s, i64(strip)))
                with for_range(b, o0, o1, nr, name="jp") as o:
                    nj = imin(b, i64(nr), b.sub(i64(O), o))
                    bpan = gep(b, wp, b.mul(o, i64(K)))  # panel o / nr starts at o * K
                    c = gep(b, yn, b.add(b.mul(o, i64(P)), ps))
                    b.call(ukr, [i64(K), a, bpan, c, i64(P), mv, nj])
            if kf.ep:
                pc = b.sub(p1, p0)
                _epilogue_chunk(b, kf.ep, extras, y, win, O, n, i64(0), o0, o1, p0, pc, OW)
        sh.end(b)
        free(b, buf)

    parallel(kf.b, kf.fn.name, kf.ins[:1] + [kf.ins[1]] + kf.outs + kf.extras, nt, body)

    def prepack(wc):
        return pack_b_panels(wc.reshape(O, K).T, nr).ravel()

    return prepack
