"""Code generation of one Relay function for the general path (vm.py): the iterative evaluation
of dataflow and let chains, regions (If branches, match clauses) and their memory, tail calls
as jumps, closures, references and ADTs; tensor calls through vm_kernels.
"""

from __future__ import annotations

from llvmlite import ir

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
)
from ..ir.types import TensorType
from ..ir.visitor import SCOPE_OPERANDS, ExprFunctor, method_table, post_order
from .codegen import (
    I8,
    I32,
    I64,
    PTR,
)
from .graph import _wrap_op
from .vm import CTX, OBJ, VMCompiler, VMError, _FnInfo, _Region


class FunctionEmitter(ExprFunctor):
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


_CALLEE = method_table(FunctionEmitter, "callee_")
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
