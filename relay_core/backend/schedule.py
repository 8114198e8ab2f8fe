"""From tensor expressions to the loop IR of one kernel.

The default schedule, applied to every fused group:
- every compute that is not an output, a reduction or an external kernel's result is inlined
  into its readers (so an elementwise chain becomes one expression per output element);
- a reduction read by one stage only at that stage's leading loop indices (softmax, layer norm,
  mean, a reduction with an elementwise epilogue) is computed inside that stage's loop nest
  into a register ("compute_at"); other reductions get a temporary buffer;
- the outer loops of each stage are fused and split across threads when there is enough work;
  the innermost loop is left simple so that LLVM vectorises it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..te.expr import INDEX, Binary, Compare, Const, Load, PrimExpr, Read, Reduce, Select, Var
from ..te.simplify import Simplifier
from ..te.tensor import Tensor, identity
from ..te.visit import operands, post_order, rewrite, substitute
from . import tir as T

# Estimated operations below which a stage stays on one thread. A pool dispatch costs ~1-3 us on
# an idle machine (waking a sleeping worker more), so small stages (a 128 KB copy) are not worth
# it.
PARALLEL_MIN_WORK = 1 << 18
# Rough cost per element of expression nodes (transcendentals are polynomials or libm calls).
_NODE_COST = {"Call": 16, "Load": 1, "Read": 1, "Binary": 1, "Select": 1, "Cast": 1, "Compare": 1}


@dataclass(eq=False)
class ExternOp:
    """The op of a tensor computed by an external kernel (`CallKernel`).

    `inputs` are the tensors passed to it (in order), `outputs` every tensor it writes."""

    name: str
    inputs: list
    emit: object  # callable(llmod, name, epilogue) -> KernelInfo | None: defines the kernel
    outputs: list = None  # filled by extern()
    scalar_args: tuple = ()
    info: object = None  # what emit returned (prepacking of constant inputs)
    call: object = None  # the Relay call it computes (to fall back to tensor expressions)


def extern(name: str, out_specs, inputs, emit, scalar_args=()) -> list[Tensor]:
    """Tensors computed by an external kernel `name(inputs..., outputs..., nthreads)`."""
    op = ExternOp(name, list(inputs), emit, [], tuple(scalar_args))
    outs = []
    for k, (shape, dtype) in enumerate(out_specs):
        t = Tensor(shape, dtype, f"{name}_out{k}", None, {"extern": op, "index": k})
        outs.append(t)
    op.outputs = outs
    return outs


@dataclass(eq=False)
class LoopOp:
    """The op of tensors written by hand-built loop IR: `build(in_bufs, out_bufs) -> Stmt`."""

    name: str
    inputs: list
    build: object
    outputs: list = None


def loop_op(name: str, out_specs, inputs, build) -> list[Tensor]:
    """Tensors computed by `build(input Buffers, output Buffers) -> tir.Stmt` (scatter, ...)."""
    op = LoopOp(name, list(inputs), build, [])
    for k, (shape, dtype) in enumerate(out_specs):
        op.outputs.append(Tensor(shape, dtype, f"{name}_out{k}", None, {"extern": op, "index": k}))
    return op.outputs


def _is_extern(t: Tensor) -> bool:
    return t.op is None and "extern" in t.attrs


def _producers(t: Tensor) -> list[Tensor]:
    if _is_extern(t):
        return list(t.attrs["extern"].inputs)
    if t.op is None:
        return []
    out = []
    exprs = [t.op.body] + [d for d in t.shape if isinstance(d, PrimExpr)]
    for e in exprs:
        for n in post_order(e):
            if type(n) is Read:
                out.append(n.tensor)
            elif type(n) is Reduce:
                for a in n.axes:
                    if isinstance(a.extent, PrimExpr):
                        out.extend(x.tensor for x in post_order(a.extent) if type(x) is Read)
    return out


# An inlined compute read more than once is copied into each reader; above this many nodes it is
# computed once into a buffer instead.
_MAX_DUPLICATED_NODES = 48


def topo_tensors(outputs: list[Tensor]) -> list[Tensor]:
    """Every tensor the outputs depend on, producers first."""
    order, seen = [], set()
    stack = [(t, False) for t in reversed(outputs)]
    while stack:
        t, done = stack.pop()
        if done:
            order.append(t)
            continue
        if t.id in seen:
            continue
        seen.add(t.id)
        stack.append((t, True))
        for p in reversed(_producers(t)):
            if p.id not in seen:
                stack.append((p, False))
    return order


def flat_index(shape, idx) -> PrimExpr:
    """Row-major offset of `idx` in a tensor of `shape`."""
    off: PrimExpr | int = 0
    for d, i in zip(shape, idx):
        off = off * d + i
    return off if isinstance(off, PrimExpr) else Const(off, INDEX)


def _size(shape):
    n = 1
    for d in shape:
        n = n * d
    return n


class KernelUnsupported(Exception):
    """A hand-written kernel refused its configuration: lower that call otherwise."""

    def __init__(self, op):
        super().__init__(op.name)
        self.op = op


class Scheduler:
    """Builds the loop IR of one kernel. `llctx` (a codegen ModuleContext) receives the
    hand-written kernels the group calls."""

    def __init__(self, outputs: list[Tensor], buffers: dict, nthreads: int = 2, llctx=None):
        self.llctx = llctx
        self.outputs = outputs
        self.buffers = dict(buffers)  # Tensor id -> Buffer (placeholders and outputs)
        self.nthreads = nthreads
        self.order = topo_tensors(outputs)
        self.tensors = {t.id: t for t in self.order}
        out_ids = {t.id for t in outputs}
        self.materialized = {
            t.id
            for t in self.order
            if t.op is not None
            and (t.id in out_ids or t.is_reduction or t.attrs.get("materialize"))
        } | {t.id for t in self.order if _is_extern(t)}
        for t in self.order:  # inputs of external kernels must exist as buffers
            if _is_extern(t):
                for x in t.attrs["extern"].inputs:
                    if x.op is not None:
                        self.materialized.add(x.id)
        self._bound_duplication()
        self.inlined: dict[int, PrimExpr] = {}
        self._inline_memo: dict = {}
        self.simp = Simplifier()
        self.allocs: list[T.Buffer] = []
        # a stage marked exact (e.g. resize feeding integer rounding) turns off FMA contraction
        self.contract = not any(t.attrs.get("exact") for t in self.order)

    # -- inlining ------------------------------------------------------------------------------
    def _bound_duplication(self) -> None:
        """Materialize an inlined compute that is read more than once and whose inlined body is
        large: inlining it would copy the body into every reader, and copies of copies grow
        exponentially along a chain like x[i] = x[i-1] + x[i-2] (TVM's fusion tests). Small
        bodies (a bias add, a cast) stay inlined: recomputing them is cheaper than a buffer."""
        uses: dict[int, int] = {}
        bodies = {}
        for t in self.order:
            if t.op is None or _is_extern(t):
                continue
            body = t.op.body
            roots = [body] if type(body) is not Reduce else [body.source, body.where]
            bodies[t.id] = [r for r in roots if r is not None]
            for r in bodies[t.id]:
                for n in post_order(r):
                    for c in operands(n):
                        if type(c) is Read:
                            uses[c.tensor.id] = uses.get(c.tensor.id, 0) + 1
                    if n is r and type(n) is Read:
                        uses[n.tensor.id] = uses.get(n.tensor.id, 0) + 1
        size: dict[int, int] = {}  # tensor id -> node count of its body once inlined
        for t in self.order:
            if t.id not in bodies:
                continue
            total = 0
            for r in bodies[t.id]:
                tree: dict[int, int] = {}
                for n in post_order(r):
                    k = 1 + sum(tree[id(c)] for c in operands(n))
                    if type(n) is Read and n.tensor.id not in self.materialized:
                        k += size.get(n.tensor.id, 1) - 1
                    tree[id(n)] = k
                total += tree[id(r)]
            size[t.id] = total
            if (
                t.id not in self.materialized
                and uses.get(t.id, 0) > 1
                and total > _MAX_DUPLICATED_NODES
            ):
                self.materialized.add(t.id)
                size[t.id] = 1

    def inline(self, e: PrimExpr) -> PrimExpr:
        """`e` with reads of non-materialized computes replaced by their bodies."""
        key = self.simp.key
        memo = self._inline_memo

        def fn(orig, new):
            if type(new) is not Read:
                return new
            t = new.tensor
            if t.op is None or t.id in self.materialized:
                return new
            k = (t.id, tuple(key(i) for i in new.indices))
            r = memo.get(k)
            if r is None:
                body = self.inlined_body(t)
                r = substitute(body, dict(zip(t.op.axes, new.indices)))
                memo[k] = r
            return r

        return rewrite(e, fn)

    def inlined_body(self, t: Tensor) -> PrimExpr:
        b = self.inlined.get(t.id)
        if b is None:  # run() fills these in topological order, so this is rare
            b = self.inlined[t.id] = self.inline(t.op.body)
        return b

    # -- buffers -------------------------------------------------------------------------------
    def buffer(self, t: Tensor) -> T.Buffer:
        b = self.buffers.get(t.id)
        if b is None and t.op is None and "const" in t.attrs:
            b = T.Buffer(t.name, t.dtype, _size(t.shape), "const", t.shape, data=t.attrs["const"])
            self.buffers[t.id] = b
        if b is None:
            b = T.Buffer(t.name, t.dtype, _size(t.shape), "heap", t.shape)
            self.buffers[t.id] = b
            self.allocs.append(b)
        return b

    def to_loads(self, e: PrimExpr, local: dict) -> PrimExpr:
        """Reads of materialized tensors and placeholders -> Loads (locals: tensor id ->
        (local buffer, index keys it must be read at))."""

        def fn(orig, new):
            if type(new) is not Read:
                return new
            t = new.tensor
            if t.id in local:
                return Load(local[t.id], Const(0, INDEX), t.dtype)
            buf = self.buffer(t)
            idx = self.simp(flat_index(t.shape, new.indices))
            return Load(buf, idx, t.dtype)

        return rewrite(e, fn)

    # -- stages --------------------------------------------------------------------------------
    def run(self) -> T.Stmt:
        for p in self.order:  # producers first, so each inlining step is shallow
            if p.op is not None and p.id not in self.materialized:
                self.inlined[p.id] = self.inline(p.op.body)
        stages = [t for t in self.order if t.id in self.materialized]
        # Which reductions can be computed inside their single reader's loop nest.
        readers: dict[int, list] = {}
        stage_exprs = {}
        for t in stages:
            if _is_extern(t):
                continue
            body = t.op.body
            if type(body) is Reduce:
                e = Reduce(
                    body.kind,
                    self.inline(body.source),
                    body.axes,
                    self.inline(body.where) if body.where is not None else None,
                    body.last,
                    body.dtype,
                )
            else:
                e = self.inline(body)
            stage_exprs[t.id] = e
            for n in post_order(e):
                if type(n) is Read and n.tensor.id in self.materialized:
                    readers.setdefault(n.tensor.id, []).append((t, n))
            for d in t.shape:
                if isinstance(d, PrimExpr):
                    for n in post_order(d):
                        if type(n) is Read:
                            readers.setdefault(n.tensor.id, []).append((None, n))
        out_ids = {t.id for t in self.outputs}
        placed: dict[int, tuple] = {}  # reduction id -> (host stage, depth)
        for t in reversed(stages):
            if t.id in out_ids or not t.is_reduction or t.id not in readers:
                continue
            host = self._compute_at_host(t, readers[t.id], placed)
            if host is not None:
                placed[t.id] = host
        absorbed = self._epilogues(stages, stage_exprs, readers, placed, out_ids)
        stmts = []
        done_extern = set()
        for t in stages:
            if t.id in placed or t.id in absorbed:
                continue
            if _is_extern(t):
                op = t.attrs["extern"]
                if id(op) in done_extern:
                    continue
                done_extern.add(id(op))
                ins = [self.buffer(x) for x in op.inputs]
                if isinstance(op, LoopOp):
                    outs = [self.buffer(x) for x in op.outputs]
                    stmts.append(op.build(ins, outs))
                    continue
                fused = getattr(op, "fused", None)
                if fused is None:
                    self._emit_kernel(op, None)
                    outs = [self.buffer(x) for x in op.outputs]
                    extra = []
                else:
                    stage, extra = fused
                    outs = [self.buffer(stage)]
                batch = getattr(op, "batch", None)
                if batch is not None:  # once per element of a run-time batch
                    n = T.index_var("batch")
                    ins = [_batch_slice(b, n) if k == 0 else b for k, b in enumerate(ins)]
                    outs = [_batch_slice(b, n) for b in outs]
                    extra = [_batch_slice(b, n) if _has_run_time_batch(b) else b for b in extra]
                    args = ins + outs + extra + list(op.scalar_args)
                    call = T.CallKernel(op.name, args, None)
                    stmts.append(T.For(n, batch, call))
                    continue
                stmts.append(T.CallKernel(op.name, ins + outs + extra + list(op.scalar_args), None))
                continue
            inner = [r for r in stages if placed.get(r.id, (None,))[0] is t]
            stmts.append(self._stage(t, stage_exprs, inner, placed))
        body = T.seq(*stmts) if stmts else T.Seq([])
        for b in reversed(self.allocs):
            body = T.Allocate(b, body)
        return body

    def _emit_kernel(self, op, epilogue) -> bool:
        """Define a hand-written kernel in the module (once); False if it refused the
        epilogue, KernelUnsupported if it refused the call."""
        if op.emit is None or self.llctx is None:
            return True
        try:
            op.info = op.emit(self.llctx.llmod, op.name, epilogue)
        except NotImplementedError:
            if epilogue is not None:
                self._forget(op.name)
                return False
            self._forget(op.name)
            raise KernelUnsupported(op) from None
        self.llctx.externs.add(op.name)
        return True

    def _forget(self, name: str) -> None:
        g = self.llctx.llmod.globals
        if name in g:
            del g[name]

    def _epilogues(self, stages, stage_exprs, readers, placed, out_ids) -> set:
        """Fuse each hand-written kernel's single elementwise consumer into it (see
        relay_core.backend.epilogue). Returns the ids of the stages the kernels absorbed."""
        absorbed: set = set()
        if self.llctx is None:
            return absorbed
        hosts = {h.id for h, _, _ in placed.values()}
        for t in stages:
            op = t.attrs.get("extern") if _is_extern(t) else None
            if op is None or isinstance(op, LoopOp) or len(op.outputs) != 1 or t.id in out_ids:
                continue
            batched = getattr(op, "batch", None) is not None
            rd = readers.get(t.id, [])
            if not rd or any(r is None or r is not rd[0][0] for r, _ in rd):
                continue
            c = rd[0][0]
            # a kernel called once per element of a run-time batch sees one element: its
            # epilogue is built for shape (1, ...) and reads the batch-wide buffers at that
            # element (sliced like the kernel's own input and output)
            shape = (1,) + tuple(c.shape[1:]) if batched and c.shape else tuple(c.shape)
            if (
                c.is_reduction
                or c.id in hosts
                or c.id in absorbed
                or c.dtype != "float32"
                or t.dtype != "float32"
                or tuple(c.shape) != tuple(t.shape)
                or not all(isinstance(d, int) for d in shape)
                or not c.shape
            ):
                continue
            if any(not _identity_read(n, c) for _, n in rd):
                continue
            expr = stage_exprs[c.id]
            ok = True
            for n in post_order(expr):
                if type(n) is Read and n.tensor is not t:
                    x = n.tensor
                    if not (x.op is None and ("const" in x.attrs or x.id in self.buffers)):
                        ok = False
                        break
                    if batched and not _batch_read(n, c):
                        ok = False
                        break
            if not ok:
                continue
            from .epilogue import epilogue_for

            value_buf = T.Buffer("epi_value", t.dtype, _size(shape), "param", shape)
            saved = self.buffers.get(t.id)
            self.buffers[t.id] = value_buf
            for v, d in zip(c.op.axes, shape):
                self.simp.set_bound(v, 0, d - 1)
            loads = self.to_loads(expr, {})
            if saved is None:
                del self.buffers[t.id]
            else:
                self.buffers[t.id] = saved
            made = epilogue_for(self.llctx, loads, value_buf, c.op.axes)
            if made is None:
                continue
            epi, extras = made
            if self._emit_kernel(op, epi):
                op.fused = (c, extras)
                absorbed.add(c.id)
        return absorbed

    def _compute_at_host(self, r: Tensor, reads: list, placed: dict):
        """(host stage, depth, mapping) when every read of `r` is by one stage at that stage's
        leading loop variables (or 0 for size-1 dims); a read by a reduction already placed in
        the host counts as a read by the host (layer norm: mean read by variance)."""
        host = None
        mapping = None
        for reader, rd in reads:
            if reader is None:
                return None
            if reader.id in placed:
                h, _, rmap = placed[reader.id]
                axis_pos = {id(a): rmap[q] for q, a in enumerate(reader.op.axes)}
            elif not reader.is_reduction:
                h = reader
                axis_pos = {id(a): q for q, a in enumerate(reader.op.axes)}
            else:
                return None
            if host is None:
                host = h
            elif h is not host:
                return None
            used = []
            for d, i in zip(r.shape, rd.indices):
                if type(i) is Const:
                    if not (isinstance(d, int) and d == 1 and i.value == 0):
                        return None
                    used.append(None)
                    continue
                if type(i) is not Var or id(i) not in axis_pos:
                    return None
                used.append(axis_pos[id(i)])
            if mapping is None:
                mapping = used
            elif used != mapping:
                return None
        pos = [u for u in mapping if u is not None]
        if pos != list(range(len(pos))):
            return None
        return (host, len(pos), mapping)

    def _stage(self, t: Tensor, stage_exprs: dict, inner: list, placed: dict) -> T.Stmt:
        """The loop nest computing materialized tensor `t` (with reductions placed inside)."""
        axes = list(t.op.axes)
        shape = list(t.shape)
        expr = stage_exprs[t.id]
        local: dict[int, T.Buffer] = {}
        for v, d in zip(axes, shape):
            self.simp.set_bound(v, 0, d - 1 if isinstance(d, int) else None)
            if not isinstance(d, int):
                self.simp.set_upper(v, d)
        # reductions computed at depth k of this nest, in dependency order
        at_depth: dict[int, list] = {}
        for r in inner:
            _, depth, mapping = placed[r.id]
            at_depth.setdefault(depth, []).append((r, mapping))
        pre: dict[int, list] = {}
        locals_after: dict[int, T.Buffer] = {}
        for depth in sorted(at_depth):
            for r, mapping in at_depth[depth]:
                sub = {}
                for ax, m in zip(r.op.axes, mapping):
                    sub[ax] = Const(0, INDEX) if m is None else axes[m]
                rexpr = stage_exprs[r.id]
                acc = T.Buffer(f"{r.name}_acc", r.dtype, 1, "local")
                red_stmt = self._reduction(rexpr, sub, acc, dict(local))
                local[r.id] = acc
                locals_after[r.id] = acc
                pre.setdefault(depth, []).append((acc, red_stmt))
        out_buf = self.buffer(t)
        if expr is not None and type(expr) is Reduce:
            acc = T.Buffer(f"{t.name}_acc", t.dtype, 1, "local")
            body = T.seq(
                self._reduction(expr, {}, acc, local),
                T.Store(
                    out_buf, self.simp(flat_index(shape, axes)), Load(acc, Const(0, INDEX), t.dtype)
                ),
            )
            body = T.Allocate(acc, body)
        else:
            fused = self._fuse_trailing(expr, axes, shape, local, max(pre) if pre else 0)
            if fused is not None:
                axes, shape, value, index = fused
            else:
                value = self.to_loads(expr, local)
                index = self.simp(flat_index(shape, axes))
            if not pre and not inner:
                pieces = self._partition(axes, shape, value, index, out_buf, expr)
                if pieces is not None:
                    return pieces
            body = T.Store(out_buf, index, value)
        work = _static_work(shape, expr)
        if work is not None:
            work *= _expr_cost(expr)
        for r in inner:
            w, depth = _static_work([], stage_exprs[r.id]), placed[r.id][1]
            outer = _static_work(shape[:depth], None)
            work = None if None in (work, w, outer) else work + w * outer
        # build loops inside out, inserting placed reductions at their depth
        n = len(axes)
        for k in range(n, -1, -1):
            if k in pre:
                stmts = []
                for _, red in pre[k]:
                    stmts.append(red)
                body = T.seq(*stmts, body)
                for acc, _ in reversed(pre[k]):
                    body = T.Allocate(acc, body)
            if k > 0:
                body = T.For(axes[k - 1], shape[k - 1], body)
        return self._parallelize(body, axes, shape, work, min(pre) if pre else n)

    def _partition(self, axes, shape, value, index, out_buf, expr) -> T.Stmt | None:
        """Loop partitioning: when the value selects on a loop variable against constants (a
        concatenation or a stack along that axis: selects that are branches per element and
        keep LLVM from vectorising), the loop over that variable becomes one loop per range of
        it, with the selects resolved, inside the loops over the axes before it; None when there
        is nothing to cut. An unrolled LSTM's output (64 steps of 8 x 256 stacked) took
        200-400 us as one nest of selects."""
        if not all(isinstance(d, int) for d in shape):
            return None
        value = self.simp(value)  # the conditions in terms of the loop variables
        pos = {id(a): k for k, a in enumerate(axes)}
        found: dict[int, set] = {}
        for n in post_order(value):
            if type(n) is not Select:
                continue
            for a in (n.cond.a, n.cond.b) if type(n.cond) is Compare else ():
                k = pos.get(id(a))
                side = _compare_const(n.cond, a) if k is not None else None
                if side is not None:
                    op, c = side
                    cut = {c, c + 1} if op in ("eq", "ne") else {c + (op in ("le", "gt"))}
                    found.setdefault(k, set()).update(cut)
        p = min((k for k in found if any(0 < c < shape[k] for c in found[k])), default=None)
        if p is None:
            return None
        v = axes[p]
        cuts = sorted(c for c in found[p] if 0 < c < shape[p])
        if len(cuts) >= _MAX_PARTITIONS:
            return None
        bounds = [0, *cuts, shape[p]]
        cost = _expr_cost(expr)
        nests = []
        for lo, hi in zip(bounds, bounds[1:]):

            def resolve(orig, new, lo=lo, hi=hi):
                if type(new) is Select:
                    known = _known_over(new.cond, v, lo, hi)
                    if known is not None:
                        return new.t if known else new.f
                return new

            w = T.index_var(f"{v.name}_{lo}")
            self.simp.set_bound(w, 0, hi - lo - 1)
            at = {v: w + Const(lo, INDEX) if lo else w}
            pv = self.simp(substitute(rewrite(value, resolve), at))
            pi = self.simp(substitute(index, at))
            paxes = [w] + list(axes[p + 1 :])
            pshape = [hi - lo] + list(shape[p + 1 :])
            body: T.Stmt = T.Store(out_buf, pi, pv)
            for a, d in zip(reversed(paxes), reversed(pshape)):
                body = T.For(a, d, body)
            if p == 0:  # each range on the threads by itself, by its own work
                work = _static_work(pshape, None) * _expr_cost(pv)
                body = self._parallelize(body, paxes, pshape, work, len(paxes))
            nests.append(body)
        body = T.seq(*nests)
        if p == 0:
            return body
        for a, d in zip(reversed(axes[:p]), reversed(shape[:p])):
            body = T.For(a, d, body)
        work = _static_work(shape, None) * cost
        return self._parallelize(body, list(axes[:p]), list(shape[:p]), work, p)

    def _fuse_trailing(self, expr, axes, shape, local, first: int):
        """(axes, shape, value, store index) with the trailing loops from some axis >= `first`
        fused into one when every index stays linear in it (elementwise over contiguous
        elements: no division or remainder of the fused variable is left), the longest such
        fusion; None when none applies. Loops of 7 or 14 (7x7 and 14x14 planes) are unrolled
        and left scalar by LLVM; one loop over the plane (or more) vectorises."""
        n = len(axes)
        if n - first < 2 or not all(isinstance(d, int) and d > 0 for d in shape):
            return None
        for j in range(first, n - 1):
            f, total, m = self._fused_var("fl_" + axes[j].name, axes[j:], shape[j:])
            value = self.to_loads(substitute(expr, m), local)
            index = self.simp(substitute(flat_index(shape, axes), m))
            if _linear_in(f, (value, index)):
                return list(axes[:j]) + [f], list(shape[:j]) + [total], value, index
        return None

    def _reduction(self, red: Reduce, sub: dict, acc: T.Buffer, local: dict) -> T.Stmt:
        """Statements leaving the reduction's value in `acc` (axes substituted by `sub`)."""
        src = substitute(red.source, sub) if sub else red.source
        where = red.where
        if where is not None and sub:
            where = substitute(where, sub)
        for a in red.axes:
            self.simp.set_bound(a, 0, a.extent - 1 if isinstance(a.extent, int) else None)
        src = self.to_loads(src, local)
        if where is not None:
            where = self.to_loads(where, local)
        zero = Const(0, INDEX)
        if red.kind in ("argmax", "argmin"):
            # start from the first element, so that all -inf (or all NaN) rows give 0
            best = T.Buffer(acc.name + "_v", red.source.dtype, 1, "local")
            pos = flat_index([a.extent for a in red.axes], list(red.axes))
            upd = T.ReduceUpdate(red.kind, best, src, acc, self.simp(pos), red.last)
            first = substitute(src, {a: zero for a in red.axes})
            init = T.seq(T.Store(best, zero, first), T.Store(acc, zero, zero))
            loops = T.loop_nest([(a, a.extent) for a in red.axes], upd)
            return T.Allocate(best, T.seq(init, loops))
        loops = [(a, a.extent) for a in red.axes]
        fused = self._fuse_reduction_axes(red, sub, local)
        if fused is not None:
            loops, src, where = fused
        upd: T.Stmt = T.ReduceUpdate(red.kind, acc, src)
        if where is not None:
            upd = T.IfThenElse(where, upd)
        init = T.Store(acc, zero, identity(red.kind, red.dtype))
        return T.seq(init, T.loop_nest(loops, upd))

    def _fuse_reduction_axes(self, red: Reduce, sub: dict, local: dict):
        """(loops, source, where) with the innermost reduction axes fused into one loop when
        every index they appear in stays linear in it (they are contiguous: a mean over H and W
        reads one run of H*W elements); None when no fusion applies. A nest of short loops
        (56 x 56) is fully unrolled inside and vectorised across the outer one with gathers by
        LLVM; one long loop vectorises with contiguous loads."""
        axes = list(red.axes)
        if len(axes) < 2 or not all(isinstance(a.extent, int) and a.extent > 0 for a in axes):
            return None
        for j in range(len(axes) - 1):  # the longest fusion first
            f, total, m = self._fused_var("rf", axes[j:], [a.extent for a in axes[j:]])
            full = {**sub, **m} if sub else m
            src = self.to_loads(substitute(red.source, full), local)
            where = red.where
            if where is not None:
                where = self.to_loads(substitute(where, full), local)
            if _linear_in(f, (src, where)):
                return [(a, a.extent) for a in axes[:j]] + [(f, total)], src, where
        return None

    def _fused_var(self, name: str, axes, extents):
        """(f, total, {axis: index from f}): one bounded loop variable over the nest of `axes`
        (outermost first) with the given static extents."""
        total = 1
        for d in extents:
            total *= d
        f = T.index_var(name)
        self.simp.set_bound(f, 0, total - 1)
        m, stride = {}, total
        for k, (a, d) in enumerate(zip(axes, extents)):
            stride //= d
            q = f // stride if stride > 1 else f
            m[a] = q % d if k else q
        return f, total, m

    def _parallelize(self, nest: T.Stmt, axes, shape, work, max_depth: int) -> T.Stmt:
        """Fuse the leading loops (at most `max_depth`) into one parallel loop."""
        if self.nthreads <= 1 or not axes or max_depth == 0:
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
            if ext >= 4 * self.nthreads:
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


