"""Kernels for ops whose output shape depends on input values, with a bounded output.

Convention: `bound(in_types, attrs) -> TensorType` gives a static type large
enough for any output; the kernel is emitted with out_types = [that type, TensorType((), "int64")]
and writes into out1 the size of the output's one dynamic dimension, and the output itself, in
row-major order, into the first elements of out0. The caller reshapes that prefix (no copy):
non_max_suppression and argwhere give (count, k) rows, nonzero gives (rank, count).

vision.non_max_suppression: ONNX NonMaxSuppression-11 semantics as the op registry defines them
(candidates above the score threshold, best first with ties by index; each selected box removes
the remaining candidates whose IoU with it exceeds the threshold), box arithmetic in the boxes'
compute dtype. Single-threaded: the output order is batch-major, then class, then selection.
"""

from __future__ import annotations

from ...ir.types import TensorType
from .common import KernelInfo, attr, kernel_function, shape_of
from .llvm_util import (
    F32,
    F64,
    I1,
    I8,
    I64,
    const,
    convert,
    entry_alloca,
    for_range,
    free,
    i64,
    imax,
    load,
    load_as,
    malloc,
    store,
    unravel,
)


def nms_bound(in_types, attrs) -> TensorType:
    B, N = shape_of(in_types[0])[:2]
    C = shape_of(in_types[1])[1]
    per = (
        N
        if len(in_types) > 2
        else min(N, max(int(attr(attrs, "max_output_boxes_per_class", 0)), 0))
    )
    return TensorType((B * C * per, 3), "int64")


def emit_nms(llmod, name, in_types, out_types, attrs, epilogue=None, const_inputs=()):
    """`void name(boxes*, scores*, [max_out*, iou*, score*], out (bound, 3) i64*, count i64*,
    i32 nthreads)`."""
    if len(out_types) != 2:
        raise NotImplementedError("non_max_suppression needs the bounded-output convention")
    B, N, _ = shape_of(in_types[0])
    C = shape_of(in_types[1])[1]
    dt_ = in_types[0].dtype
    ft = F64 if dt_ == "float64" else F32
    center = int(attr(attrs, "center_point_box", 0)) == 1
    kf = kernel_function(llmod, name, in_types, out_types, None)
    b = kf.b
    boxes, scores = kf.ins[0], kf.ins[1]
    out, count = kf.outs
    # thresholds: attributes, overridden by non-empty tensor inputs
    max_out = i64(max(int(attr(attrs, "max_output_boxes_per_class", 0)), 0))
    if len(in_types) > 2 and shape_of(in_types[2]) != (0,):
        t2 = in_types[2].dtype
        max_out = imax(b, convert(b, load_as(b, kf.ins[2], 0, t2), t2, "int64"), i64(0))
    iou_t = const(ft, float(attr(attrs, "iou_threshold", 0.0)))
    if len(in_types) > 3 and shape_of(in_types[3]) != (0,):
        iou_t = convert(b, load_as(b, kf.ins[3], 0, in_types[3].dtype), in_types[3].dtype, dt_)
    score_attr = attr(attrs, "score_threshold", None)
    score_t = None if score_attr is None else const(ft, float(score_attr))
    if len(in_types) > 4 and shape_of(in_types[4]) != (0,):
        score_t = convert(b, load_as(b, kf.ins[4], 0, in_types[4].dtype), in_types[4].dtype, dt_)
    alive = b.bitcast(malloc(b, i64(max(N, 1))), I8.as_pointer())
    n_out = entry_alloca(b, I64)
    b.store(i64(0), n_out)
    best = entry_alloca(b, I64)
    kept = entry_alloca(b, I64)

    def corners(bi, j):
        """(x0, x1, y0, y1) of box j of batch bi."""
        base = b.mul(b.add(b.mul(bi, i64(N)), j), i64(4))
        v = [load_as(b, boxes, b.add(base, i64(q)), dt_) for q in range(4)]
        if center:
            hw, hh = b.fdiv(v[2], const(ft, 2.0)), b.fdiv(v[3], const(ft, 2.0))
            return b.fsub(v[0], hw), b.fadd(v[0], hw), b.fsub(v[1], hh), b.fadd(v[1], hh)

        def mn(p, q):
            return b.select(b.fcmp_ordered("<", q, p), q, p)

        def mx(p, q):
            return b.select(b.fcmp_ordered(">", q, p), q, p)

        return mn(v[1], v[3]), mx(v[1], v[3]), mn(v[0], v[2]), mx(v[0], v[2])

    def suppressed(cand, sel):
        cx0, cx1, cy0, cy1 = cand
        sx0, sx1, sy0, sy1 = sel

        def mx(p, q):
            return b.select(b.fcmp_ordered(">", q, p), q, p)

        def mn(p, q):
            return b.select(b.fcmp_ordered("<", q, p), q, p)

        ix0, ix1, iy0, iy1 = mx(cx0, sx0), mn(cx1, sx1), mx(cy0, sy0), mn(cy1, sy1)
        inter = b.fmul(b.fsub(ix1, ix0), b.fsub(iy1, iy0))
        a1 = b.fmul(b.fsub(cx1, cx0), b.fsub(cy1, cy0))
        a2 = b.fmul(b.fsub(sx1, sx0), b.fsub(sy1, sy0))
        union = b.fsub(b.fadd(a1, a2), inter)
        zero = const(ft, 0.0)
        ok = b.fcmp_ordered(">", ix1, ix0)
        for c_ in (
            b.fcmp_ordered(">", iy1, iy0),
            b.fcmp_ordered(">", inter, zero),
            b.fcmp_ordered(">", a1, zero),
            b.fcmp_ordered(">", a2, zero),
            b.fcmp_ordered(">", union, zero),
        ):
            ok = b.and_(ok, c_)
        return b.and_(ok, b.fcmp_ordered(">", b.fdiv(inter, union), iou_t))

    with for_range(b, 0, B, name="bb") as bi:
        with for_range(b, 0, C, name="cc") as ci:
            srow = b.mul(b.add(b.mul(bi, i64(C)), ci), i64(N))
            with for_range(b, 0, N, name="init") as j:
                s = load_as(b, scores, b.add(srow, j), dt_)
                ok = const(I1, 1) if score_t is None else b.fcmp_ordered(">", s, score_t)
                store(b, b.zext(ok, I8), alive, j)
            b.store(i64(0), kept)
            loop = b.append_basic_block("sel.head")
            done = b.append_basic_block("sel.done")
            b.branch(loop)
            b.position_at_end(loop)
            b.store(i64(-1), best)
            with b.if_then(b.icmp_signed("<", b.load(kept), max_out)):
                # the best alive candidate: highest score, ties by index
                with for_range(b, 0, N, name="pick") as j:
                    live = b.icmp_unsigned("!=", load(b, alive, j), const(I8, 0))
                    cur = b.load(best)
                    sj = load_as(b, scores, b.add(srow, j), dt_)
                    sb = load_as(b, scores, b.add(srow, imax(b, cur, i64(0))), dt_)
                    better = b.or_(b.icmp_signed("<", cur, i64(0)), b.fcmp_ordered(">", sj, sb))
                    b.store(b.select(b.and_(live, better), j, cur), best)
            sel = b.load(best)
            take = b.append_basic_block("sel.take")
            b.cbranch(b.icmp_signed(">=", sel, i64(0)), take, done)
            b.position_at_end(take)
            row = b.mul(b.load(n_out), i64(3))
            store(b, bi, out, row)
            store(b, ci, out, b.add(row, i64(1)))
            store(b, sel, out, b.add(row, i64(2)))
            b.store(b.add(b.load(n_out), i64(1)), n_out)
            b.store(b.add(b.load(kept), i64(1)), kept)
            store(b, const(I8, 0), alive, sel)
            selc = corners(bi, sel)
            with for_range(b, 0, N, name="sup") as j:
                live = b.icmp_unsigned("!=", load(b, alive, j), const(I8, 0))
                with b.if_then(live):
                    with b.if_then(suppressed(corners(bi, j), selc)):
                        store(b, const(I8, 0), alive, j)
            b.branch(loop)
            b.position_at_end(done)
    store(b, b.load(n_out), count, i64(0))
    free(b, alive)
    b.ret_void()
    return KernelInfo(kf.fn)


