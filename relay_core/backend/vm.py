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
branches.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llvmlite import ir

from ..errors import RelayError
from ..ir.expr import (
    Call,
    Constant,
    Constructor,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    pattern_vars,
)
from ..ir.structural import structural_hash
from ..ir.types import TensorType, TupleType
from ..ir.visitor import SCOPE_OPERANDS, ExprFunctor, free_vars, method_table, post_order
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
from .graph import ConstKeys, _wrap_op, group_ops, lift_constants
from .lower import GroupLowering, flatten_type
from .runtime import _contig

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
        main = self.mod["main"]
        names, in_types = [], []
        for p in main.params:
            t = p.checked_type
            names.append(p.name_hint)
            in_types.append(t)
        out_types = _flatten_tuples(main.body.checked_type)
        info = self.global_fn("main")
        while self.todo:
            _FunctionEmitter(self, self.todo.pop()).emit()
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
            self.kernel_ops[name] = group_ops(fn)
        return entry[0], entry[1], consts


class _FunctionEmitter(ExprFunctor):
    """Emits one Relay function."""

    def __init__(self, vm: VMCompiler, info: _FnInfo):
        self.vm = vm
        self.info = info
        self.fn = info.llfn
        self.env: dict = {}
        self.regions: list[_Region] = []
        self.b: ir.IRBuilder | None = None
        self.loop = None  # (header block, param phis) when the function loops on itself
        # a dataflow body: uses left of each node (see _plain_dataflow)
        self.uses_left: dict[int, int] | None = None

    def rt(self, name, args):
        return self.b.call(self.vm.rt(name), args)

    # -- function ------------------------------------------------------------------------------
    def emit(self) -> None:
        f = self.info.func
        fn = self.fn
        entry = fn.append_basic_block("entry")
        self.b = ir.IRBuilder(entry)
        self.alloca_b = ir.IRBuilder(entry)  # allocas stay in the entry block (loops jump back)
        args = list(fn.args)
        self.ctx = args[0]
        pos = 1
        if self.info.closure:
            self.clo = args[1]
            pos = 2
            for k, v in enumerate(self.info.captured):
                self.env[v] = self.rt("relay_field", [self.clo, ir.Constant(I64, k)])
            if self.info.self_var is not None:
                self.env[self.info.self_var] = self.clo
        params = args[pos:]
        header = fn.append_basic_block("body")
        self.b.branch(header)
        self.b.position_at_end(header)
        phis = []
        for p, a in zip(f.params, params):
            ph = self.b.phi(OBJ, name=p.name_hint)
            ph.add_incoming(a, entry)
            phis.append(ph)
            self.env[p] = ph
        self.loop = (header, phis)
        self.rt("relay_tick", [])  # the loop budget: once per call and per iteration
        self.regions.append(_Region())
        self.uses_left = _plain_dataflow(f.body, self.children)
        v = self.eval_region(f.body, tail=True)
        if v is not None:
            self.rt("relay_retain", [v])
            self.release_all()
            for ph in phis:
                self.rt("relay_release", [ph])
            self.b.ret(v)
        self.regions.pop()

    def release_all(self) -> None:
        """Release what every open region owns (before leaving the function)."""
        for r in reversed(self.regions):
            for v in reversed(r.owned):
                self.rt("relay_release", [v])

    # -- regions -------------------------------------------------------------------------------
    def eval_region(self, e, tail: bool):
        """Evaluate `e` in the current region; None when control left by a tail jump."""
        chain = []
        while type(e) is Let:
            chain.append(e)
            if type(e.value) is Function and not e.value.attr("Primitive"):
                # a closure that may call itself through the let-bound name
                v = self.own(e.value, self.make_closure(e.value, e.var))
            else:
                v = self.eval(e.value)
            self.env[e.var] = v
            e = e.body
        if tail and self._is_self_call(e):
            self.tail_jump(e)
            return None
        if tail and type(e) in (If, Match):
            v = self.control(e, tail=True)
        else:
            v = self.eval(e)
        if v is not None:
            for let in chain:
                self.regions[-1].memo[id(let)] = v
        return v

    def branch(self, e, tail: bool):
        """Evaluate `e` in a new region; returns an owned (+1) value, or None after a jump."""
        self.regions.append(_Region())
        v = self.eval_region(e, tail)
        if v is not None:
            self.rt("relay_retain", [v])
            r = self.regions[-1]
            for o in reversed(r.owned):
                self.rt("relay_release", [o])
        self.regions.pop()
        return v

    def lookup(self, e):
        for r in reversed(self.regions):
            v = r.memo.get(id(e))
            if v is not None:
                return v
        return None

    def own(self, e, v):
        r = self.regions[-1]
        r.owned.append(v)
        r.memo[id(e)] = v
        return v

    # -- tail calls ----------------------------------------------------------------------------
    def _is_self_call(self, e) -> bool:
        if type(e) is not Call:
            return False
        if self.info.closure:
            return self.info.self_var is not None and e.op is self.info.self_var
        return type(e.op) is GlobalVar and e.op.name_hint == self._global_name()

    def _global_name(self):
        for name, info in self.vm.globals.items():
            if info is self.info:
                return name
        return None

    def tail_jump(self, call: Call) -> None:
        args = [self.eval(a) for a in call.args]
        for a in args:
            self.rt("relay_retain", [a])
        self.release_all()
        header, phis = self.loop
        for ph in phis:
            self.rt("relay_release", [ph])
        for ph, a in zip(phis, args):
            ph.add_incoming(a, self.b.block)
        self.b.branch(header)  # nothing more is emitted on this path

    # -- expressions ---------------------------------------------------------------------------
    def children(self, e):
        """The operands evaluated before `e` in the same region."""
        return _OPERANDS.get(type(e), _no_operands)(e)

    def eval(self, root):
        """A borrowed value of `root` (computing what is not memoised yet)."""
        v = self.lookup(root) if type(root) is not Var else self.env.get(root)
        if v is not None:
            return v
        order = post_order(
            root,
            lambda n: () if (self.lookup(n) is not None or type(n) is Var) else self.children(n),
        )
        for n in order:
            if type(n) is Var or self.lookup(n) is not None:
                continue
            self.node(n)
            if self.uses_left is not None:
                self._drop_operands(n)
        return self.env.get(root) if type(root) is Var else self.lookup(root)

    def _drop_operands(self, n) -> None:
        """Release the tensors `n` was the last user of (dataflow bodies only): their
        buffers go back to the runtime's block cache while they are still in the CPU's
        caches, for the next kernel's output (kept to the end of the function, a Keras
        MobileNetV2 with a run-time batch ran ~15% slower than its static build)."""
        r = self.regions[-1]
        for c in self.children(n):
            k = self.uses_left.get(id(c))
            if k is None:
                continue
            self.uses_left[id(c)] = k - 1
            if k != 1 or type(c) is not Call or not isinstance(c.checked_type, TensorType):
                continue
            v = r.memo.get(id(c))
            if v is None or not any(o is v for o in r.owned):
                continue
            r.owned = [o for o in r.owned if o is not v]
            del r.memo[id(c)]
            self.rt("relay_release", [v])

    def val(self, e):
        if type(e) is Var:
            v = self.env.get(e)
            if v is None:
                raise VMError(f"unbound variable %{e.name_hint}")
            return v
        v = self.lookup(e)
        if v is None:
            v = self.eval(e)
        return v

    def node(self, e) -> None:
        """Emit `e` (its operands evaluated): one `visit_<kind>` per node kind."""
        self._table[type(e)](self, e)

    def visit_constant(self, e: Constant) -> None:
        b = self.b
        objs = b.load(
            b.gep(
                b.bitcast(self.ctx, CTX.as_pointer()),
                [ir.Constant(I32, 0), ir.Constant(I32, 1)],
            )
        )
        o = b.load(b.gep(objs, [ir.Constant(I64, self.vm.const_index(e))]))
        self.regions[-1].memo[id(e)] = o  # borrowed wrapper: nothing to release

    def visit_let(self, e: Let) -> None:
        v = self.eval_region(e, tail=False)
        self.regions[-1].memo[id(e)] = v

    def visit_call(self, e: Call) -> None:
        self.call(e)

    def visit_tuple(self, e: Tuple) -> None:
        o = self.rt("relay_tuple_new", [ir.Constant(I64, len(e.fields))])
        for i, f in enumerate(e.fields):
            v = self.val(f)
            self.rt("relay_retain", [v])
            self.rt("relay_set_field", [o, ir.Constant(I64, i), v])
        self.own(e, o)

    def visit_tuple_getitem(self, e: TupleGetItem) -> None:
        v = self.rt("relay_field", [self.val(e.tuple_value), ir.Constant(I64, e.index)])
        self.regions[-1].memo[id(e)] = v  # borrowed from the tuple

    def visit_if(self, e: If) -> None:
        self.control(e, tail=False)

    visit_match = visit_if

    def visit_function(self, e: Function) -> None:
        self.own(e, self.make_closure(e, None))

    def visit_global_var(self, e: GlobalVar) -> None:
        self.own(e, self.global_closure(e.name_hint))

    def visit_constructor(self, e: Constructor) -> None:
        self.own(e, self.rt("relay_adt_new", [ir.Constant(I32, e.tag), ir.Constant(I64, 0)]))

    def visit_ref_create(self, e: RefCreate) -> None:
        v = self.val(e.value)
        self.rt("relay_retain", [v])
        self.own(e, self.rt("relay_ref_new", [v]))

    def visit_ref_read(self, e: RefRead) -> None:
        v = self.rt("relay_field", [self.val(e.ref), ir.Constant(I64, 0)])
        self.rt("relay_retain", [v])  # a later write may drop the cell's reference
        self.own(e, v)

    def visit_ref_write(self, e: RefWrite) -> None:
        v = self.val(e.value)
        self.rt("relay_retain", [v])
        self.rt("relay_ref_write", [self.val(e.ref), v])
        self.own(e, self.rt("relay_tuple_new", [ir.Constant(I64, 0)]))

    def visit_op(self, e: Op) -> None:
        raise VMError(f"operator {e.name} used as a value")

    def visit_default(self, e) -> None:
        raise VMError(f"cannot compile {type(e).__name__}")

    # -- control flow --------------------------------------------------------------------------
    def control(self, e, tail: bool):
        b = self.b
        if type(e) is If:
            c = self.val(e.cond)
            data = b.bitcast(self.rt("relay_data", [c]), I8.as_pointer())
            cond = b.icmp_unsigned("!=", b.load(data), ir.Constant(I8, 0))
            return self._arms_if(e, cond, tail)
        return self._match(e, tail)

    def _arms_if(self, e: If, cond, tail: bool):
        b = self.b
        tb = self.fn.append_basic_block("then")
        fb = self.fn.append_basic_block("else")
        merge = self.fn.append_basic_block("endif")
        b.cbranch(cond, tb, fb)
        incoming = []
        for blk, arm in ((tb, e.true_branch), (fb, e.false_branch)):
            b.position_at_end(blk)
            v = self.branch(arm, tail)
            if v is not None:
                incoming.append((v, b.block))
                b.branch(merge)
        b.position_at_end(merge)
        if not incoming:
            b.unreachable()
            b.position_at_end(self.fn.append_basic_block("dead"))
            return None
        phi = b.phi(OBJ)
        for v, blk in incoming:
            phi.add_incoming(v, blk)
        return self.own(e, phi)

    def _match(self, e: Match, tail: bool):
        b = self.b
        data = self.val(e.data)
        merge = self.fn.append_basic_block("endmatch")
        incoming = []
        for clause in e.clauses:
            ok_blk = self.fn.append_basic_block("case")
            next_blk = self.fn.append_basic_block("nextcase")
            binds = self._pattern(clause.lhs, data, ok_blk, next_blk)
            b.position_at_end(ok_blk)
            for var_, val in binds:
                self.env[var_] = val
            v = self.branch(clause.rhs, tail)
            if v is not None:
                incoming.append((v, b.block))
                b.branch(merge)
            b.position_at_end(next_blk)
        self.rt("relay_fail", [self.vm.cstr("match: no clause matches the value")])
        b.unreachable()
        b.position_at_end(merge)
        if not incoming:
            b.unreachable()
            b.position_at_end(self.fn.append_basic_block("dead"))
            return None
        phi = b.phi(OBJ)
        for v, blk in incoming:
            phi.add_incoming(v, blk)
        return self.own(e, phi)

    def _pattern(self, p, value, ok_blk, fail_blk):
        """Emit the tests of pattern p against value; branch to ok_blk or fail_blk. Returns the
        (var, borrowed value) bindings (valid in ok_blk)."""
        b = self.b
        binds = []
        tests = []  # conditions, evaluated in sequence
        stack = [(p, value)]
        while stack:
            q, v = stack.pop()
            if isinstance(q, PatternWildcard):
                continue
            if isinstance(q, PatternVar):
                binds.append((q.var, v))
                continue
            if isinstance(q, PatternConstructor):
                tag = self.rt("relay_tag", [v])
                cond = b.icmp_signed("==", tag, ir.Constant(I32, q.constructor.tag))
                nxt = self.fn.append_basic_block("pat")
                b.cbranch(cond, nxt, fail_blk)
                b.position_at_end(nxt)
                for i, sub in enumerate(q.patterns):
                    stack.append((sub, self.rt("relay_field", [v, ir.Constant(I64, i)])))
                continue
            if isinstance(q, PatternTuple):
                for i, sub in enumerate(q.patterns):
                    stack.append((sub, self.rt("relay_field", [v, ir.Constant(I64, i)])))
        del tests
        b.branch(ok_blk)
        return binds

    # -- calls ---------------------------------------------------------------------------------
    def call(self, e: Call) -> None:
        """A call, by the kind of its callee (`callee_<kind>`)."""
        _CALLEE[type(e.op)](self, e, e.op)

    def callee_function(self, e: Call, op: Function) -> None:
        if op.attr("Primitive"):
            self.own(e, self.kernel_call(e))
            return
        args = self._args(e)  # an immediately applied closure
        clo = self.make_closure(op, None)
        self.own(e, self._call_closure(clo, args))
        self.rt("relay_release", [clo])

    def callee_op(self, e: Call, op: Op) -> None:
        fn = _wrap_op(e)
        args = tuple(a for a in e.args if type(a) is not Constant)
        self.own(e, self.kernel_call(Call(fn, args)))

    def callee_constructor(self, e: Call, op: Constructor) -> None:
        o = self.rt("relay_adt_new", [ir.Constant(I32, op.tag), ir.Constant(I64, len(e.args))])
        for i, a in enumerate(e.args):
            v = self.val(a)
            self.rt("relay_retain", [v])
            self.rt("relay_set_field", [o, ir.Constant(I64, i), v])
        self.own(e, o)

    def callee_global_var(self, e: Call, op: GlobalVar) -> None:
        args = self._args(e)
        info = self.vm.global_fn(op.name_hint)
        self.own(e, self.b.call(info.llfn, [self.ctx] + args))

    def callee_default(self, e: Call, op) -> None:  # a closure value
        args = self._args(e)
        clo = self.val(op)
        self.own(e, self._call_closure(clo, args))

    def _args(self, e: Call) -> list:
        """The argument values, retained (the callee takes them)."""
        args = [self.val(a) for a in e.args]
        for a in args:
            self.rt("relay_retain", [a])
        return args

    def _call_closure(self, clo, args):
        fty = self.vm.fn_type(len(args), True)
        fp = self.b.bitcast(self.rt("relay_closure_fn", [clo]), fty.as_pointer())
        return self.b.call(fp, [self.ctx, clo] + args)

    def make_closure(self, f: Function, self_var: Var | None):
        info = self.vm.closure_fn(f, self_var)
        o = self.rt(
            "relay_closure_new",
            [self.b.bitcast(info.llfn, PTR), ir.Constant(I64, len(info.captured))],
        )
        for k, v in enumerate(info.captured):
            x = self.val(v)
            self.rt("relay_retain", [x])
            self.rt("relay_set_field", [o, ir.Constant(I64, k), x])
        return o

    def global_closure(self, name: str):
        """A closure value for a global function (a wrapper ignoring the closure argument)."""
        info = self.vm.global_fn(name)
        wname = f"relay_wrap_{name}"
        w = self.vm.llmod.globals.get(wname)
        if w is None:
            n = len(info.func.params)
            w = ir.Function(self.vm.llmod, self.vm.fn_type(n, True), wname)
            w.linkage = "internal"
            wb = ir.IRBuilder(w.append_basic_block())
            a = list(w.args)
            wb.ret(wb.call(info.llfn, [a[0]] + a[2:]))
        return self.rt("relay_closure_new", [self.b.bitcast(w, PTR), ir.Constant(I64, 0)])

    def kernel_call(self, call: Call):
        from .vm_kernels import kernel_call  # it needs this module's CTX and VMError

        return kernel_call(self, call)


