"""Loop-nest transformations of the default schedule (schedule.py): cost estimates, fusing a
nest of loops into one variable, loop partitioning on select conditions, and parallelising
the leading loops of a nest."""

from __future__ import annotations

from ..te.expr import (
    INDEX,
    Binary,
    Compare,
    Const,
    Load,
    PrimExpr,
    Reduce,
    Select,
    Var,
    binary,
    logical_and,
)
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


def flat_index(shape, idx) -> PrimExpr:
    """Row-major offset of `idx` in a tensor of `shape`."""
    off: PrimExpr | int = 0
    for d, i in zip(shape, idx):
        off = off * d + i
    return off if isinstance(off, PrimExpr) else Const(off, INDEX)


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


# At most this many loop nests from one partitioned stage (partition, all levels together), and
# this many levels of cuts (a cut of a nest already cut).
MAX_PARTITIONS = 256
MAX_CUT_DEPTH = 3
# A select on v % m or v // m (m at most this, dividing v's extent) cuts v into m residues: a
# channel shuffle of g groups (ShuffleNet) picks its source by c % g.
MAX_MODULUS = 8
_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def compare_const(simp, cond, pos: dict):
    """(axis position, op, k) when integer comparison `cond` is `v + c op d`, v the loop axis
    at that position in `pos` (id -> position) with coefficient +-1 and the rest constant:
    as `v op k`. None otherwise."""
    if type(cond) is not Compare or cond.op not in _FLIP or cond.a.dtype != INDEX:
        return None
    ta, ca = simp.linear(cond.a)
    tb, cb = simp.linear(cond.b)
    terms = {k: [a, co] for k, (a, co) in ta.items()}
    for k, (a, co) in tb.items():
        terms.setdefault(k, [a, 0])[1] -= co
    live = [(a, co) for a, co in terms.values() if co]
    if len(live) != 1:
        return None
    a, co = live[0]
    k = pos.get(id(a))
    if k is None or co not in (1, -1):
        return None
    # co * v + (ca - cb) op 0
    return (k, cond.op, cb - ca) if co == 1 else (k, _FLIP[cond.op], ca - cb)


def known_over(op: str, k: int, lo: int, hi: int) -> bool | None:
    """The value of `v op k` for every v in [lo, hi) when it is the same for all, else None."""
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