def nonzero_bound(in_types, attrs) -> TensorType:
    shape = shape_of(in_types[0])
    n = 1
    for d in shape:
        n *= d
    return TensorType((len(shape), n) if shape else (0, 1), "int64")


def argwhere_bound(in_types, attrs) -> TensorType:
    t = nonzero_bound(in_types, attrs)
    return TensorType((t.shape[1], t.shape[0]), "int64")


def emit_nonzero(transposed: bool):
    def emit(llmod, name, in_types, out_types, attrs, epilogue=None, const_inputs=()):
        """Indices of the non-zero elements (row-major order): `void name(x*, out*, count*,
        i32)`; nonzero writes (rank, count), argwhere (count, rank)."""
        if len(out_types) != 2:
            raise NotImplementedError("nonzero needs the bounded-output convention")
        shape = shape_of(in_types[0])
        dtype = in_types[0].dtype
        kf = kernel_function(llmod, name, in_types, out_types, None)
        b = kf.b
        x, (out, count) = kf.ins[0], kf.outs
        size = 1
        for d in shape:
            size *= d
        n = entry_alloca(b, I64)
        b.store(i64(0), n)

        def nz(i):
            v = load_as(b, x, i, dtype)
            z = const(v.type, 0)
            if dtype in ("float16", "bfloat16", "float32", "float64"):
                return b.fcmp_unordered("!=", v, z)
            return b.icmp_unsigned("!=", v, z)

        with for_range(b, 0, size, name="cnt") as i:
            b.store(b.add(b.load(n), b.zext(nz(i), I64)), n)
        total = b.load(n)
        store(b, total, count, i64(0))
        if shape:
            b.store(i64(0), n)
            with for_range(b, 0, size, name="fill") as i:
                with b.if_then(nz(i)):
                    j = b.load(n)
                    for d, ix in enumerate(unravel(b, i, list(shape))):
                        if transposed:
                            off = b.add(b.mul(j, i64(len(shape))), i64(d))
                        else:
                            off = b.add(b.mul(i64(d), total), j)
                        store(b, ix, out, off)
                    b.store(b.add(j, i64(1)), n)
        b.ret_void()
        return KernelInfo(kf.fn)

    return emit


__all__ = ["nms_bound", "emit_nms", "nonzero_bound", "argwhere_bound", "emit_nonzero"]
