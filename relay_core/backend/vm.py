"""The general path: any Relay program (If, Let, recursion, closures, tuples, ADTs and match,
references, dynamic shapes) compiled to native code over boxed values (c/relay_obj.c).

Every Relay function becomes an LLVM function `i8* f(i8* ctx, [i8* closure,] i8* args...)`
taking owned (+1) arguments and returning an owned result. Tensor work still runs in the fused
kernels of relay_core.backend.lower; this layer computes output shapes at run time, allocates
tensors and calls the kernels. A call in tail position to the function itself (a loop written
as recursion) becomes a jump: loops run in constant stack and memory.

Memory: each evaluated node is owned by the region that computed it (a function body, an If
branch, a match clause) and released when the region ends, or before a tail jump. Variables and
memoised nodes are borrowed; storing a value (tuple field, argument, result) retains it.
Traversal is iterative over dataflow and let chains; recursion happens only per nesting of
branches. This module holds the compiler driver and the runtime interface; vm_emit.py emits
each function, vm_kernels.py its calls of fused kernels.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from llvmlite import ir

from ..errors import RelayError
from ..ir.expr import (
    Call,
    Constant,
    Function,
    Var,
    pattern_vars,
)
from ..ir.structural import structural_hash
from ..ir.types import TensorType, TupleType
from ..ir.visitor import free_vars
from ..te.expr import PrimExpr
from .codegen import (
    I8,
    I32,
    I64,
    PTR,
    VOID,
    KernelCodegen,
    ModuleContext,
)
from .derived import DerivedPrepack, derived_const
from .graph import ConstKeys, lift_constants
from .lower import GroupLowering, flatten_type
from .runtime import _contig
from .step_info import describe

ENTRY = "relay_run_dyn"
OBJ = PTR  # RObj*


class VMError(RelayError):
    """A program construct the compiled general path does not handle."""


@dataclass
class VMPlan:
    input_names: list
    input_types: list
    output_types: list
    constants: list
    entry: str = ENTRY
    kernels: int = 0
    info: dict = field(default_factory=dict)


_RT = {
    "relay_retain": (VOID, [OBJ]),
    "relay_release": (VOID, [OBJ]),
    "relay_tensor_new": (OBJ, [I64, I64.as_pointer(), I64]),
    "relay_tensor_wrap": (OBJ, [PTR, I64, I64.as_pointer(), I64]),
    "relay_tensor_view": (OBJ, [OBJ, I64, I64.as_pointer(), I64]),
    "relay_make_borrowed": (VOID, [OBJ]),
    "relay_wrap_free": (VOID, [OBJ]),
    "relay_own": (OBJ, [OBJ]),
    "relay_data": (PTR, [OBJ]),
    "relay_dim": (I64, [OBJ, I64]),
    "relay_tuple_new": (OBJ, [I64]),
    "relay_adt_new": (OBJ, [I32, I64]),
    "relay_closure_new": (OBJ, [PTR, I64]),
    "relay_closure_fn": (PTR, [OBJ]),
    "relay_ref_new": (OBJ, [OBJ]),
    "relay_ref_write": (VOID, [OBJ, OBJ]),
    "relay_tag": (I32, [OBJ]),
    "relay_field": (OBJ, [OBJ, I64]),
    "relay_set_field": (VOID, [OBJ, I64, OBJ]),
    "relay_fail": (VOID, [PTR]),
    "relay_tick": (VOID, []),
    "relay_prof_start": (VOID, []),
    "relay_prof_step": (VOID, [I32]),
    "relay_prof_units": (VOID, [I32, I64]),
    "relay_check_dim": (VOID, [I64, I64, PTR]),
    "malloc": (PTR, [I64]),
    "free": (VOID, [PTR]),
}

# ctx: { i8** consts; i8** const_objs; i32 nthreads }
CTX = ir.LiteralStructType([PTR.as_pointer(), PTR.as_pointer(), I32])


class _Region:
    __slots__ = ("owned", "memo")

    def __init__(self):
        self.owned: list = []
        self.memo: dict = {}


@dataclass
class _FnInfo:
    func: Function
    llfn: ir.Function
    closure: bool
    self_var: Var | None = None  # the let-bound name of a recursive closure
    captured: list = field(default_factory=list)  # free vars stored in the closure


class VMCompiler:
    """Compiles `@main` (and what it reaches) of a fused module for the general path."""

    def __init__(self, mod, llctx: ModuleContext, nthreads: int = 2):
        self.mod = mod
        self.llctx = llctx
        self.llmod = llctx.llmod
        self.nthreads = nthreads
        self.consts: list = []
        self.const_slot: dict[tuple, int] = {}
        self.const_keys = ConstKeys()
        self.const_nodes: list = []
        self.kernels: dict = {}
        self.kernel_ops: dict = {}  # llvm name -> the ops it computes (build reports)
        # RELAY_PROFILE=1: every kernel call site times its kernel (CompiledModule.profile())
        self.profile = os.environ.get("RELAY_PROFILE") == "1"
        # per call site: kernel, ops, FLOPs, FLOPs per batch element, signature
        self.steps: list[tuple[str, list, int, int, str]] = []
        self.globals: dict[str, _FnInfo] = {}
        self.closures: dict[int, _FnInfo] = {}
        self.todo: list[_FnInfo] = []
        self.strings: dict[str, ir.GlobalVariable] = {}

    # -- helpers -------------------------------------------------------------------------------
    def rt(self, name):
        ret, args = _RT[name]
        return self.llctx.declare(name, ret, args)

    def cstr(self, text: str):
        g = self.strings.get(text)
        if g is None:
            data = bytearray(text.encode()[:300] + b"\0")
            ty = ir.ArrayType(I8, len(data))
            g = ir.GlobalVariable(self.llmod, ty, self.llctx.unique("msg"))
            g.initializer = ir.Constant(ty, data)
            g.global_constant = True
            g.linkage = "internal"
            self.strings[text] = g
        return g.gep([ir.Constant(I32, 0), ir.Constant(I32, 0)])

    def const_index(self, c: Constant, prepack=None, tag=None) -> int:
        """The constant slot of `c`, or of its layout prepacked for a kernel (`tag` names
        the kernel input, so every kernel gets the layout it reads)."""
        key = (self.const_keys.of(c), tag if prepack is not None else None)
        k = self.const_slot.get(key)
        if k is None:
            if isinstance(prepack, DerivedPrepack):  # computed at load time from the original
                arr = derived_const(prepack, self.const_index(c))
            else:
                arr = _contig(c.data if prepack is None else prepack(c.data))
            k = self.const_slot[key] = len(self.consts)
            self.consts.append(arr)
            self.const_nodes.append(c)
        return k

    # -- functions -----------------------------------------------------------------------------
    def fn_type(self, nparams: int, closure: bool) -> ir.FunctionType:
        return ir.FunctionType(OBJ, [PTR] + ([OBJ] if closure else []) + [OBJ] * nparams)

    def global_fn(self, name: str) -> _FnInfo:
        info = self.globals.get(name)
        if info is None:
            f = self.mod[name]
            llfn = ir.Function(self.llmod, self.fn_type(len(f.params), False), f"relay_fn_{name}")
            llfn.linkage = "internal"
            info = self.globals[name] = _FnInfo(f, llfn, False)
            self.todo.append(info)
        return info

    def closure_fn(self, f: Function, self_var: Var | None) -> _FnInfo:
        info = self.closures.get(id(f))
        if info is None:
            llfn = ir.Function(
                self.llmod, self.fn_type(len(f.params), True), self.llctx.unique("relay_closure")
            )
            llfn.linkage = "internal"
            captured = [v for v in free_vars(f) if v is not self_var]
            info = self.closures[id(f)] = _FnInfo(f, llfn, True, self_var, captured)
            self.todo.append(info)
        return info

    def run(self) -> VMPlan:
        from .vm_emit import FunctionEmitter  # it needs this module's CTX, _Region, VMError

        main = self.mod["main"]
        names, in_types = [], []
        for p in main.params:
            t = p.checked_type
            names.append(p.name_hint)
            in_types.append(t)
        out_types = _flatten_tuples(main.body.checked_type)
        info = self.global_fn("main")
        while self.todo:
            FunctionEmitter(self, self.todo.pop()).emit()
        self._entry(info, main)
        return VMPlan(
            names,
            in_types,
            out_types,
            self.consts,
            ENTRY,
            len(self.kernels),
            {
                "input_descs": [type_desc(t, self.mod) for t in in_types],
                "output_descs": [type_desc(t, self.mod) for t in out_types],
                "kernel_ops": self.kernel_ops,
                "step_kernels": [s[0] for s in self.steps],
                "step_ops": [s[1] for s in self.steps],
                "step_flops": [s[2] for s in self.steps],
                "step_flops_per_batch": [s[3] for s in self.steps],
                "step_sigs": [s[4] for s in self.steps],
                "profile": self.profile,
            },
        )

    def _entry(self, info: _FnInfo, main: Function) -> None:
        pp = PTR.as_pointer()
        fn = ir.Function(self.llmod, ir.FunctionType(I32, [pp, pp, pp, I32]), ENTRY)
        ins, outs, consts, nth = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        ctx = b.alloca(CTX)
        n = len(self.consts)
        objs = b.bitcast(b.call(self.rt("malloc"), [ir.Constant(I64, max(n, 1) * 8)]), pp)
        for j, arr in enumerate(self.consts):
            data = b.load(b.gep(consts, [ir.Constant(I64, j)]))
            shape = self._shape_array(b, [ir.Constant(I64, d) for d in arr.shape])
            o = b.call(
                self.rt("relay_tensor_wrap"),
                [data, ir.Constant(I64, arr.ndim), shape, ir.Constant(I64, arr.itemsize)],
            )
            b.call(self.rt("relay_make_borrowed"), [o])
            b.store(o, b.gep(objs, [ir.Constant(I64, j)]))
        b.store(consts, b.gep(ctx, [ir.Constant(I32, 0), ir.Constant(I32, 0)]))
        b.store(objs, b.gep(ctx, [ir.Constant(I32, 0), ir.Constant(I32, 1)]))
        b.store(nth, b.gep(ctx, [ir.Constant(I32, 0), ir.Constant(I32, 2)]))
        args = [b.bitcast(ctx, PTR)] + [
            b.load(b.gep(ins, [ir.Constant(I64, k)])) for k in range(len(main.params))
        ]
        res = b.call(info.llfn, args)
        # flatten the result's tuples into the output slots (each +1 for the caller)
        leaves = []
        stack = [(res, main.body.checked_type)]
        while stack:
            v, t = stack.pop()
            if isinstance(t, TupleType):
                for i in reversed(range(len(t.fields))):
                    stack.append(
                        (b.call(self.rt("relay_field"), [v, ir.Constant(I64, i)]), t.fields[i])
                    )
            else:
                leaves.append(v)
        for k, v in enumerate(leaves):  # constants' wrappers die below: outputs get copies
            b.store(b.call(self.rt("relay_own"), [v]), b.gep(outs, [ir.Constant(I64, k)]))
        b.call(self.rt("relay_release"), [res])
        for j in range(n):
            b.call(self.rt("relay_wrap_free"), [b.load(b.gep(objs, [ir.Constant(I64, j)]))])
        b.call(self.rt("free"), [b.bitcast(objs, PTR)])
        b.ret(ir.Constant(I32, 0))

    def _shape_array(self, b: ir.IRBuilder, dims: list):
        arr = b.alloca(I64, size=ir.Constant(I64, max(len(dims), 1)))
        for i, d in enumerate(dims):
            b.store(d, b.gep(arr, [ir.Constant(I64, i)]))
        return arr

    # -- kernels -------------------------------------------------------------------------------
    def profile_step(self, name: str, call: Call) -> tuple[int, bool]:
        """A new profile step for a call site of kernel `name`: (its index, whether its FLOP
        count is per element of the run-time batch, axis 0 of its first input)."""
        info = describe(call.op)
        per_batch = 0
        if not info.flops and call.args:
            t = call.args[0].checked_type
            if isinstance(t, TensorType) and t.shape and not isinstance(t.shape[0], int):
                per_batch = info.flops_per_batch
        self.steps.append((name, self.kernel_ops[name], info.flops, per_batch, info.signature))
        return len(self.steps) - 1, per_batch > 0

    def kernel(self, call: Call):
        """(LoweredKernel, llvm name, lifted constants) of a primitive call."""
        fn, consts = lift_constants(call.op)
        # The lifted constants are the trailing inputs: kernels may read them prepacked.
        n_in = sum(len(flatten_type(p.checked_type)) for p in fn.params)
        const_inputs = frozenset(range(n_in - len(consts), n_in))
        key = (structural_hash(fn), const_inputs)
        entry = self.kernels.get(key)
        if entry is None:
            name = f"vk{len(self.kernels)}"
            lk = GroupLowering(fn, name, self.llctx, const_inputs, self.nthreads).run()
            KernelCodegen(self.llctx, lk.kernel).emit()
            if lk.pre is not None:
                KernelCodegen(self.llctx, lk.pre[0]).emit()
            entry = self.kernels[key] = (lk, name)
            self.kernel_ops[name] = describe(fn).ops
        return entry[0], entry[1], consts


def _flatten_tuples(t) -> list:
    """Leaves of nested tuple types (tensors, ADTs), in order."""
    out, stack = [], [t]
    while stack:
        x = stack.pop()
        if isinstance(x, TupleType):
            stack.extend(reversed(x.fields))
        else:
            out.append(x)
    return out


def type_desc(t, mod) -> dict:
    """A JSON description of a value's type, for the runtime to convert inputs and outputs:
    tensors, tuples and ADTs (lists, options) of them."""
    from ..ir.types import TypeCall, substitute_types

    if isinstance(t, TensorType):
        from .compiler import _dim_json

        shape = [_dim_json(d) for d in t.shape]
        return {"kind": "tensor", "shape": shape, "dtype": t.dtype}
    if isinstance(t, TupleType):
        return {"kind": "tuple", "fields": [type_desc(f, mod) for f in t.fields]}
    if isinstance(t, TypeCall):
        td = mod.type_definitions[t.func]
        sub = dict(zip(td.type_vars, t.args))
        ctors = []
        for c in td.constructors:
            fields = [substitute_types(i, sub) for i in c.inputs]
            # a recursive field (the list's tail) refers back to this type
            ctors.append(
                {
                    "name": c.name,
                    "tag": c.tag,
                    "fields": [
                        {"kind": "self"}
                        if (isinstance(f, TypeCall) and f == t)
                        else type_desc(f, mod)
                        for f in fields
                    ],
                }
            )
        return {"kind": "adt", "name": t.func.name, "ctors": ctors}
    raise VMError(f"values of type {t} cannot cross the compiled module's boundary")


__all__ = ["VMCompiler", "VMPlan", "VMError", "PrimExpr", "pattern_vars"]
