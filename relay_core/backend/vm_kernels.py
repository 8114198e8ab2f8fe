"""Kernel calls of the general path (relay_core.backend.vm): a primitive function's inputs are
flattened from boxed values, its lifted constants appended (prepacked where the kernel reads its
own layout), run-time dimensions read, outputs allocated, and the kernel called."""

from __future__ import annotations

from llvmlite import ir

from ..ir import dtype as _dt
from ..ir.expr import Call
from ..ir.types import TupleType
from .codegen import I32, I64, ExprEmitter, storage_type
from .graph import _is_view
from .vm import CTX, VMError


def kernel_call(fe, call: Call):
    """Emit a call of a primitive function's kernel: inputs flattened, constants appended,
    run-time dims read, outputs allocated; returns the output (a tuple object for tuples)."""
    b = fe.b
    lk, name, consts = fe.vm.kernel(call)
    flat = []
    stack = list(reversed([(fe.val(a), a.checked_type) for a in call.args]))
    while stack:
        v, t = stack.pop()
        if isinstance(t, TupleType):
            for i in reversed(range(len(t.fields))):
                stack.append((fe.rt("relay_field", [v, ir.Constant(I64, i)]), t.fields[i]))
        else:
            flat.append(v)
    objs = b.load(
        b.gep(b.bitcast(fe.ctx, CTX.as_pointer()), [ir.Constant(I32, 0), ir.Constant(I32, 1)])
    )
    base = len(flat)
    for j, c in enumerate(consts):
        pp = lk.prepack.get(base + j) if lk.prepack else None
        slot = fe.vm.const_index(c, pp, (name, base + j))
        flat.append(b.load(b.gep(objs, [ir.Constant(I64, slot)])))
    if len(flat) != len(lk.in_types):
        raise VMError(f"kernel {name}: {len(flat)} inputs for {len(lk.in_types)} parameters")
    nth = b.load(
        b.gep(b.bitcast(fe.ctx, CTX.as_pointer()), [ir.Constant(I32, 0), ir.Constant(I32, 2)])
    )
    dims = {}
    for dv, src in zip(lk.dims, lk.dim_sources):
        if src[0] == "shape":
            dims[id(dv)] = fe.rt("relay_dim", [flat[src[1]], ir.Constant(I64, src[2])])

    def read_values(kind):
        for dv, src in zip(lk.dims, lk.dim_sources):
            if src[0] != kind:
                continue
            obj = flat[src[1]] if kind == "value" else pre_outs[src[1]]
            t = lk.in_types[src[1]].dtype if kind == "value" else lk.pre[1][src[1]][1]
            idx = ExprEmitter(fe.vm.llctx, b, dims)(src[2])
            p = b.bitcast(fe.rt("relay_data", [obj]), storage_type(t).as_pointer())
            v = b.load(b.gep(p, [idx]))
            em = ExprEmitter(fe.vm.llctx, b, {}).em
            dims[id(dv)] = em.cast(em.from_storage(v, t), t, dv.dtype)

    pre_outs = []
    read_values("value")
    if lk.pre is not None:  # values the shapes need, computed first
        pk, specs = lk.pre
        pre_em = ExprEmitter(fe.vm.llctx, b, dims)  # run-time extents: the inputs' dims
        for shape, dtype in specs:
            arr = _dims_array(
                fe, [ir.Constant(I64, d) if isinstance(d, int) else pre_em(d) for d in shape]
            )
            pre_outs.append(
                fe.rt(
                    "relay_tensor_new",
                    [ir.Constant(I64, len(shape)), arr, ir.Constant(I64, _dt.itemsize(dtype))],
                )
            )
        pfn = fe.vm.llmod.globals[pk.name]
        ptrs = [fe.rt("relay_data", [v]) for v in flat + pre_outs]
        pargs = [b.bitcast(p, pt) for p, pt in zip(ptrs, pfn.function_type.args)]
        for kind in ("shape", "value"):
            pargs += [dims[id(dv)] for dv, src in zip(lk.dims, lk.dim_sources) if src[0] == kind]
        b.call(pfn, pargs + [nth])
        read_values("pre")
    outs = []
    shape_em = ExprEmitter(fe.vm.llctx, b, dims)
    view = _is_view(call.op) and len(lk.out_types) == 1 and not lk.pre
    for shape, t in zip(lk.out_shapes, lk.out_types):
        ds = [shape_em(d) for d in shape]
        arr = _dims_array(fe, ds)
        if view:  # a reshape (dyn.reshape of a value): the same bytes, no kernel
            size = ir.Constant(I64, _dt.itemsize(t.dtype))
            return fe.rt("relay_tensor_view", [flat[0], ir.Constant(I64, len(ds)), arr, size])
        outs.append(
            fe.rt(
                "relay_tensor_new",
                [ir.Constant(I64, len(ds)), arr, ir.Constant(I64, _dt.itemsize(t.dtype))],
            )
        )
    kfn = fe.vm.llmod.globals[name]
    # the kernel also reads what its pre-kernel computed (NMS's kept boxes: not run again)
    ptrs = [fe.rt("relay_data", [v]) for v in flat + outs + pre_outs]
    args = [b.bitcast(p, pt) for p, pt in zip(ptrs, kfn.function_type.args)]
    args += [dims[id(dv)] for dv in lk.dims]
    if fe.vm.profile:  # the kernel alone is timed (not the allocations around it)
        step, per_batch = fe.vm.profile_step(name, call)
        if per_batch:  # its batch, for the FLOP count
            fe.rt(
                "relay_prof_units",
                [ir.Constant(I32, step), fe.rt("relay_dim", [flat[0], ir.Constant(I64, 0)])],
            )
        fe.rt("relay_prof_start", [])
    b.call(kfn, args + [nth])
    if fe.vm.profile:
        fe.rt("relay_prof_step", [ir.Constant(I32, step)])
    for o in pre_outs:
        fe.rt("relay_release", [o])
    rt = call.op.body.checked_type
    if isinstance(rt, TupleType):
        return _pack(fe, rt, outs)
    return outs[0]


def _dims_array(fe, ds: list):
    """An i64 array (an alloca in the entry block, reused by loops) holding `ds`."""
    fe.alloca_b.position_at_start(fe.fn.entry_basic_block)
    arr = fe.alloca_b.alloca(I64, size=ir.Constant(I64, max(len(ds), 1)))
    for i, d in enumerate(ds):
        fe.b.store(d, fe.b.gep(arr, [ir.Constant(I64, i)]))
    return arr


def _pack(fe, t, outs: list):
    """Tuples of the kernel outputs (taken in order)."""
    it = iter(outs)

    def build(tt):
        if isinstance(tt, TupleType):
            o = fe.rt("relay_tuple_new", [ir.Constant(I64, len(tt.fields))])
            for i, f in enumerate(tt.fields):
                fe.rt("relay_set_field", [o, ir.Constant(I64, i), build(f)])
            return o
        return next(it)

    return build(t)