_CALLEE = method_table(_FunctionEmitter, "callee_")
# A node's operands in its own region, per node kind (branches and bodies are regions); a call's
# callee only when it is computed.
_OPERANDS = {
    **SCOPE_OPERANDS,
    Call: lambda e: e.args if type(e.op) in _STATIC_CALLEES else (e.op, *e.args),
}
_STATIC_CALLEES = frozenset({Op, GlobalVar, Constructor, Function})


def _no_operands(e) -> tuple:
    return ()


_DATAFLOW = (Call, Tuple, TupleGetItem, Constant, Var)


def _plain_callee(op) -> bool:
    """An operator or a primitive function."""
    return type(op) is Op or (type(op) is Function and bool(op.attr("Primitive")))


def _plain_dataflow(body, children) -> dict[int, int] | None:
    """Per node of `body` (by id) its number of uses, when the body is plain dataflow: calls
    of operators or primitive functions, tuples, projections, constants and variables (no
    control flow, closures or references, so every node is evaluated once, in one region);
    else None."""
    uses: dict[int, int] = {}
    for n in post_order(body, children):
        if type(n) not in _DATAFLOW:
            return None
        if type(n) is Call and not _plain_callee(n.op):
            return None
        for c in children(n):
            uses[id(c)] = uses.get(id(c), 0) + 1
    return uses


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
        shape = [d if isinstance(d, int) else getattr(d, "name", None) for d in t.shape]
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
