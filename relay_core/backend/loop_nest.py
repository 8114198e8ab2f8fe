"""Loop-nest transformations of the default schedule (schedule.py): cost estimates, fusing a
nest of loops into one variable, loop partitioning on select conditions, and parallelising
the leading loops of a nest."""

from __future__ import annotations

from ..te.expr import INDEX, Binary, Compare, Const, Reduce, Select, Var
from ..te.visit import post_order, rewrite, substitute
from . import tir as T

# Estimated operations below which a stage stays on one thread. A pool dispatch costs ~1-3 us on
# an idle machine (waking a sleeping worker more), so small stages (a 128 KB copy) are not worth
# it.
PARALLEL_MIN_WORK = 1 << 18
# Rough cost per element of expression nodes (transcendentals are polynomials or libm calls).
_NODE_COST = {"Call": 16, "Load": 1, "Read": 1, "Binary": 1, "Select": 1, "Cast": 1, "Compare": 1}


def expr_cost(expr) -> int:
    """Operations per output element (at least 1), counted over the expression DAG."""
    src = expr.source if type(expr) is Reduce else expr
    # index arithmetic (int64) is not counted: it is mostly hoisted or strength-reduced
    return max(
        1,
        sum(_NODE_COST.get(type(n).__name__, 0) for n in post_order(src) if n.dtype != INDEX),
    )


def static_work(shape, expr) -> int | None:
    n = 1
    for d in shape:
        if not isinstance(d, int):
            return None
        n *= d
    if expr is not None and type(expr) is Reduce:
        for a in expr.axes:
            if not isinstance(a.extent, int):
                return None
            n *= max(a.extent, 1)
    return n


def linear_in(v: Var, exprs) -> bool:
    """Whether no division or remainder of `v` is left in `exprs` (None entries skipped)."""
    divs = (
        x
        for e in exprs
        if e is not None
        for x in post_order(e)
        if type(x) is Binary and x.op in ("floordiv", "floormod")
    )
    return not any(n is v for x in divs for n in post_order(x))


# At most this many loop nests from one partitioned stage (partition).
MAX_PARTITIONS = 256
_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def compare_const(cond, v: Var):
    """(op, k) when `cond` compares `v` with integer constant k as `v op k`, else None."""
    if type(cond) is not Compare or cond.op not in _FLIP:
        return None
    if cond.a is v and type(cond.b) is Const and isinstance(cond.b.value, int):
        return cond.op, cond.b.value
    if cond.b is v and type(cond.a) is Const and isinstance(cond.a.value, int):
        return _FLIP[cond.op], cond.a.value
    return None


def known_over(cond, v: Var, lo: int, hi: int) -> bool | None:
    """The value of `cond` for every v in [lo, hi) when it is the same for all, else None."""
    side = compare_const(cond, v)
    if side is None:
        return None
    op, k = side
    first, last = lo, hi - 1
    tests = {
        "lt": (last < k, first >= k),
        "le": (last <= k, first > k),
        "gt": (first > k, last <= k),
        "ge": (first >= k, last < k),
        "eq": (first == k == last, last < k or first > k),
        "ne": (last < k or first > k, first == k == last),
    }
    yes, no = tests[op]
    return True if yes else False if no else None


def fused_var(simp, name: str, axes, extents):
    """(f, total, {axis: index from f}): one bounded loop variable over the nest of `axes`
    (outermost first) with the given static extents."""
    total = 1
    for d in extents:
        total *= d
    f = T.index_var(name)
    simp.set_bound(f, 0, total - 1)
    m, stride = {}, total
    for k, (a, d) in enumerate(zip(axes, extents)):
        stride //= d
        q = f // stride if stride > 1 else f
        m[a] = q % d if k else q
    return f, total, m