def parallelize(
    nthreads: int, nest: T.Stmt, axes, shape, work, max_depth: int, keep_inner: bool = True
) -> T.Stmt:
    """Fuse the leading loops (at most `max_depth`) into one parallel loop; with `keep_inner`,
    not the innermost of `axes` when it is long enough to vectorise."""
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
    long_inner = isinstance(shape[-1], int) and shape[-1] >= 16
    if keep_inner and p == len(axes) and len(axes) > 1 and long_inner:
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
    it, with the selects resolved, inside the loops over the axes before it; when it selects
    on `v % m` or `v // m` (a channel shuffle after a concatenation), one loop per residue
    r of v = m * w + r. The nests are cut again where they still select (a slice of a shuffle
    picks by ranges of w), and their trailing loops fused where the indices stay linear.
    None when there is nothing to cut. An unrolled LSTM's output (64 steps of 8 x 256 stacked)
    took 200-400 us as one nest of selects; a ShuffleNetV2 channel shuffle at batch 8
    (concatenate, reshape, transpose, slices: 2.9 MB) 10-14 ms. A cut that resolves no select
    (in its nests or the cuts below them) is not made: Swin-V2's shifted windows (a roll as two
    concatenations, then windows by reshape and transpose) were cut into 56 nests that all kept
    their selects, whose vectorisation took LLVM 35 s."""
    value = simp(value)
    return _partition(simp, nthreads, list(axes), list(shape), value, index, out_buf, 0)


def _find_cut(simp, axes, shape, value):
    """(position, "range", cuts) or (position, "mod", m) of the outermost axis to cut."""
    pos = {id(a): k for k, a in enumerate(axes)}
    ranges: dict[int, set] = {}
    mods: dict[int, int] = {}
    for n in post_order(value):
        if type(n) is not Select:
            continue
        side = compare_const(simp, n.cond, pos)
        if side is not None:
            k, op, c = side
            if isinstance(shape[k], int):
                cut = {c, c + 1} if op in ("eq", "ne") else {c + (op in ("le", "gt"))}
                ranges.setdefault(k, set()).update(x for x in cut if 0 < x < shape[k])
            continue
        for x in post_order(n.cond):
            if type(x) is Binary and x.op in ("floordiv", "floormod") and type(x.b) is Const:
                k, m = pos.get(id(x.a)), x.b.value
                if k is None or not isinstance(shape[k], int) or not isinstance(m, int):
                    continue
                if 1 < m <= MAX_MODULUS and shape[k] % m == 0 and shape[k] > m:
                    mods[k] = min(m, mods.get(k, m))
    p = min([k for k, cuts in ranges.items() if cuts] + list(mods), default=None)
    if p is None:
        return None
    if ranges.get(p):
        cuts = sorted(ranges[p])
        return None if len(cuts) >= MAX_PARTITIONS else (p, "range", cuts)
    return p, "mod", mods[p]


def _selects(e) -> int:
    return sum(type(n) is Select for n in post_order(e))


def _partition(simp, nthreads, axes, shape, value, index, out_buf, depth, budget=MAX_PARTITIONS):
    """The partitioned nests, or None when there is nothing to cut, the cut would make more than
    `budget` nests, or it resolves no select."""
    cut = _find_cut(simp, axes, shape, value)
    if cut is None:
        return None
    p, kind, arg = cut
    if (len(arg) + 1 if kind == "range" else arg) > budget:
        return None
    v = axes[p]
    pieces = []  # (new variable, its extent, v in terms of it, v's range or None)
    if kind == "range":
        bounds = [0, *arg, shape[p]]
        for lo, hi in zip(bounds, bounds[1:]):
            w = T.index_var(f"{v.name}_{lo}")
            simp.set_bound(w, 0, hi - lo - 1)
            pieces.append((w, hi - lo, w + Const(lo, INDEX) if lo else w, (lo, hi)))
    else:
        m = arg
        for r in range(m):
            w = T.index_var(f"{v.name}_{r}m{m}")
            simp.set_bound(w, 0, shape[p] // m - 1)
            pieces.append((w, shape[p] // m, w * Const(m, INDEX) + Const(r, INDEX), None))
    pos = {id(v): 0}
    outer = static_work(shape[:p], None) if p else 0
    nsel = _selects(value)
    useful = []  # a piece lost selects, or was cut usefully below

    def build(threads):
        nests, works = [], []
        for w, ext, at, span in pieces:

            def resolve(orig, new, span=span):
                if type(new) is Select and span is not None:
                    side = compare_const(simp, new.cond, pos)
                    known = None if side is None else known_over(side[1], side[2], *span)
                    if known is not None:
                        return new.t if known else new.f
                return new

            pv = simp(substitute(rewrite(value, resolve), {v: at}))
            if _selects(pv) < nsel:
                useful.append(True)
            pi = simp(substitute(index, {v: at}))
            paxes = [w] + axes[p + 1 :]
            pshape = [ext] + shape[p + 1 :]
            work = static_work(pshape, None)
            works.append(None if work is None else work * expr_cost(pv))
            body = None
            if depth + 1 < MAX_CUT_DEPTH:
                sub_budget = budget // len(pieces)
                body = _partition(
                    simp, threads, paxes, pshape, pv, pi, out_buf, depth + 1, sub_budget
                )
                if body is not None:
                    useful.append(True)
            if body is None:
                fused = fuse_trailing(
                    simp,
                    paxes,
                    pshape,
                    lambda m, v=pv, i=pi: (simp(substitute(v, m)), simp(substitute(i, m))),
                )
                if fused is not None:
                    paxes, pshape, pv, pi = fused
                body = T.Store(out_buf, pi, pv)
                for a, d in zip(reversed(paxes), reversed(pshape)):
                    body = T.For(a, d, body)
                body = parallelize(threads, body, paxes, pshape, works[-1], len(paxes))
            nests.append(body)
        return nests, works

    # the nests in one parallel region (the outer loops fused into it) when the outer loops
    # are too short for the threads or of a run-time extent (a concatenation over channels at
    # batch 1, of a model exported with a dynamic batch)
    nests = None  # built for one thread
    if nthreads > 1 and len(pieces) > 1 and (p == 0 or outer is None or outer < nthreads):
        nests, works = build(1)
        if not useful:
            return None
        body = _one_region(nthreads, nests, works, axes[:p], shape[:p])
        if body is not None:
            return body
    # else each nest in parallel when the outer loops are short, or the outer loops
    inner_parallel = p == 0 or (outer is not None and outer < nthreads)
    if inner_parallel or nests is None:  # (the serial nests are reused for the outer loops)
        nests = build(nthreads if inner_parallel else 1)[0]
    if not useful:
        return None
    body = T.seq(*nests)
    if p == 0:
        return body
    for a, d in zip(reversed(axes[:p]), reversed(shape[:p])):
        body = T.For(a, d, body)
    if inner_parallel:
        return body
    work = static_work(shape, None)
    work = None if work is None else work * expr_cost(value)
    return parallelize(nthreads, body, axes[:p], shape[:p], work, p)


# units per thread of a partitioned stage's one parallel region (_one_region)
UNITS_PER_THREAD = 8


def _one_region(nthreads: int, nests: list, works: list, outer_axes, outer_shape):
    """The nests of a partitioned stage (a concatenation of many inputs at batch 1: small
    nests) in one parallel region, not one each: the outermost loop of each nest is cut into
    chunks of about equal work, and the region's units are the chunks of all nests for every
    iteration of the outer loops (`outer_axes`, extents static or not). DenseNet's batch
    norm + relu over concatenations of 13 - 25 inputs on 28x28 / 14x14 planes ran 2 - 2.3x
    faster than with a region per nest (a dispatch costs a few us, the nests are 25-100 KB).
    Serial when the whole stage is small; None when a nest does not start with a loop of a
    static extent, or when an outer iteration's work is small but their number is known only
    at run time (the caller then runs the outer loops in parallel)."""
    if any(w is None for w in works) or not all(
        type(n) is T.For and isinstance(n.extent, int) and n.begin == 0 and n.kind == "serial"
        for n in nests
    ):
        return None
    total = sum(works)
    outer = static_work(outer_shape, None)
    if total < PARALLEL_MIN_WORK and outer is None:
        return None
    if total * (outer or 1) >= PARALLEL_MIN_WORK:
        target = max(1, total // (UNITS_PER_THREAD * nthreads))
        u = T.index_var("unit")
        branches, first = [], 0
        for n, w in zip(nests, works):
            e = n.extent
            cs = -(-e // max(1, min(e, round(w / target))))
            k = -(-e // cs)
            lo = (u - Const(first, INDEX)) * Const(cs, INDEX)
            hi = binary("min", lo + Const(cs, INDEX), Const(e, INDEX))
            cond = logical_and(u >= Const(first, INDEX), u < Const(first + k, INDEX))
            branches.append(T.IfThenElse(cond, T.For(n.var, hi, n.body, "serial", lo)))
            first += k
        body = T.seq(*branches)
        if outer_axes:
            g = T.index_var("unit_g")
            body = T.LetStmt(u, binary("floormod", g, Const(first, INDEX)), body)
            rem, n = binary("floordiv", g, Const(first, INDEX)), Const(first, INDEX)
            for a, d in reversed(list(zip(outer_axes, outer_shape))):
                d = Const(d, INDEX) if isinstance(d, int) else d
                body = T.LetStmt(a, binary("floormod", rem, d), body)
                rem, n = binary("floordiv", rem, d), n * d
            return T.For(g, n, body, "parallel")
        return T.For(u, first, body, "parallel")
    body = T.seq(*nests)
    for a, d in zip(reversed(outer_axes), reversed(outer_shape)):
        body = T.For(a, d, body)
    return body


def fuse_trailing(simp, axes, shape, remap, first: int = 0):
    """(axes, shape, value, store index) with the trailing loops from some axis >= `first`
    fused into one variable f, the longest run of static extents for which `remap({axis:
    index from f})` (the value and store index with the axes replaced) stays linear in f: no
    division or remainder of f is left. None when none can be. Loops of 7 or 14 (7x7 and
    14x14 planes) are unrolled and left scalar by LLVM; one loop over the plane vectorises."""
    n = len(axes)
    for j in range(first, n - 1):
        if not all(isinstance(d, int) and d > 0 for d in shape[j:]):
            continue  # a run-time extent (the batch) stays a loop of its own
        f, total, m = fused_var(simp, "fl_" + axes[j].name, axes[j:], shape[j:])
        value, index = remap(m)
        if linear_in(f, (value, index)):
            return list(axes[:j]) + [f], list(shape[:j]) + [total], value, index
    return None


# split_inner: the inner loop of a split keeps at least this many iterations (a vector of 16).
MIN_INNER = 16


def split_inner(simp, axes, shape, value, index):
    """(axes, shape, value, index) with the innermost loop v split into v // m and v % m
    loops when the value reads through `v // m` and `v % m` (m dividing v's extent) and is
    linear in the new inner loop: a head merge (transpose (0, 2, 1, 3) then reshape) reads
    in[.., v // 64, .., v % 64], one contiguous run of 64 per head, which LLVM does not
    vectorise as one loop with the division in it. None when there is no such m."""
    if not axes or not isinstance(shape[-1], int):
        return None
    v, ext = axes[-1], shape[-1]
    mods = set()
    for x in post_order(value):
        if type(x) is Binary and x.op in ("floordiv", "floormod") and x.a is v:
            m = const_int(x.b)
            if m is not None and MIN_INNER <= m < ext and ext % m == 0:
                mods.add(m)
    for m in sorted(mods, reverse=True):
        vo, vi = T.index_var(f"{v.name}_o"), T.index_var(f"{v.name}_i")
        simp.set_bound(vo, 0, ext // m - 1)
        simp.set_bound(vi, 0, m - 1)
        at = {v: vo * Const(m, INDEX) + vi}
        sv, si = simp(substitute(value, at)), simp(substitute(index, at))
        if linear_in(vi, (sv, si)):
            return list(axes[:-1]) + [vo, vi], list(shape[:-1]) + [ext // m, m], sv, si
    return None


# tile_transpose: the side of a square tile (16 floats: a cache line per row of the tile).
TILE = 16


def _coef(simp, e, v) -> int:
    terms, _ = simp.linear(e)
    return sum(co for atom, co in terms.values() if atom is v)


def tile_transpose(simp, axes, shape, value, index):
    """(axes, shape, value, index) with the innermost loop v and an outer loop u split into
    tiles (u_o, ..., v_o, u_i, v_i) when the store is contiguous along v but a read is
    contiguous along u and strided along v (a transpose: (0, 2, 1) of tokens x channels into
    channels x positions). Untiled, each cache line read served one element and was read again
    TILE rows later from memory (PVTv2's 3136 x 256 transposes: 1.6 ms, onnxruntime 0.5). Tiles
    of TILE x TILE (or 8 x 8) elements need both extents to be multiples; None otherwise."""
    n = len(axes)
    if n < 2 or not isinstance(shape[-1], int) or _coef(simp, index, axes[-1]) != 1:
        return None
    v, ev = axes[-1], shape[-1]
    loads = (x for x in post_order(value) if type(x) is Load)
    read = next((x for x in loads if abs(_coef(simp, x.index, v)) >= TILE), None)
    if read is None:
        return None
    k = next(
        (
            k
            for k in range(n - 2, -1, -1)
            if isinstance(shape[k], int) and _coef(simp, read.index, axes[k]) == 1
        ),
        None,
    )
    if k is None:
        return None
    u, eu = axes[k], shape[k]
    side = next((t for t in (TILE, 8) if eu % t == 0 and ev % t == 0), None)
    if side is None or side in (eu, ev):
        return None
    uo, ui = T.index_var(f"{u.name}_to"), T.index_var(f"{u.name}_ti")
    vo, vi = T.index_var(f"{v.name}_to"), T.index_var(f"{v.name}_ti")
    for var, hi in ((uo, eu // side), (ui, side), (vo, ev // side), (vi, side)):
        simp.set_bound(var, 0, hi - 1)
    c = Const(side, INDEX)
    at = {u: uo * c + ui, v: vo * c + vi}
    value, index = simp(substitute(value, at)), simp(substitute(index, at))
    axes = [*axes[:k], uo, *axes[k + 1 : n - 1], vo, ui, vi]
    shape = [*shape[:k], eu // side, *shape[k + 1 : n - 1], ev // side, side, side]
    return axes, shape, value, index


def const_int(e) -> int | None:
    return e.value if type(e) is Const and isinstance(e.value, int) else None
