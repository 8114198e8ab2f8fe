"""Lowering of one fused group (a `Primitive` Relay function) to a loop-IR kernel.

Each operator call becomes a call of its hand-written kernel (`OpDef.kernel`, in
relay_core.backend.kernels: GEMM, convolution, ...) when it declares one and the kernel accepts
the call, else tensor expressions through its `OpDef.lower` rule; the OpDef is the only dispatch;
the scheduler turns the group into one loop nest per materialized stage.

Kernel signature: `void name(in0*, ..., out0*, ..., i64 dim0, ..., i32 nthreads)` where inputs
are the function's tensor parameters flattened (tuples expanded) and `dim*` are the run-time
extents of non-static dimensions (see `LoweredKernel.dim_sources`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import te
from ..errors import RelayError, UnknownExtentError
from ..ir.expr import Call, Constant, Function, Op
from ..ir.types import ScaledDim, ShapeVar, TensorType, TupleType
from ..ir.visitor import ExprFunctor, post_order
from ..te.lowering import rule_of
from . import tir as T
from .kernels.common import requested_image_stride
from .schedule import Scheduler, extern

# complex64 / complex128 tensors are lowered as their real parts with a trailing axis of 2
COMPLEX_PARTS = {"complex64": "float32", "complex128": "float64"}


class LoweringError(RelayError):
    """An operator has no lowering rule and no kernel."""


class StridedOutputError(LoweringError):
    """A kernel asked to write its output strided did, but not into the group's output (the
    caller lowers the group again without asking)."""


@dataclass
class LoweredKernel:
    kernel: T.Kernel
    in_types: list  # flattened input TensorTypes
    out_types: list  # flattened output TensorTypes
    dims: list  # te.Vars: run-time extents (and run-time values) passed after the buffers
    # per dim: ("shape", flat input, axis) | ("value", flat input, flat index) |
    # ("pre", pre-kernel output, flat index): where the caller reads it
    dim_sources: list
    prepack: dict = field(default_factory=dict)  # flat input index -> fn(np.ndarray)
    out_shapes: list = field(default_factory=list)  # per output: dims (ints / PrimExprs of dims)
    # A kernel to run first when shapes depend on computed values (nonzero's count):
    # (Kernel, [(shape, dtype)] of its outputs); it takes the same inputs, then its outputs,
    # the "shape" dims and the "value" dims (in `dims` order).
    pre: tuple | None = None
    # elements between images of output 0: the group's only kernel writes it strided
    # (kernels.common.output_image_stride was asked for and honoured); None: contiguous
    out_image_stride: int | None = None


def flatten_type(t) -> list[TensorType]:
    out, stack = [], [t]
    while stack:
        x = stack.pop()
        if isinstance(x, TupleType):
            stack.extend(reversed(x.fields))
        elif isinstance(x, TensorType):
            out.append(x)
        else:
            raise LoweringError(f"a fused kernel cannot take or return a value of type {x}")
    return out


def _unflatten(t, items: list, pos: int):
    if isinstance(t, TupleType):
        vals = []
        for f in t.fields:
            v, pos = _unflatten(f, items, pos)
            vals.append(v)
        return tuple(vals), pos
    return items[pos], pos + 1


def _flatten_value(v) -> list:
    out, stack = [], [v]
    while stack:
        x = stack.pop()
        if isinstance(x, tuple):
            stack.extend(reversed(x))
        else:
            out.append(x)
    return out


class GroupLowering:
    """Lowers one primitive function. `const_inputs`: flat input indices bound to constants
    (kernels may prepack them)."""

    def __init__(self, func: Function, name: str, llctx, const_inputs=frozenset(), nthreads=2):

        self.func = func
        self.name = name
        self.llctx = llctx
        self.const_inputs = set(const_inputs)
        self.nthreads = nthreads
        self.dims: list = []
        self.dim_sources: list = []
        self._shape_vars: dict[str, te.Var] = {}
        self.prepack: dict = {}
        self._ext = 0
        self.no_kernel: set = set()  # ids of calls whose kernel refused them
        self.externs: list = []

    def _dim(self, d, k: int, axis: int):
        if isinstance(d, int):
            return d
        if isinstance(d, ShapeVar) and d.name in self._shape_vars:
            return self._shape_vars[d.name]
        if isinstance(d, ScaledDim) and d.var.name in self._shape_vars:
            return self._shape_vars[d.var.name] * d.k
        v = te.Var(f"{self.name}_d{len(self.dims)}")
        self.dims.append(v)
        self.dim_sources.append(("shape", k, axis))
        if isinstance(d, ShapeVar):
            self._shape_vars[d.name] = v
        elif isinstance(d, ScaledDim):  # n read as this dim / k
            self._shape_vars[d.var.name] = v // d.k
        return v

    def run(self) -> LoweredKernel:
        from .schedule import KernelUnsupported

        while True:
            try:
                return self._run()
            except KernelUnsupported as e:
                self.no_kernel.add(id(e.op.call))
                self.dims, self.dim_sources, self._shape_vars = [], [], {}
                self.prepack, self.externs = {}, []

    def _run(self) -> LoweredKernel:
        f = self.func
        placeholders: list[te.Tensor] = []
        in_types: list[TensorType] = []
        values: dict = {}
        for p in f.params:
            pt = p.checked_type if p.has_type else p.type_annotation
            leaves = []
            for t in flatten_type(pt):
                k = len(placeholders)
                shape = [self._dim(d, k, a) for a, d in enumerate(t.shape)]
                dtype = t.dtype
                if dtype in COMPLEX_PARTS:  # (real, imaginary) pairs: a trailing axis of 2
                    shape, dtype = shape + [2], COMPLEX_PARTS[dtype]
                ph = te.placeholder(shape, dtype, f"{p.name_hint}{k}")
                placeholders.append(ph)
                in_types.append(t)
                leaves.append(ph)
            values[p] = _unflatten(pt, leaves, 0)[0]
        self.in_index = {ph.id: k for k, ph in enumerate(placeholders)}
        self.value_sink: list = []
        with te.tensor.shape_vars(self._shape_vars), te.tensor.value_vars(self.value_sink):
            return self._lower_body(f, values, placeholders, in_types)

    def _lower_body(self, f, values, placeholders, in_types):
        body = _FusedBody(self, values)
        for node in post_order(f.body):
            if node not in values:
                body.dispatch(node)
        outs = _flatten_value(values[f.body])
        out_types = flatten_type(f.body.checked_type)
        # each output needs its own compute stage
        seen = set()
        fixed = []
        for o in outs:
            if o.op is None and "extern" not in o.attrs or o.id in seen:
                src = o
                o = te.compute(src.shape, lambda *i, s=src: s[i], f"{self.name}_copy")
            seen.add(o.id)
            fixed.append(o)
        outs = fixed
        bufs = {}
        params: list = []
        for k, ph in enumerate(placeholders):
            b = T.Buffer(f"in{k}", ph.dtype, te.size(ph.shape), "param", ph.shape)
            bufs[ph.id] = b
            params.append(b)
        for k, o in enumerate(outs):
            b = T.Buffer(f"out{k}", o.dtype, te.size(o.shape), "param", o.shape)
            bufs[o.id] = b
            params.append(b)
        shape_dims = list(self.dims)
        pre = self._pre_kernel(placeholders, bufs, shape_dims)
        given = frozenset()
        if pre is not None:  # the kernel reads what its pre-kernel computed, not again
            out_ids = {o.id for o in outs}
            for j, t in enumerate(pre[2]):
                b = T.Buffer(f"pre{j}", t.dtype, te.size(t.shape), "param", t.shape)
                params.append(b)
                if t.id not in out_ids:
                    bufs[t.id] = b
            given = frozenset(t.id for t in pre[2] if t.id not in out_ids)
            pre = pre[:2]
        sched = Scheduler(outs, bufs, self.nthreads, self.llctx, given)
        body = sched.run()
        for op in self.externs:
            for i, fn in ((op.info.prepack or {}) if op.info is not None else {}).items():
                self.prepack[self.in_index[op.flat_in[i].id]] = fn
        params += self.dims
        kernel = T.Kernel(self.name, params, body, sched.contract)
        ys = self._image_stride(len(outs), params[len(placeholders)])
        return LoweredKernel(
            kernel,
            in_types,
            out_types,
            self.dims,
            self.dim_sources,
            self.prepack,
            [
                tuple(o.shape)[:-1] if t.dtype in COMPLEX_PARTS else tuple(o.shape)
                for o, t in zip(outs, out_types)
            ],
            pre,
            ys,
        )

    def _image_stride(self, nouts: int, out0) -> int | None:
        """The stride output 0 is written with when output_image_stride asked for one: the group
        must be one kernel that honoured it, writing the group's output itself. A kernel that
        honoured it but writes an intermediate would overrun that buffer: an error."""
        req = requested_image_stride()
        if req is None:
            return None
        honoured = [op for op in self.externs if getattr(op.info, "out_image_stride", None)]
        if not honoured:
            return None
        op = honoured[0]
        written = getattr(op, "written", None)
        if len(honoured) > 1 or nouts != 1 or op.batch is not None or written is None:
            raise StridedOutputError(self.name)
        if written[0] is not out0 or op.info.out_image_stride != req:
            raise StridedOutputError(self.name)
        return req

    def _pre_kernel(self, placeholders, bufs, shape_dims):
        """Register the run-time values that shapes use; values computed from the inputs
        (not inputs themselves) get a first kernel that produces them."""
        from ..te.simplify import Simplifier
        from .schedule import flat_index

        pre_tensors: list = []
        for v, t, index in self.value_sink:
            if t.id in self.in_index:
                k = self.in_index[t.id]
                flat = Simplifier()(flat_index(t.shape, index)) if index else te.index(0)
                self.dims.append(v)
                self.dim_sources.append(("value", k, flat))
                continue
            if t.op is None and "extern" not in t.attrs:
                raise LoweringError("a run-time value must come from an input or a compute")
            if t not in pre_tensors:
                pre_tensors.append(t)
            j = pre_tensors.index(t)
            # its extents may be the inputs' run-time dims (NMS's [count, results...] of
            # boxes known at run time): the caller sizes the buffer from them
            flat = 0
            for d, i in zip(t.shape, index):
                flat = flat * d + i
            self.dims.append(v)
            self.dim_sources.append(("pre", j, Simplifier()(te.index(flat))))
        if not pre_tensors:
            return None
        pbufs = {ph.id: bufs[ph.id] for ph in placeholders}
        params = [bufs[ph.id] for ph in placeholders]
        for j, t in enumerate(pre_tensors):
            b = T.Buffer(f"pre{j}", t.dtype, te.size(t.shape), "param", t.shape)
            pbufs[t.id] = b
            params.append(b)
        sched = Scheduler(pre_tensors, pbufs, 1, self.llctx)
        body = sched.run()
        # the pre-kernel also takes the values read straight from inputs (thresholds, k)
        in_values = [v for v, src in zip(self.dims, self.dim_sources) if src[0] == "value"]
        kernel = T.Kernel(self.name + "_pre", params + shape_dims + in_values, body, sched.contract)
        return kernel, [(t.shape, t.dtype) for t in pre_tensors], pre_tensors

    def _batch_split(self, call: Call, in_types, out_types):
        """Static types for one batch element when only axis 0 of the data input and of the
        single output is dynamic and the op treats batch elements independently
        (`OpDef.batch_axis0`: convolutions, pooling, dense)."""
        pred = call.op.opdef.batch_axis0
        if pred is None or len(out_types) != 1 or not pred(call.attrs):
            return None
        d, o = in_types[0], out_types[0]
        if len(d.shape) < 2 or not o.shape:
            return None
        if any(not isinstance(x, int) for x in d.shape[1:] + o.shape[1:]):
            return None
        if any(not t.is_static for t in in_types[1:]):
            return None
        one = [TensorType((1,) + tuple(d.shape[1:]), d.dtype)] + list(in_types[1:])
        return one, [TensorType((1,) + tuple(o.shape[1:]), o.dtype)]

    def _constant(self, c: Constant):
        data = c.data
        if data.ndim == 0:
            from ..ir import dtype as _dt

            dtype = _dt.from_numpy(data.dtype)
            return te.const_tensor(data.item(), dtype, "const")
        raise LoweringError("non-scalar constants must be lifted to parameters before lowering")

    def _call(self, call: Call, args: list):
        opdef = call.op.opdef
        out_type = call.checked_type
        gen = opdef.kernel
        if gen is not None and self.llctx is not None:
            r = self._try_kernel(gen, call, args, out_type)
            if r is not None:
                return r
        lower = rule_of(opdef)
        if not opdef.name.startswith("complex.") and any(
            t.dtype in COMPLEX_PARTS
            for a in (*call.args, call)
            for t in flatten_type(a.checked_type)
        ):
            raise LoweringError(f"{opdef.name}: complex tensors only pass through complex.* ops")
        if not callable(lower):
            raise LoweringError(
                f"operator {opdef.name} has no tensor-expression rule and no kernel "
                f"for {', '.join(str(a.checked_type) for a in call.args)}"
            )
        try:
            return lower(args, call.attrs, out_type)
        except NotImplementedError as e:
            raise LoweringError(f"{opdef.name}: {e}") from None
        except (TypeError, ValueError, AttributeError, IndexError) as e:
            types = [t for a in (*call.args, call) for t in flatten_type(a.checked_type)]
            if isinstance(e, RelayError) or all(t.is_static for t in types):
                raise
            # a rule that takes a static extent (a Python int) from a `?` dim: the build
            # compiles per input shape instead (tests/backend/test_ops_unknown_dims.py finds them)
            raise LoweringError(
                f"{opdef.name}: its lowering needs static extents "
                f"({type(e).__name__}: {e}) for {', '.join(map(str, types))}"
            ) from e

    def _try_kernel(self, gen, call: Call, args: list, out_type):
        flat_in = _flatten_value(tuple(args))
        in_types = flatten_type(TupleType(tuple(a.checked_type for a in call.args)))
        out_types = flatten_type(out_type)
        if id(call) in self.no_kernel:
            return None
        batched = None
        dyn_types = (in_types, out_types)
        if not all(t.is_static for t in in_types + out_types):
            batched = self._batch_split(call, in_types, out_types)
            if batched is None:
                return self._try_dynamic_kernel(call, args, flat_in, in_types, out_types)
            in_types, out_types = batched
        const_inputs = tuple(
            i for i, x in enumerate(flat_in) if self.in_index.get(x.id) in self.const_inputs
        )
        self._ext += 1
        kname = f"{self.name}_k{self._ext}"
        attrs = call.attrs

        def emit(llmod, name, epilogue):
            return gen(llmod, name, in_types, out_types, attrs, epilogue, const_inputs)

        if batched is None:
            specs = [(t.shape, t.dtype) for t in out_types]
        else:  # a kernel for one batch element, called once per element of the dynamic batch
            specs = [((flat_in[0].shape[0],) + tuple(t.shape[1:]), t.dtype) for t in out_types]
        outs = extern(kname, specs, flat_in, emit)
        op = outs[0].attrs["extern"]
        op.call, op.flat_in = call, flat_in
        if batched is not None:
            op.batch = flat_in[0].shape[0]
            d, o = in_types[0], out_types[0]
            # kernels for blocks of k elements (the scheduler may drop them)
            for k in block_images(call.attrs, o):
                in_k = [TensorType((k,) + tuple(d.shape[1:]), d.dtype)] + list(in_types[1:])
                out_k = [TensorType((k,) + tuple(o.shape[1:]), o.dtype)]

                def emit_block(llmod, name, epilogue, in_k=in_k, out_k=out_k):
                    return gen(llmod, name, in_k, out_k, attrs, epilogue, const_inputs)

                op.blocks.append((k, f"{kname}_b{k}", emit_block))
            op.whole = self._whole_batch(call, kname, flat_in, dyn_types, const_inputs)
        self.externs.append(op)
        if isinstance(out_type, TupleType):
            return _unflatten(out_type, outs, 0)[0]
        return outs[0]

    def _whole_batch(self, call: Call, kname: str, flat_in, dyn_types, const_inputs):
        """A batch-split op's kernel for the whole run-time batch (`ExternOp.whole`: its op's
        run-time-shaped kernel, called from batch_blocks.WHOLE_BATCH elements on), or None."""
        gen = call.op.opdef.dynamic_kernel
        if gen is None or len(flat_in) != len(dyn_types[0]) or len(dyn_types[1]) != 1:
            return None
        emit, dims, env = self._dynamic_emit(gen, call, flat_in, *dyn_types, const_inputs)
        return (f"{kname}_all", emit, dims, env)

    def _dynamic_emit(self, gen, call: Call, flat_in, in_types, out_types, const_inputs):
        """(emit, scalar args, env) of a call through a run-time-shaped kernel generator: the
        scalar args are every extent of the inputs, then the group's run-time extents (`env`),
        which an epilogue's indices may use (a residual of shape (batch, sequence, features))."""
        env = list(self.dims)
        attrs = call.attrs

        def emit(llmod, name, epilogue):
            return gen(
                llmod, name, in_types, out_types, attrs, const_inputs, epilogue, n_env=len(env)
            )

        return emit, [te.index(d) for x in flat_in for d in x.shape] + env, env

    def _try_dynamic_kernel(self, call: Call, args: list, flat_in, in_types, out_types):
        """The call through its op's `dynamic_kernel`, which reads every extent of the inputs
        at run time (passed after the buffers), or None. The output's shape comes from the
        op's tensor-expression rule (expressions of the input extents)."""
        opdef = call.op.opdef
        gen = opdef.dynamic_kernel
        out_type = call.checked_type
        if gen is None or isinstance(out_type, TupleType) or len(flat_in) != len(in_types):
            return None
        rule = rule_of(opdef)
        if callable(rule):
            ref = rule(args, call.attrs, out_type)
            oshape, odtype = tuple(ref.shape), ref.dtype
        else:  # no tensor-expression rule: the generator states the output's extents
            shape_fn = (gen.resolve() if hasattr(gen, "resolve") else gen).out_shape
            oshape = tuple(shape_fn([x.shape for x in flat_in], call.attrs, out_type))
            odtype = out_type.dtype
        const_inputs = tuple(
            i for i, x in enumerate(flat_in) if self.in_index.get(x.id) in self.const_inputs
        )
        self._ext += 1
        emit, dims, env = self._dynamic_emit(gen, call, flat_in, in_types, out_types, const_inputs)
        kname = f"{self.name}_k{self._ext}"
        outs = extern(kname, [(oshape, odtype)], flat_in, emit, scalar_args=dims)
        op = outs[0].attrs["extern"]
        op.call, op.flat_in = call, flat_in
        op.env = env
        self.externs.append(op)
        return outs[0]