def _linear_in(v: Var, exprs) -> bool:
    """Whether no division or remainder of `v` is left in `exprs` (None entries skipped)."""
    divs = (
        x
        for e in exprs
        if e is not None
        for x in post_order(e)
        if type(x) is Binary and x.op in ("floordiv", "floormod")
    )
    return not any(n is v for x in divs for n in post_order(x))


# At most this many loop nests from one partitioned stage (_partition).
_MAX_PARTITIONS = 256
_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def _compare_const(cond, v: Var):
    """(op, k) when `cond` compares `v` with integer constant k as `v op k`, else None."""
    if type(cond) is not Compare or cond.op not in _FLIP:
        return None
    if cond.a is v and type(cond.b) is Const and isinstance(cond.b.value, int):
        return cond.op, cond.b.value
    if cond.b is v and type(cond.a) is Const and isinstance(cond.a.value, int):
        return _FLIP[cond.op], cond.a.value
    return None


def _known_over(cond, v: Var, lo: int, hi: int) -> bool | None:
    """The value of `cond` for every v in [lo, hi) when it is the same for all, else None."""
    side = _compare_const(cond, v)
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


def _batch_slice(buf: T.Buffer, n) -> T.Offset:
    """Element n of a buffer's leading (batch) axis."""
    per = 1
    for d in buf.shape[1:]:
        per = per * d
    return T.Offset(buf, n * per)