def parallelize(nthreads: int, nest: T.Stmt, axes, shape, work, max_depth: int) -> T.Stmt:
    """Fuse the leading loops (at most `max_depth`) into one parallel loop."""
    if nthreads <= 1 or not axes or max_depth == 0:
        return nest
    if work is not None and work < PARALLEL_MIN_WORK:
        return nest
    # choose the prefix: enough iterations for the threads, keeping the innermost loop
    # serial when it is long enough to vectorise
    p, ext = 0, 1
    limit = min(max_depth, len(axes))
    while p < limit:
        d = shape[p]
        if not isinstance(d, int):
            p = max(p, 1)
            break
        ext *= d
        p += 1
        if ext >= 4 * nthreads:
            break
    if p == len(axes) and len(axes) > 1 and isinstance(shape[-1], int) and shape[-1] >= 16:
        p -= 1
    if p == 0:
        return nest
    # peel p For loops
    loops, body = [], nest
    for _ in range(p):
        if not isinstance(body, T.For):
            return nest
        loops.append(body)
        body = body.body
    if p == 1:
        f = loops[0]
        return T.For(f.var, f.extent, f.body, "parallel")
    fused = T.index_var("f" + "_".join(lp.var.name for lp in loops))
    total = 1
    for lp in loops:
        total = total * lp.extent
    # recover each index from the fused one
    rem = fused
    lets = []
    strides = []
    s = 1
    for lp in reversed(loops):
        strides.append(s)
        s = s * lp.extent
    strides.reverse()
    for lp, st in zip(loops, strides):
        v = rem // st if not (isinstance(st, int) and st == 1) else rem
        lets.append((lp.var, v % lp.extent if lp is not loops[0] else v))
    for var, val in reversed(lets):
        body = T.LetStmt(var, val, body)
    return T.For(fused, total, body, "parallel")


def partition(simp, nthreads: int, axes, shape, value, index, out_buf, expr) -> T.Stmt | None:
    """Loop partitioning: when the value selects on a loop variable against constants (a
    concatenation or a stack along that axis: selects that are branches per element and
    keep LLVM from vectorising), the loop over that variable becomes one loop per range of
    it, with the selects resolved, inside the loops over the axes before it; None when there
    is nothing to cut. An unrolled LSTM's output (64 steps of 8 x 256 stacked) took
    200-400 us as one nest of selects."""
    if not all(isinstance(d, int) for d in shape):
        return None
    value = simp(value)  # the conditions in terms of the loop variables
    pos = {id(a): k for k, a in enumerate(axes)}
    found: dict[int, set] = {}
    for n in post_order(value):
        if type(n) is not Select:
            continue
        for a in (n.cond.a, n.cond.b) if type(n.cond) is Compare else ():
            k = pos.get(id(a))
            side = compare_const(n.cond, a) if k is not None else None
            if side is not None:
                op, c = side
                cut = {c, c + 1} if op in ("eq", "ne") else {c + (op in ("le", "gt"))}
                found.setdefault(k, set()).update(cut)
    p = min((k for k in found if any(0 < c < shape[k] for c in found[k])), default=None)
    if p is None:
        return None
    v = axes[p]
    cuts = sorted(c for c in found[p] if 0 < c < shape[p])
    if len(cuts) >= MAX_PARTITIONS:
        return None
    bounds = [0, *cuts, shape[p]]
    cost = expr_cost(expr)
    nests = []
    for lo, hi in zip(bounds, bounds[1:]):

        def resolve(orig, new, lo=lo, hi=hi):
            if type(new) is Select:
                known = known_over(new.cond, v, lo, hi)
                if known is not None:
                    return new.t if known else new.f
            return new

        w = T.index_var(f"{v.name}_{lo}")
        simp.set_bound(w, 0, hi - lo - 1)
        at = {v: w + Const(lo, INDEX) if lo else w}
        pv = simp(substitute(rewrite(value, resolve), at))
        pi = simp(substitute(index, at))
        paxes = [w] + list(axes[p + 1 :])
        pshape = [hi - lo] + list(shape[p + 1 :])
        body: T.Stmt = T.Store(out_buf, pi, pv)
        for a, d in zip(reversed(paxes), reversed(pshape)):
            body = T.For(a, d, body)
        if p == 0:  # each range on the threads by itself, by its own work
            work = static_work(pshape, None) * expr_cost(pv)
            body = parallelize(nthreads, body, paxes, pshape, work, len(paxes))
        nests.append(body)
    body = T.seq(*nests)
    if p == 0:
        return body
    for a, d in zip(reversed(axes[:p]), reversed(shape[:p])):
        body = T.For(a, d, body)
    work = static_work(shape, None) * cost
    return parallelize(nthreads, body, list(axes[:p]), list(shape[:p]), work, p)