# Batch-split ops (`GroupLowering._batch_split`) get kernels for blocks of BLOCK_IMAGES batch
# elements (largest first: whole blocks of 8, then one of 4 for the rest, then single elements)
# when one element's output has at most BLOCK_MAX_POSITIONS spatial positions (dense: always):
# per element, a convolution on a 28x28 or smaller plane has few GEMM rows (positions) to fill
# the tiles and both threads, and streams all its weights once per element; a dense layer is a
# matrix-vector product. Measured on Keras ResNet50 and MobileNetV2 at batch 8 (generic against
# static builds, a busy machine): blocking larger planes too gained nothing measurable with two
# threads (some 5% on MobileNetV2 with one), for about twice the extra compile time. Blocks of 4
# serve batches 4-7 (timm RegNetY-800MF at batch 4, generic build: 50 -> 42 ms, the static
# build's time; Keras ResNet50 0.91, MobileNetV2 0.95). A block kernel is dropped when it would
# read a constant in another layout than the per-element kernel (Scheduler._emit_blocks).
# Module globals (benchmarks, tests; () turns the block kernels off): they are not part of the
# model cache key.
BLOCK_IMAGES = (8, 4)
BLOCK_MAX_POSITIONS = 28 * 28


def block_images(attrs, one_out: TensorType) -> tuple[int, ...]:
    """Batch elements per block kernel of a batch-split op whose output for one element has
    type `one_out` (shape (1, ...)), largest first; () for no block kernel."""
    layout = ""
    for name in ("out_layout", "data_layout", "layout"):
        layout = getattr(attrs, name, None) or ""
        if layout:
            break
    shape = one_out.shape
    if len(layout) != len(shape):  # dense: no spatial axes
        layout = "N" + "C" * (len(shape) - 1)
    positions = 1
    for d, ax in zip(shape, layout):
        if ax in "DHW":
            positions *= int(d)
    if positions > BLOCK_MAX_POSITIONS:
        return ()
    return tuple(sorted((k for k in set(BLOCK_IMAGES) if k > 1), reverse=True))


class _FusedBody(ExprFunctor):
    """The TE value of each node of a fused function's body, children first (the caller walks
    the body post-order and fills `values`)."""

    def __init__(self, lowerer: GroupLowering, values: dict):
        self.low, self.values = lowerer, values

    def visit_var(self, node):
        raise LoweringError(f"free variable %{node.name_hint} in a fused function")

    def visit_constant(self, node):
        self.values[node] = self.low._constant(node)

    def visit_call(self, node):
        if not isinstance(node.op, Op):
            raise LoweringError("a fused function may only call operators")
        try:
            self.values[node] = self.low._call(node, [self.values[a] for a in node.args])
        except UnknownExtentError as e:
            t = node.checked_type if node.has_type else "?"
            raise UnknownExtentError(f"{node.op.name} (result {t}): {e}") from None

    def visit_tuple(self, node):
        self.values[node] = tuple(self.values[x] for x in node.fields)

    def visit_tuple_getitem(self, node):
        self.values[node] = self.values[node.tuple_value][node.index]

    def visit_op(self, node):
        pass  # read through the call

    def visit_default(self, node):
        raise LoweringError(f"{type(node).__name__} cannot appear in a fused function")
