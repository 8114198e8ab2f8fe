"""From tensor expressions to the loop IR of one kernel.

The default schedule, applied to every fused group:
- every compute that is not an output, a reduction or an external kernel's result is inlined
  into its readers (so an elementwise chain becomes one expression per output element);
- a reduction read by one stage only at that stage's leading loop indices (softmax, layer norm,
  mean, a reduction with an elementwise epilogue) is computed inside that stage's loop nest
  into a register ("compute_at"); other reductions get a temporary buffer; a sum over a middle
  axis whose output's innermost loop reads its input contiguously (a channel mean of NCHW
  data) is computed one row of accumulators at a time instead;
- the outer loops of each stage are fused and split across threads when there is enough work;
  the innermost loop is left simple so that LLVM vectorises it.
The loop-nest transformations themselves (fusing loops, partitioning, parallelising, cost
estimates) are in loop_nest.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..te.expr import INDEX, Const, Load, PrimExpr, Read, Reduce, Var
from ..te.simplify import Simplifier
from ..te.tensor import Tensor, identity
from ..te.visit import operands, post_order, rewrite, substitute
from . import loop_nest
from . import tir as T
from .batch_blocks import BatchBlocks, _batch_calls, same_transform  # noqa: F401
from .loop_nest import expr_cost, flat_index, fused_var, linear_in, parallelize, static_work
from .schedule_rows import row_reductions


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
    batch: object = None  # run-time batch extent: the kernel computes one element per call
    # (images, kernel name, emit) of kernels computing blocks of `images` elements, largest
    # first (whole blocks of each in turn, the per-element kernel for the rest); without the
    # ones not wanted or that cannot share the per-element kernel's prepacked constants
    blocks: list = field(default_factory=list)
    # a kernel taking run-time extents (kernels/gemm_dynamic): the group's extents (te.Vars)
    # it receives last, which an epilogue's indices may use; None: a static-shaped kernel
    env: list | None = None
    written: list | None = None  # the buffers the kernel's call writes (set when scheduled)
    # a batch-split op's kernel for the whole run-time batch at once, called from WHOLE_BATCH
    # elements on: (name, emit(llmod, name, epilogue), scalar args, env); None when not kept
    whole: tuple | None = None


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


def topo_tensors(outputs: list[Tensor], given: frozenset = frozenset()) -> list[Tensor]:
    """Every tensor the outputs depend on, producers first; `given` tensor ids (computed
    elsewhere, read from their buffers) are left out with what only they need."""
    order, seen = [], set(given)
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


class Scheduler(BatchBlocks):
    """Builds the loop IR of one kernel. `llctx` (a codegen ModuleContext) receives the
    hand-written kernels the group calls."""

    def __init__(
        self,
        outputs: list[Tensor],
        buffers: dict,
        nthreads: int = 2,
        llctx=None,
        given: frozenset = frozenset(),
    ):
        self.llctx = llctx
        self.outputs = outputs
        # Tensor id -> Buffer (placeholders, outputs and `given` tensors: computed before the
        # kernel runs, read like placeholders)
        self.buffers = dict(buffers)
        self.nthreads = nthreads
        self.given = given
        self.order = topo_tensors(outputs, given)
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
            if t.op is None or t.id in self.materialized or t.id in self.given:
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
                acc = local[t.id]
                if type(acc) is tuple:  # (buffer, index): a row of accumulators
                    return Load(acc[0], acc[1], t.dtype)
                return Load(acc, Const(0, INDEX), t.dtype)
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
                    self._emit_blocks(op, lambda k: (True, None))
                    self._emit_whole(op, None)
                    outs = [self.buffer(x) for x in op.outputs]
                    extra = []
                else:
                    stage, extra = fused
                    outs = [self.buffer(stage)]
                op.written = outs
                if op.batch is not None:  # per element (and per block) of a run-time batch
                    stmts.append(_batch_calls(op, ins, outs, extra))
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
            batched = op.batch is not None
            rd = readers.get(t.id, [])
            if not rd or any(r is None or r is not rd[0][0] for r, _ in rd):
                continue
            c = rd[0][0]
            # a kernel called once per element of a run-time batch sees one element: its
            # epilogue is built for shape (1, ...) and reads the batch-wide buffers at that
            # element (sliced like the kernel's own input and output)
            shape = (1,) + tuple(c.shape[1:]) if batched and c.shape else tuple(c.shape)
            run_time = op.env is not None  # the kernel reads the extents at run time
            if (
                c.is_reduction
                or c.id in hosts
                or c.id in absorbed
                or c.dtype != "float32"
                or t.dtype != "float32"
                or tuple(c.shape) != tuple(t.shape)
                or not (run_time or all(isinstance(d, int) for d in shape))
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
            made = self._epilogue(t, c, expr, shape, op.env or ())
            if made is None:
                continue
            epi, extras = made
            if self._emit_kernel(op, epi):
                op.fused = (c, extras)
                absorbed.add(c.id)

                def again(shape, env=(), t=t, c=c, expr=expr, extras=extras):
                    """The same epilogue seen with another shape: (ok, epilogue); ok only when
                    it reads the same extra buffers."""
                    saved, self.simp = self.simp, Simplifier()  # its memo assumes the bounds
                    made = self._epilogue(t, c, expr, shape, env)
                    self.simp = saved
                    ok = made is not None and [b.id for b in made[1]] == [b.id for b in extras]
                    return ok, made[0] if ok else None

                if op.blocks:  # for blocks of elements
                    self._emit_blocks(op, lambda k, s=shape: again((k,) + s[1:]))
                if op.whole is not None:  # for the whole run-time batch
                    ok, whole_epi = again(tuple(c.shape), op.whole[3])
                    self._emit_whole(op, whole_epi if ok else False)
        return absorbed

    def _epilogue(self, t: Tensor, c: Tensor, expr, shape: tuple, env=()):
        """(Epilogue, extra Buffers) applying stage `c` (expression `expr`) to kernel output `t`
        seen with `shape`, or None when it cannot be fused. `env`: run-time extents the kernel
        passes to the epilogue after the indices (its indices may use them)."""
        from .epilogue import epilogue_for

        value_buf = T.Buffer("epi_value", t.dtype, _size(shape), "param", shape)
        saved = self.buffers.get(t.id)
        self.buffers[t.id] = value_buf
        for v, d in zip(c.op.axes, shape):
            if isinstance(d, int):
                self.simp.set_bound(v, 0, d - 1)
        loads = self.to_loads(expr, {})
        if saved is None:
            del self.buffers[t.id]
        else:
            self.buffers[t.id] = saved
        return epilogue_for(self.llctx, loads, value_buf, c.op.axes, env)

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
        rows = row_reductions(self, t, axes, shape, expr, inner, placed, stage_exprs)
        if rows is not None:
            return rows
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
            fused = loop_nest.fuse_trailing(
                self.simp,
                axes,
                shape,
                lambda m: (
                    self.to_loads(substitute(expr, m), local),
                    self.simp(substitute(flat_index(shape, axes), m)),
                ),
                max(pre) if pre else 0,
            )
            if fused is not None:
                axes, shape, value, index = fused
            else:
                value = self.to_loads(expr, local)
                index = self.simp(flat_index(shape, axes))
            if not pre and not inner:
                pieces = loop_nest.partition(
                    self.simp, self.nthreads, axes, shape, value, index, out_buf, expr
                )
                if pieces is not None:
                    return pieces
                split = loop_nest.split_inner(self.simp, axes, shape, value, index)
                if split is None:
                    split = loop_nest.tile_transpose(self.simp, axes, shape, value, index)
                if split is not None:
                    axes, shape, value, index = split
            body = T.Store(out_buf, index, value)
        work = static_work(shape, expr)
        if work is not None:
            work *= expr_cost(expr)
        for r in inner:
            w, depth = static_work([], stage_exprs[r.id]), placed[r.id][1]
            outer = static_work(shape[:depth], None)
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
        return parallelize(self.nthreads, body, axes, shape, work, min(pre) if pre else n)

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
            f, total, m = fused_var(self.simp, "rf", axes[j:], [a.extent for a in axes[j:]])
            full = {**sub, **m} if sub else m
            src = self.to_loads(substitute(red.source, full), local)
            where = red.where
            if where is not None:
                where = self.to_loads(substitute(where, full), local)
            if linear_in(f, (src, where)):
                return [(a, a.extent) for a in axes[:j]] + [(f, total)], src, where
        return None


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


def schedule(outputs: list[Tensor], buffers: dict, nthreads: int = 2, llctx=None) -> T.Stmt:
    """The loop IR computing `outputs`; `buffers` maps tensor ids of placeholders and outputs
    to Buffers."""
    return Scheduler(outputs, buffers, nthreads, llctx).run()


__all__ = ["schedule", "Scheduler", "ExternOp", "extern", "flat_index", "operands"]
