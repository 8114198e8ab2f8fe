"""Row reductions: a stage whose innermost loop walks the input of its reductions contiguously.

A sum over a middle axis (a channel mean of NCHW data, the statistics of a channel LayerNorm)
computed per output element reads a strided column of its input for every element. When the
stage's innermost output axis `v` reads the reductions' input at consecutive elements, the
stage is computed instead, for each index of its outer loops, as

    acc[0:L] = 0;  for each reduced index: acc[v] += source(v) for v in 0..L;  out[v] = f(acc[v])

with a row of L accumulators on the stack: one contiguous row added in per reduced index. The
order of the additions per element is unchanged. Measured on channel LayerNorms of NCHW data
(one image, four kernels): 80x56x56 685 -> 150-190 us, 320x14x14 133 -> 62-72 us.
"""

from __future__ import annotations

from ..te.expr import INDEX, Const, Load, PrimExpr, Reduce, Var
from ..te.tensor import identity
from ..te.visit import post_order, substitute
from . import tir as T
from .loop_nest import expr_cost, flat_index, parallelize, static_work

# The longest row of accumulators a stage keeps on the stack.
ROW_ACC_MAX = 4096


def row_reductions(sched, t, axes, shape, expr, inner, placed, stage_exprs) -> T.Stmt | None:
    """The loop nest of stage `t` (Scheduler._stage's arguments) computed as row reductions, or
    None when it does not apply: every reduction of the stage is a float sum without a
    condition, computed per output element (the stage itself, or placed at its full depth), and
    reads its input contiguously along the innermost axis, of static length 2..ROW_ACC_MAX."""
    n = len(axes)
    if n < 2 or expr is None or not isinstance(shape[-1], int):
        return None
    L = shape[-1]
    if not 2 <= L <= ROW_ACC_MAX:
        return None
    v = axes[-1]
    reds = []  # (tensor, Reduce, substitution of its axes)
    for r in inner:
        _, depth, mapping = placed[r.id]
        if depth != n:
            return None
        zero = Const(0, INDEX)
        sub = {ax: zero if m is None else axes[m] for ax, m in zip(r.op.axes, mapping)}
        reds.append((r, stage_exprs[r.id], sub))
    if type(expr) is Reduce:
        reds.append((t, expr, {}))
    if not reds:
        return None
    for _, red, _ in reds:
        if red.kind != "sum" or red.where is not None or red.dtype not in ("float32", "float64"):
            return None
        if not all(isinstance(a.extent, int) for a in red.axes):
            return None
    row: dict = {}  # tensor id -> (accumulator row, v)
    stmts, bufs = [], []
    for r, red, sub in reds:
        for a in red.axes:
            sched.simp.set_bound(a, 0, a.extent - 1)
        src = sched.to_loads(substitute(red.source, sub) if sub else red.source, row)
        if not _contiguous_in(sched.simp, v, src):
            return None
        acc = T.Buffer(f"{r.name}_row", red.dtype, L, "local")
        bufs.append(acc)
        upd = T.Store(acc, v, Load(acc, v, red.dtype) + src)
        stmts.append(T.For(v, L, T.Store(acc, v, identity(red.kind, red.dtype))))
        stmts.append(T.loop_nest([(a, a.extent) for a in red.axes], T.For(v, L, upd)))
        row[r.id] = (acc, v)
    index = sched.simp(flat_index(shape, axes))
    value = Load(row[t.id][0], v, t.dtype) if type(expr) is Reduce else sched.to_loads(expr, row)
    body = T.seq(*stmts, T.For(v, L, T.Store(sched.buffer(t), index, value)))
    for acc in reversed(bufs):
        body = T.Allocate(acc, body)
    # the work as the element path counts it (its innermost loop is the row loop here)
    elems = static_work(shape, None)
    work = None if elems is None else 0 if type(expr) is Reduce else elems * expr_cost(expr)
    for _, red, _ in reds:
        w = static_work([], red)
        work = None if None in (work, w, elems) else work + elems * w * expr_cost(red)
    for k in range(n - 2, -1, -1):
        body = T.For(axes[k], shape[k], body)
    return parallelize(sched.nthreads, body, axes[:-1], shape[:-1], work, n - 1, keep_inner=False)


def _contiguous_in(simp, v: Var, e: PrimExpr) -> bool:
    """Whether `e` reads memory and every load in it that depends on `v` is at consecutive
    elements for consecutive `v`."""
    uses = 0
    for ld in (x for x in post_order(e) if type(x) is Load):
        if not any(x is v for x in post_order(ld.index)):
            continue
        step = simp(substitute(ld.index, {v: v + Const(1, INDEX)}) - ld.index)
        if not (type(step) is Const and step.value == 1):
            return False
        uses += 1
    return uses > 0
