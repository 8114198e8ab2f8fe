"""The static path: a dataflow `@main` (after FuseOps) as one native entry point.

Every fused group becomes a kernel (identical groups share one), every intermediate tensor gets
an offset in one workspace (relay_core.backend.memory), and the entry function calls the kernels
in order:

    int32_t relay_run(void *const *inputs, void *const *outputs, void *const *constants,
                      void *workspace, int32_t nthreads);

It returns 0, or 1 when the model met an error at run time (an index out of range); the message
is then in `relay_last_error()`. Outputs are written in place by the kernels that produce them;
an output that is an input, a constant or a repeated value is copied.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
from llvmlite import ir

from ..errors import RelayError
from ..ir import dtype as _dt
from ..ir.expr import Call, Constant, Function, Op, Tuple, TupleGetItem, Var
from ..ir.structural import structural_hash
from ..ir.types import TensorType, TupleType
from ..ir.visitor import ExprFunctor, post_order
from . import memory
from .codegen import I8, I32, I64, PTR, ExprEmitter, KernelCodegen, ModuleContext, storage_type
from .derived import DerivedConst, DerivedPrepack, derived_const
from .kernels.common import output_image_stride
from .lower import GroupLowering, StridedOutputError, flatten_type
from .runtime import _contig
from .step_info import describe

ENTRY = "relay_run"


class NotStaticGraph(RelayError):
    """@main has control flow, closures or dynamic shapes: not for the static path."""


@dataclass(eq=False)
class Storage:
    kind: str  # "in" | "out" | "const" | "ws" | "view"
    index: int  # "view": the byte offset into `base`
    type: TensorType
    base: Storage | None = None  # "view": the storage whose bytes it is part of
    # elements between images when the producer writes it strided: a part of a concatenation
    # at batch > 1, to become a view of the result (GraphCompiler._elide)
    ys: int | None = None

    @property
    def nbytes(self) -> int:
        n = 1
        for d in self.type.shape:
            n *= d
        return n * _dt.itemsize(self.type.dtype)


@dataclass
class Step:
    kernel: str
    inputs: list
    outputs: list
    values: list = field(default_factory=list)  # (flat input, flat index, dtype, var dtype)
    # the group only concatenates its parameters: (axis, the parameters' indices in the order
    # of the result's parts)
    concat: tuple | None = None
    # a concatenation whose other parts were written in place: (part, byte offset of its
    # first image in the result) for each part copied, image by image (kernel COPY)
    copies: list | None = None


@dataclass
class GraphPlan:
    input_names: list
    input_types: list
    output_types: list
    constants: list  # numpy arrays and DerivedConsts (backend/derived.py), in slot order
    workspace: int
    entry: str = ENTRY
    kernels: int = 0
    steps: int = 0
    info: dict = field(default_factory=dict)


# The static path never enters functions: primitive functions are kernels.
_STATIC_CHILDREN = {
    Call: lambda e: e.args if type(e.op) in (Function, Op) else (e.op, *e.args),
    Tuple: lambda e: e.fields,
    TupleGetItem: lambda e: (e.tuple_value,),
}


def _no_children(e) -> tuple:
    return ()


def _children(e):
    return _STATIC_CHILDREN.get(type(e), _no_children)(e)


def _static_types(node) -> bool:
    return all(leaf.is_static for leaf in flatten_type(node.checked_type))


class _IsStatic(ExprFunctor):
    """`visit_<kind>(node)`: may `node` be in a static graph (dataflow of primitive calls,
    tuples and constants, all of static tensor types)?"""

    def visit_call(self, node: Call) -> bool:
        op = node.op
        if type(op) is Op:
            if op.opdef.data_dependent_shape:
                return False
        elif not (type(op) is Function and op.attr("Primitive")):
            return False
        return _static_types(node)

    def visit_var(self, node) -> bool:
        return _static_types(node)

    visit_constant = visit_tuple = visit_tuple_getitem = visit_var

    def visit_function(self, node: Function) -> bool:
        return bool(node.attr("Primitive"))

    def visit_op(self, node: Op) -> bool:
        return True

    def visit_default(self, node) -> bool:
        return False


def is_static_graph(func: Function) -> bool:
    """Dataflow only (primitive calls, tuples, constants) with static tensor types."""
    for p in func.params:
        t = p.checked_type
        if not isinstance(t, TensorType) or not t.is_static:
            return False
    check = _IsStatic()
    return all(check.dispatch(node) for node in post_order(func.body, _children))


def lift_constants(fn: Function) -> tuple[Function, list[Constant]]:
    """Non-scalar constants of a primitive function become trailing parameters."""
    consts = [n for n in post_order(fn.body) if type(n) is Constant and n.data.ndim > 0]
    if not consts:
        return fn, []
    from ..ir.visitor import substitute

    params = []
    mapping = {}
    for k, c in enumerate(consts):
        p = Var(f"c{k}", c.type)
        p._set_type(c.type)
        params.append(p)
        mapping[c] = p
    body = substitute(fn.body, mapping)
    new = Function(fn.params + tuple(params), body, fn.ret_type, fn.type_params, fn.attrs)
    from ..typing import infer_expr

    infer_expr(new)
    return new, consts


class ConstKeys:
    """Constants by content: the passes may wrap one weight in many Constant nodes (a rewrite
    per use) or copy it, and each copy would get a slot of its own -- and, for every kernel that
    reads it prepacked, a packed copy of its own (an unrolled LSTM read 127 copies of one 1 MB
    weight, one per time step, from memory instead of cache). Equal bytes, shape and dtype share
    one slot."""

    def __init__(self):
        self._by_array: dict[int, tuple] = {}  # id(c.data) -> key (the arrays outlive the build)

    def of(self, c: Constant) -> tuple:
        key = self._by_array.get(id(c.data))
        if key is None:
            a = np.asarray(c.data)
            if a.dtype.hasobject:  # strings: by identity
                digest = id(c.data)
            else:
                flat = _contig(a).reshape(-1).view(np.uint8)
                digest = hashlib.blake2b(flat.data, digest_size=16).digest()
            key = self._by_array[id(c.data)] = (a.dtype.str, a.shape, digest)
        return key


class GraphCompiler(ExprFunctor):
    def __init__(self, func: Function, llctx: ModuleContext, nthreads: int = 2, name: str = "k"):
        self.func = func
        self.llctx = llctx
        self.nthreads = nthreads
        self.prefix = name
        self.kernels: dict = {}  # key -> (LoweredKernel, llvm name)
        self.nkernels = 0
        self.const_arrays: list = []
        self.const_slot: dict = {}
        self.const_nodes: dict = {}
        self.const_keys = ConstKeys()
        self.step_ops: list = []
        self.step_flops: list = []
        self.step_sigs: list = []
        self.steps: list[Step] = []
        self.ws: list[Storage] = []
        import os

        # RELAY_PROFILE=1: the entry times every step (read with CompiledModule.profile())
        self.profile = os.environ.get("RELAY_PROFILE") == "1"

    # -- values: visit_<kind>(node) stores the node's value (storage, or a tuple of them) ------
    def visit_constant(self, node: Constant) -> None:
        self.values[id(node)] = self._const(node)

    def visit_call(self, node: Call) -> None:
        values = self.values
        op = node.op
        ys = self.strided.get(id(node))
        if type(op) is Function and op.attr("Primitive"):
            values[id(node)] = self._group(node, [values[id(a)] for a in node.args], ys)
        elif type(op) is Op:
            fn = _wrap_op(node)
            args = [a for a in node.args if type(a) is not Constant]
            call = Call(fn, tuple(args))
            values[id(node)] = self._group(call, [values[id(a)] for a in args], ys)
        else:
            self.visit_default(node)

    def visit_tuple(self, node: Tuple) -> None:
        values = self.values
        values[id(node)] = tuple(values[id(x)] for x in node.fields)

    def visit_tuple_getitem(self, node: TupleGetItem) -> None:
        values = self.values
        values[id(node)] = values[id(node.tuple_value)][node.index]

    def visit_function(self, node: Function) -> None:
        pass  # a primitive function: its call is the kernel

    def visit_default(self, node) -> None:
        raise NotStaticGraph(f"{type(node).__name__} in @main")

    def _const(self, c: Constant, prepack=None, tag=None) -> Storage:
        key = (self.const_keys.of(c), tag)
        s = self.const_slot.get(key)
        if s is None:
            if isinstance(prepack, DerivedPrepack):  # computed at load time from the original
                arr = derived_const(prepack, self._const(c))
            else:
                arr = _contig(c.data if prepack is None else prepack(c.data))
            s = Storage(
                "const", len(self.const_arrays), TensorType(arr.shape, _dt.from_numpy(arr.dtype))
            )
            self.const_arrays.append(arr)
            self.const_slot[key] = s
            self.const_nodes[s.index] = c
        return s

    def _new_ws(self, t: TensorType) -> Storage:
        s = Storage("ws", len(self.ws), t)
        self.ws.append(s)
        return s

    def run(self) -> GraphPlan:
        f = self.func
        values: dict[int, object] = {}
        names, in_types = [], []
        for p in f.params:
            t = p.checked_type
            leaves = flatten_type(t)
            if isinstance(t, TupleType):
                raise NotStaticGraph("tuple-typed inputs")
            for lt in leaves:
                if not lt.is_static:
                    raise NotStaticGraph(f"input {p.name_hint} has a dynamic shape {lt}")
            values[id(p)] = Storage("in", len(names), t)
            names.append(p.name_hint)
            in_types.append(t)
        self.values = values
        nodes = list(post_order(f.body, _children))
        self.strided = _strided_parts(nodes)
        for node in nodes:
            if id(node) not in values:
                self.dispatch(node)
        result = values[id(f.body)]
        out_types = flatten_type(f.body.checked_type)
        leaves = _flatten(result)
        outs = []
        copies = []
        used = set()
        for k, s in enumerate(leaves):
            if s.kind == "ws" and id(s) not in used:
                used.add(id(s))
                s.kind, s.index = "out", k  # the producer writes the output directly
                outs.append(s)
            else:
                copies.append((Storage("out", k, s.type), s))
        self.copies = copies
        self._elide_concats()
        self._drop_unread_constants()
        offsets, total = self._plan()
        self.offsets, self.total = offsets, total
        self._entry()
        return GraphPlan(
            names,
            in_types,
            out_types,
            self.const_arrays,
            total,
            ENTRY,
            kernels=len({name for _, name in self.kernels.values()}),
            steps=len(self.steps),
            info={
                "step_ops": self.step_ops,
                "step_kernels": [s.kernel for s in self.steps],
                "step_flops": self.step_flops,
                "step_sigs": self.step_sigs,
                "profile": self.profile,
            },
        )

    def _group(self, call: Call, args: list, ys: int | None = None):
        """The storage of a group's value (a new step, or a view of a value). `ys`: build the
        kernel to write images `ys` elements apart (_strided_parts) if it can."""
        if _is_view(call.op) and isinstance(args[0], Storage):
            return args[0]  # a reshape of a value: the same bytes, no kernel
        off = _slab_offset(call.op) if args and isinstance(args[0], Storage) else None
        if off is not None:  # one contiguous part of a value: its bytes at an offset
            base = args[0]
            while base.kind == "view":
                off, base = off + base.index, base.base
            return Storage("view", off, call.checked_type, base)
        fn, consts = lift_constants(call.op)
        for c in consts:
            args = args + [self._const(c)]
        flat_args = _flatten(tuple(args))
        const_inputs = frozenset(i for i, s in enumerate(flat_args) if s.kind == "const")
        h = structural_hash(fn)
        entry = self.kernels.get((h, const_inputs, ys))
        if entry is None:
            entry = self.kernels[(h, const_inputs, ys)] = self._lower(fn, const_inputs, ys)
            if entry[0].out_image_stride is None:  # not strided: the same as unasked
                self.kernels.setdefault((h, const_inputs, None), entry)
        lk, name = entry
        if lk.prepack:
            flat_args = list(flat_args)
            for i, pp in lk.prepack.items():
                c = self.const_nodes[flat_args[i].index]
                flat_args[i] = self._const(c, pp, (name, i))
        outs = [self._new_ws(t) for t in lk.out_types]
        outs[0].ys = lk.out_image_stride
        values = [
            (src[1], int(src[2].value), lk.in_types[src[1]].dtype, dv.dtype)
            for dv, src in zip(lk.dims, lk.dim_sources)
        ]
        self.steps.append(Step(name, list(flat_args), outs, values, _concat_of(fn)))
        info = describe(fn)
        self.step_flops.append(info.flops)
        self.step_ops.append(info.ops)
        self.step_sigs.append(info.signature)
        rt = fn.body.checked_type
        if isinstance(rt, TupleType):
            from .lower import _unflatten

            return _unflatten(rt, outs, 0)[0]
        return outs[0]

    def _lower(self, fn: Function, const_inputs, ys: int | None):
        """(LoweredKernel, name) of a group, emitted into the module."""
        name = f"{self.prefix}{self.nkernels}"
        self.nkernels += 1
        try:
            with output_image_stride(ys):
                lk = GroupLowering(fn, name, self.llctx, const_inputs, self.nthreads).run()
        except StridedOutputError:  # a kernel inside the group took the stride: not asked
            name += "c"
            lk = GroupLowering(fn, name, self.llctx, const_inputs, self.nthreads).run()
        if any(src[0] != "value" for src in lk.dim_sources) or any(
            not isinstance(d, int) for shape in lk.out_shapes for d in shape
        ):
            raise NotStaticGraph("a kernel with run-time dimensions")
        KernelCodegen(self.llctx, lk.kernel).emit()
        return lk, name

    def _drop_unread_constants(self) -> None:
        """Keeps only the constants some step or output copy reads, renumbered in slot order: a
        weight that every kernel reads prepacked is stored once, in the packed layout (its
        original slot was made when the group's arguments were collected), unless the packed
        layout is derived at load time (backend/derived.py): then the original stays."""
        read = {}
        for st in self.steps:
            for s in map(_base, st.inputs):
                if s.kind == "const":
                    read[id(s)] = s
        for src in (_base(src) for _, src in self.copies):
            if src.kind == "const":
                read[id(src)] = src
        for s in list(read.values()):  # a derived constant's original stays
            arr = self.const_arrays[s.index]
            if isinstance(arr, DerivedConst):
                read[id(arr.source)] = arr.source
        kept = sorted(read.values(), key=lambda s: s.index)
        arrays = []
        for k, s in enumerate(kept):
            arrays.append(self.const_arrays[s.index])
            s.index = k
        self.const_arrays = arrays
        self.const_nodes = {}
        self.const_slot = {}

    # -- memory --------------------------------------------------------------------------------
    def _elide_concats(self) -> None:
        """A concatenation whose parts are contiguous ranges of its result (only size-1 axes
        before the axis: channels at batch 1) costs no copy: the steps that produce the parts
        write them in place, as views of the result, and the concatenation step goes. A part
        qualifies when it is a workspace value of its own (not an input, constant, output or
        view; not twice in the concatenation) starting on a 64-byte boundary; a value can be a
        part of one concatenation only (the first that takes it). SqueezeNet's fire modules,
        Inception's blocks at batch 1: a copy of every block's output."""
        keep = [not self._elide(st) for st in self.steps]
        for st in self.steps:  # a value written strided is a view of a result (or it overruns)
            if any(s.ys is not None and s.kind != "view" for s in st.outputs):
                raise AssertionError(f"{st.kernel}: a strided output is not part of its result")
        self.steps = [x for x, k in zip(self.steps, keep) if k]
        self.step_ops = [x for x, k in zip(self.step_ops, keep) if k]
        self.step_flops = [x for x, k in zip(self.step_flops, keep) if k]
        self.step_sigs = [x for x, k in zip(self.step_sigs, keep) if k]

    def _elide(self, st: Step) -> bool:
        if st.concat is None or len(st.outputs) != 1 or st.values:
            return False
        out, parts = st.outputs[0], [st.inputs[i] for i in st.concat[1]]
        if any(s.ys is not None for s in parts):
            return self._elide_strided(st, parts)
        if out.kind != "ws" or len({id(s) for s in parts}) != len(parts):
            return False
        if any(int(d) != 1 for d in out.type.shape[: st.concat[0]]):
            return False
        offsets, off = [], 0
        for s in parts:
            if s.kind != "ws" or s.type.dtype != out.type.dtype or off % _VIEW_ALIGN:
                return False
            offsets.append(off)
            off += s.nbytes
        if off != out.nbytes:
            return False
        for s, o in zip(parts, offsets):
            s.kind, s.index, s.base = "view", o, out
        return True

    def _elide_strided(self, st: Step, parts: list) -> bool:
        """A channel concatenation at batch > 1 some of whose parts were written in place by
        their kernels (strided, _strided_parts): those become views of the result; the others
        are copied image by image (the step becomes a COPY step), or the step goes."""
        out = st.outputs[0]
        shape = [int(d) for d in out.type.shape]
        inner = int(np.prod(shape[2:]))
        isz = _dt.itemsize(out.type.dtype)
        c0, copies = 0, []
        for s in parts:
            off = c0 * inner * isz
            if s.ys is not None:  # its kernel wrote it there
                assert s.ys == shape[1] * inner and s.kind == "ws", (s.ys, s.kind)
                s.kind, s.index, s.base = "view", off, out
            else:
                copies.append((s, off))
            c0 += int(s.type.shape[1])
        if not copies:
            return True
        st.kernel, st.inputs, st.copies = COPY, [s for s, _ in copies], copies
        return False

    def _plan(self):
        sizes, defs, last = {}, {}, {}
        for i, st in enumerate(self.steps):
            for s in map(_base, st.inputs):  # a view keeps its base alive
                if s.kind == "ws":
                    last[id(s)] = i
            for s in map(_base, st.outputs):  # a part of a concatenation: its result from here
                if s.kind == "ws":
                    if id(s) not in defs:
                        sizes[id(s)] = s.nbytes
                        defs[id(s)] = i
                    last[id(s)] = max(last.get(id(s), i), i)
        n = len(self.steps)
        for src in (_base(src) for _, src in self.copies):
            if src.kind == "ws":
                last[id(src)] = n
        return memory.plan(sizes, defs, last, n + 1)

    # -- entry function ------------------------------------------------------------------------
    def _entry(self):
        llmod = self.llctx.llmod
        ptrptr = PTR.as_pointer()
        fn = ir.Function(llmod, ir.FunctionType(I32, [ptrptr, ptrptr, ptrptr, PTR, I32]), ENTRY)
        ins, outs, consts, ws, nth = fn.args
        for a, nm in zip(fn.args, ["inputs", "outputs", "constants", "workspace", "nthreads"]):
            a.name = nm
        b = ir.IRBuilder(fn.append_basic_block("entry"))

        def ptr(s: Storage):
            if s.kind == "view":
                return b.gep(b.bitcast(ptr(s.base), PTR), [ir.Constant(I64, s.index)])
            if s.kind == "ws":
                return b.gep(ws, [ir.Constant(I64, self.offsets[id(s)])])
            arr = {"in": ins, "out": outs, "const": consts}[s.kind]
            return b.load(b.gep(arr, [ir.Constant(I64, s.index)]))

        prof = self.profile
        if prof:
            b.call(self.llctx.declare("relay_prof_start", ir.VoidType(), []), [])
            tick = self.llctx.declare("relay_prof_step", ir.VoidType(), [I32])
        for k, st in enumerate(self.steps):
            if st.copies is not None:
                self._copy_parts(b, ptr, st)
                if prof:
                    b.call(tick, [ir.Constant(I32, k)])
                continue
            kfn = llmod.globals[st.kernel]
            args = []
            for s, pt in zip(st.inputs + st.outputs, kfn.function_type.args):
                args.append(b.bitcast(ptr(s), pt))
            for k_in, flat, dtype, vdt in st.values:  # run-time values the kernel reads (dyn.*)
                em = ExprEmitter(self.llctx, b, {}).em
                p = b.bitcast(ptr(st.inputs[k_in]), storage_type(dtype).as_pointer())
                v = em.from_storage(b.load(b.gep(p, [ir.Constant(I64, flat)])), dtype)
                args.append(em.cast(v, dtype, vdt))
            args.append(nth)
            b.call(kfn, args)
            if self.llctx.has_checks:  # an index out of range: stop with code 1
                pending = self.llctx.declare("relay_error_pending", I32, [])
                failed = b.icmp_signed("!=", b.call(pending, []), ir.Constant(I32, 0))
                with b.if_then(failed, likely=False):
                    b.ret(ir.Constant(I32, 1))
            if prof:
                b.call(tick, [ir.Constant(I32, k)])
        if self.copies:
            memcpy = self.llctx.declare(
                "llvm.memcpy.p0i8.p0i8.i64", ir.VoidType(), [PTR, PTR, I64, ir.IntType(1)]
            )
            for dst, src in self.copies:
                b.call(
                    memcpy,
                    [
                        ptr(dst),
                        ptr(src),
                        ir.Constant(I64, src.nbytes),
                        ir.Constant(ir.IntType(1), 0),
                    ],
                )
        # and once at the end whatever this module knows of its kernels (a kernel reads
        # element 0 in place of a bad index, so the steps in between touch nothing out of bounds)
        pending = self.llctx.declare("relay_error_pending", I32, [])
        b.ret(b.call(pending, []))
        # workspace size, for C users of an exported library
        g = ir.GlobalVariable(llmod, I64, "relay_workspace_bytes")
        g.initializer = ir.Constant(I64, self.total)
        g.global_constant = True

    def _copy_parts(self, b, ptr, st: Step) -> None:
        """A COPY step: each part's images into their channel range of the result's images."""
        from .kernels.llvm_util import for_range

        memcpy = self.llctx.declare(
            "llvm.memcpy.p0i8.p0i8.i64", ir.VoidType(), [PTR, PTR, I64, ir.IntType(1)]
        )
        out = st.outputs[0]
        n_img = int(out.type.shape[0])
        img_out = out.nbytes // n_img
        for s, off in st.copies:
            img = s.nbytes // n_img
            dst0 = b.gep(b.bitcast(ptr(out), PTR), [ir.Constant(I64, off)])
            src0 = b.bitcast(ptr(s), PTR)
            with for_range(b, 0, n_img, name="img") as n:
                dst = b.gep(dst0, [b.mul(n, ir.Constant(I64, img_out))])
                src = b.gep(src0, [b.mul(n, ir.Constant(I64, img))])
                b.call(memcpy, [dst, src, ir.Constant(I64, img), ir.Constant(ir.IntType(1), 0)])


def _is_view(fn: Function) -> bool:
    """The function only reshapes its first parameter (chains of view ops)."""
    e = fn.body
    if type(e) is not Call:
        return False
    while type(e) is Call and isinstance(e.op, Op) and e.op.opdef.view:
        if len(e.args) > 1 and any(type(a) is not Var for a in e.args[1:]):
            return False
        e = e.args[0]
    return e is fn.params[0] if fn.params else False


def _base(s):
    """The storage whose bytes `s` is (itself unless a view; views of views resolved)."""
    while isinstance(s, Storage) and s.kind == "view":
        s = s.base
    return s


def _is_concat(e) -> bool:
    return type(e) is Call and isinstance(e.op, Op) and e.op.name == "concatenate"


def _concat_of(fn: Function) -> tuple[int, list[int]] | None:
    """(axis, the parameters' indices in the order of the result's parts) when the group only
    concatenates its parameters, each once; nested concatenations along the same axis count as
    one (Inception's blocks fuse theirs)."""
    e = fn.body
    if not _is_concat(e):
        return None
    rt = e.checked_type
    if not isinstance(rt, TensorType) or not rt.is_static or not rt.shape:
        return None
    axis = int(e.attrs.axis) % len(rt.shape)
    parts, stack = [], [e]
    while stack:
        x = stack.pop()
        if not _is_concat(x):
            parts.append(x)
            continue
        t = x.checked_type
        if not isinstance(t, TensorType) or int(x.attrs.axis) % len(t.shape) != axis:
            return None
        args = x.args[0].fields if len(x.args) == 1 and type(x.args[0]) is Tuple else x.args
        stack.extend(reversed(args))
    ps = fn.params
    if len(ps) == 1 and parts == [ps[0]] and isinstance(ps[0].checked_type, TupleType):
        return axis, list(range(len(ps[0].checked_type.fields)))  # concatenate(p: a tuple)
    if any(not isinstance(p.checked_type, TensorType) for p in ps):
        return None  # the order is over the flat inputs
    index = {id(p): k for k, p in enumerate(ps)}
    order = [index.get(id(a)) for a in parts]
    if None in order or sorted(order) != list(range(len(ps))):
        return None
    return axis, order


# A part of a value taken as a view must start on a boundary the kernels' loads may assume (the
# workspace plan aligns every value to 64 bytes).
_VIEW_ALIGN = 64
COPY = "copy"  # the kernel name of a step that copies concatenation parts (Step.copies)


def _concat_parts(node) -> tuple[int, list] | None:
    """(axis, part expressions) of a call that only concatenates its arguments, each once."""
    op = node.op
    if type(op) is Function and op.attr("Primitive"):
        c = _concat_of(op)
        args = list(node.args)
        if c is not None and len(args) == 1 and isinstance(op.params[0].checked_type, TupleType):
            args = list(args[0].fields) if type(args[0]) is Tuple else None
        return None if c is None or args is None else (c[0], [args[i] for i in c[1]])
    if type(op) is Op and op.name == "concatenate":
        a = node.args
        parts = list(a[0].fields) if len(a) == 1 and type(a[0]) is Tuple else list(a)
        rt = node.checked_type
        if not isinstance(rt, TensorType) or not rt.is_static or not rt.shape:
            return None
        return int(node.attrs.axis) % len(rt.shape), parts
    return None


def _strided_parts(nodes: list) -> dict[int, int]:
    """id(call) -> the image stride (elements) its kernel should write with: a group whose only
    reader is a concatenation of channels (axis 1, batch > 1, each image's channels are one
    contiguous run of the result's image) and whose part starts 64-byte aligned. The kernels
    that can (strips, pointwise, Winograd) write their images into the result; the
    concatenation copies the rest (GraphCompiler._elide_strided). SqueezeNet's fire modules,
    GoogLeNet's and Inception's blocks at batch 8."""
    uses: dict[int, int] = {}
    for node in nodes:
        for c in _children(node):
            uses[id(c)] = uses.get(id(c), 0) + 1
    out: dict[int, int] = {}
    for node in nodes:
        if type(node) is not Call:
            continue
        cp = _concat_parts(node)
        if cp is None or cp[0] != 1:
            continue
        rt = node.checked_type
        if not isinstance(rt, TensorType) or not rt.is_static or len(rt.shape) < 3:
            continue
        shape = [int(d) for d in rt.shape]
        if shape[0] == 1:  # batch 1: the parts are contiguous (_elide)
            continue
        inner = int(np.prod(shape[2:]))
        isz = _dt.itemsize(rt.dtype)
        c0 = 0
        for a in cp[1]:
            t = a.checked_type
            off = c0 * inner * isz
            c0 += int(t.shape[1]) if isinstance(t, TensorType) and len(t.shape) > 1 else 0
            if type(a) is not Call or uses.get(id(a)) != 1 or off % _VIEW_ALIGN:
                continue  # (a static graph calls only groups and ops)
            if t.dtype == rt.dtype:
                out[id(a)] = shape[1] * inner
    return out


def _slab_offset(fn: Function) -> int | None:
    """The byte offset when the group only takes one contiguous part of its first parameter
    (`take` of a constant index along an axis with only size-1 axes before it: one time step
    of an unrolled RNN's input projection), else None. The offset must be a multiple of
    _VIEW_ALIGN."""
    e = fn.body
    take = type(e) is Call and isinstance(e.op, Op) and e.op.name == "take"  # a pattern, one node
    if not take or not fn.params or e.args[0] is not fn.params[0]:
        return None
    if type(e.args[1]) is not Constant:
        return None
    t, idx = fn.params[0].checked_type, e.args[1].data
    if not isinstance(t, TensorType) or idx.ndim != 0 or idx.dtype.kind not in "iu":
        return None
    if e.attrs.axis is None or e.attrs.batch_dims or not t.is_static:
        return None
    shape = tuple(int(d) for d in t.shape)
    ax = e.attrs.axis % len(shape) if shape else 0
    if not shape or any(d != 1 for d in shape[:ax]):
        return None
    k, n = int(idx), shape[ax]
    if e.attrs.mode != "strict" and -n <= k < 0:  # counts from the end (strict: an error)
        k += n
    if not 0 <= k < n:  # left to the kernel: clipping, wrapping or the error
        return None
    off = k * int(np.prod(shape[ax + 1 :], dtype=np.int64)) * _dt.itemsize(t.dtype)
    return off if off % _VIEW_ALIGN == 0 else None


def _flatten(v) -> list:
    out, stack = [], [v]
    while stack:
        x = stack.pop()
        if isinstance(x, tuple):
            stack.extend(reversed(x))
        else:
            out.append(x)
    return out


def _wrap_op(call: Call) -> Function:
    params = []
    args = []
    for k, a in enumerate(call.args):
        if type(a) is Constant:
            args.append(a)
        else:
            p = Var(f"p{k}", a.checked_type)
            params.append(p)
            args.append(p)
    body = Call(call.op, tuple(args), call.attrs, call.type_args)
    fn = Function(tuple(params), body, call.checked_type, (), {"Primitive": 1})
    from ..typing import infer_expr

    infer_expr(fn)
    return fn


__all__ = ["GraphCompiler", "GraphPlan", "NotStaticGraph", "I8"]