def _has_run_time_batch(buf: T.Buffer) -> bool:
    return bool(buf.shape) and not isinstance(buf.shape[0], int)


def _batch_read(read, stage) -> bool:
    """A read an epilogue of a per-batch-element kernel can make: a tensor with the stage's
    run-time batch axis read at the stage's batch index (the kernel passes a slice of it), or
    a tensor without one read at indices that do not involve the batch index."""
    n = stage.op.axes[0]
    x = read.tensor
    if x.shape and not isinstance(x.shape[0], int):
        if read.indices[0] is not n:
            return False
        rest = read.indices[1:]
    else:
        rest = read.indices
    return not any(v is n for i in rest for v in post_order(i))


def _identity_read(read, stage) -> bool:
    """The read takes element i of its tensor at stage index i (0 on size-1 dims)."""
    for i, a, d in zip(read.indices, stage.op.axes, read.tensor.shape):
        if i is a:
            continue
        if type(i) is Const and i.value == 0 and isinstance(d, int) and d == 1:
            continue
        return False
    return len(read.indices) == len(stage.op.axes)


def _expr_cost(expr) -> int:
    """Operations per output element (at least 1), counted over the expression DAG."""
    src = expr.source if type(expr) is Reduce else expr
    # index arithmetic (int64) is not counted: it is mostly hoisted or strength-reduced
    return max(
        1,
        sum(_NODE_COST.get(type(n).__name__, 0) for n in post_order(src) if n.dtype != INDEX),
    )


def _static_work(shape, expr) -> int | None:
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


def schedule(outputs: list[Tensor], buffers: dict, nthreads: int = 2, llctx=None) -> T.Stmt:
    """The loop IR computing `outputs`; `buffers` maps tensor ids of placeholders and outputs
    to Buffers."""
    return Scheduler(outputs, buffers, nthreads, llctx).run()


__all__ = ["schedule", "Scheduler", "ExternOp", "extern", "flat_index", "operands"]
