"""The reference interpreter: evaluates any Relay program with numpy. The oracle for everything.

A CEK-style machine with an explicit task stack, so neither deep graphs nor long recursions touch
Python's recursion limit. Calls in tail position do not grow the stack: a loop written as a
tail-recursive function runs in constant stack space for any number of iterations. Each function
activation memoizes the nodes it has evaluated, so shared subgraphs run once.

Values: numpy arrays (tensors), tuples, `Closure`, `RefValue`, `ConstructorValue`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .errors import EvalError, InputError, ResourceLimitError
from .ir import dtype as dt
from .ir.expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Pattern,
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
from .ir.module import IRModule
from .ir.types import TensorType, TupleType
from .ir.visitor import ExprFunctor


class Env:
    """Variable bindings of one activation, chained to the defining closure's environment."""

    __slots__ = ("vars", "parent")

    def __init__(self, parent: Env | None = None):
        self.vars: dict[Var, object] = {}
        self.parent = parent

    def lookup(self, v: Var):
        env: Env | None = self
        while env is not None:
            val = env.vars.get(v, _MISSING)
            if val is not _MISSING:
                return val
            env = env.parent
        raise EvalError(f"unbound variable %{v.name_hint}")


_MISSING = object()


@dataclass(eq=False)
class Closure:
    func: Function
    env: Env
    name: str = ""

    def __repr__(self) -> str:
        return f"Closure({self.name or 'fn'})"


@dataclass(eq=False)
class RefValue:
    value: object


@dataclass(eq=False)
class ConstructorValue:
    constructor: Constructor
    fields: tuple = ()

    def __repr__(self) -> str:
        if not self.fields:
            return self.constructor.name
        return f"{self.constructor.name}({', '.join(map(repr, self.fields))})"


@dataclass(eq=False)
class OpValue:
    op: Op


def to_list(v: ConstructorValue) -> list:
    """A prelude `List` value as a Python list."""
    out = []
    while v.fields:
        out.append(v.fields[0])
        v = v.fields[1]
    return out


class _Frame:
    __slots__ = ("env", "memo", "tail")

    def __init__(self, env: Env, tail: frozenset):
        self.env = env
        self.memo: dict[int, object] = {}
        self.tail = tail


# Where a node's value is the enclosing function's result, per node kind.
_TAIL_CHILDREN = {
    If: lambda e: (e.true_branch, e.false_branch),
    Let: lambda e: (e.body,),
    Match: lambda e: tuple(c.rhs for c in e.clauses),
}


def _tail_positions(func: Function) -> frozenset:
    """ids of the nodes whose value is the function's result (no memo store needed)."""
    out = set()
    stack = [func.body]
    while stack:
        e = stack.pop()
        if id(e) in out:
            continue
        out.add(id(e))
        f = _TAIL_CHILDREN.get(type(e))
        if f is not None:
            stack.extend(f(e))
    return frozenset(out)


class Interpreter:
    """Evaluates expressions of a module. `max_bytes` bounds every tensor an op produces;
    `max_iterations` the function calls (loop iterations) of one evaluation, `timeout` its
    seconds: over either, a ResourceLimitError."""

    def __init__(
        self,
        mod: IRModule | None = None,
        max_bytes: int | None = None,
        max_iterations: int | None = None,
        timeout: float | None = None,
    ):
        self.mod = mod or IRModule()
        self.max_bytes = max_bytes
        self.max_iterations = max_iterations
        self.timeout = timeout
        self._calls = 0
        self._deadline = None
        self._globals: dict[GlobalVar, Closure] = {}
        self._tails: dict[int, frozenset] = {}

    def _tail(self, f: Function) -> frozenset:
        t = self._tails.get(id(f))
        if t is None:
            t = self._tails[id(f)] = _tail_positions(f)
        return t

    def global_closure(self, gv: GlobalVar) -> Closure:
        c = self._globals.get(gv)
        if c is None:
            try:
                f = self.mod.functions[gv]
            except KeyError:
                raise EvalError(f"unknown global function @{gv.name_hint}") from None
            c = self._globals[gv] = Closure(f, Env(), gv.name_hint)
        return c

    # -- entry points ------------------------------------------------------------------------
    def eval(self, expr: Expr, env: Env | None = None):
        """Evaluate a closed expression (or one whose free vars are bound in `env`)."""
        self._start()
        return self._run(expr, _Frame(env or Env(), frozenset()))

    def _start(self) -> None:
        self._calls = 0
        self._deadline = time.monotonic() + self.timeout if self.timeout else None

    def _tick(self) -> None:
        """One more function call: loops are recursion, so this bounds them."""
        self._calls += 1
        if self.max_iterations is not None and self._calls > self.max_iterations:
            raise ResourceLimitError(
                f"the model made more than {self.max_iterations:,} loop iterations / calls "
                "(max_iterations); raise it if the loop is meant to run that long"
            )
        if self._deadline is not None and time.monotonic() > self._deadline:
            raise ResourceLimitError(
                f"the model ran longer than {self.timeout:g} s (timeout); raise it if meant"
            )

    def apply(self, fn, args: list):
        """Apply a closure / op / constructor value to argument values."""
        if isinstance(fn, Closure):
            frame = self._enter(fn, args)
            return self._run(fn.func.body, frame)
        return self._apply_simple(fn, args, None)

    # -- machinery ---------------------------------------------------------------------------
    def _enter(self, c: Closure, args: list) -> _Frame:
        params = c.func.params
        if len(params) != len(args):
            raise EvalError(
                f"{c.name or 'function'} expects {len(params)} arguments, got {len(args)}"
            )
        env = Env(c.env)
        for p, a in zip(params, args):
            env.vars[p] = a
        return _Frame(env, self._tail(c.func))

    def _apply_simple(self, fn, args, node):
        if isinstance(fn, OpValue):
            return self._op(fn.op, args, getattr(node, "attrs", None), node)
        if isinstance(fn, Constructor):
            return ConstructorValue(fn, tuple(args))
        raise EvalError(f"cannot call a value of kind {type(fn).__name__}")

    def _op(self, op: Op, args: list, attrs, node):
        opdef = op.opdef
        if self.max_bytes is not None and node is not None:
            self._check_budget(node, opdef.name)
        try:
            out = opdef.ref(args, attrs)
        except (EvalError, ResourceLimitError):
            raise
        except Exception as e:
            shapes = ", ".join(
                f"{a.dtype}{list(a.shape)}" if isinstance(a, np.ndarray) else type(a).__name__
                for a in args
            )
            raise EvalError(f"{opdef.name}({shapes}) failed: {type(e).__name__}: {e}") from e
        if self.max_bytes is not None:
            self._check_value_budget(out, opdef.name)
        return out

    def _check_budget(self, node: Expr, name: str) -> None:
        t = node._checked_type
        if t is None:
            return
        total = _type_bytes(t)
        if total is not None and total > self.max_bytes:
            raise ResourceLimitError(
                f"{name} would produce {total:,} bytes, over the budget of {self.max_bytes:,}; "
                "raise the budget if this is intended"
            )

    def _check_value_budget(self, out, name: str) -> None:
        arrs = out if isinstance(out, tuple) else (out,)
        total = sum(a.nbytes for a in arrs if isinstance(a, np.ndarray))
        if total > self.max_bytes:
            raise ResourceLimitError(
                f"{name} produced {total:,} bytes, over the budget of {self.max_bytes:,}"
            )

    def _run(self, root: Expr, frame: _Frame):
        return _Machine(self).run(root, frame)


def _one_operand(operand, k):
    """`visit_<kind>` of a node with one operand: evaluate it, then continue with `k`."""

    def visit(self, node: Expr, fr: _Frame) -> None:
        self.tasks.append((k, node, fr))
        self.tasks.append((None, operand(node), fr))

    return visit


class _Machine(ExprFunctor):
    """One evaluation: an explicit task stack and a value stack. `visit_<kind>(node, frame)`
    starts evaluating a node (pushing its operands and a continuation `k_<kind>`); the
    continuation runs once the operands' values are on the value stack."""

    __slots__ = ("interp", "tasks", "vals")

    def __init__(self, interp: Interpreter):
        self.interp = interp
        self.tasks: list = []
        self.vals: list = []

    def run(self, root: Expr, frame: _Frame):
        tasks = self.tasks
        vals = self.vals
        table = self._table
        tasks.append((None, root, frame))
        while tasks:
            k, node, fr = tasks.pop()
            if k is None:  # evaluate `node`
                v = fr.memo.get(id(node), _MISSING)
                if v is not _MISSING:
                    vals.append(v)
                else:
                    table.get(type(node), _Machine.cannot)(self, node, fr)
            else:
                k(self, node, fr)
        assert len(vals) == 1, "interpreter stack imbalance"
        return vals[0]

    # -- continuations -----------------------------------------------------------------------
    def cannot(self, node, fr: _Frame) -> None:
        raise EvalError(f"cannot evaluate {type(node).__name__}")

    def k_store(self, node: Expr, fr: _Frame) -> None:
        fr.memo[id(node)] = self.vals[-1]

    def k_call(self, node: Call, fr: _Frame) -> None:
        vals = self.vals
        interp = self.interp
        n = len(node.args)
        args = vals[len(vals) - n :] if n else []
        if n:
            del vals[len(vals) - n :]
        callee = node.op
        if type(callee) is Op:
            v = interp._op(callee, args, node.attrs, node)
            fr.memo[id(node)] = v
            vals.append(v)
            return
        fn = vals.pop()
        if isinstance(fn, Closure):
            interp._tick()
            if id(node) not in fr.tail:
                self.tasks.append((_Machine.k_store, node, fr))
            new = interp._enter(fn, args)
            self.tasks.append((None, fn.func.body, new))
        else:
            v = interp._apply_simple(fn, args, node)
            fr.memo[id(node)] = v
            vals.append(v)

    def k_tuple(self, node: Tuple, fr: _Frame) -> None:
        vals = self.vals
        n = len(node.fields)
        v = tuple(vals[len(vals) - n :]) if n else ()
        if n:
            del vals[len(vals) - n :]
        fr.memo[id(node)] = v
        vals.append(v)

    def k_tuple_getitem(self, node: TupleGetItem, fr: _Frame) -> None:
        tup = self.vals.pop()
        if not isinstance(tup, tuple):
            raise EvalError(f"indexing .{node.index} into a non-tuple")
        v = tup[node.index]
        fr.memo[id(node)] = v
        self.vals.append(v)

    def _branch(self, node: Expr, fr: _Frame, body: Expr) -> None:
        if id(node) not in fr.tail:
            self.tasks.append((_Machine.k_store, node, fr))
        self.tasks.append((None, body, fr))

    def k_if(self, node: If, fr: _Frame) -> None:
        c = self.vals.pop()
        try:
            cond = bool(np.asarray(c).reshape(-1)[0])
        except (IndexError, TypeError, ValueError):
            raise EvalError("if condition is not a one-element tensor") from None
        self._branch(node, fr, node.true_branch if cond else node.false_branch)

    def k_let(self, node: Let, fr: _Frame) -> None:
        fr.env.vars[node.var] = self.vals.pop()
        self._branch(node, fr, node.body)

    def k_match(self, node: Match, fr: _Frame) -> None:
        data = self.vals.pop()
        for clause in node.clauses:
            binds = match_pattern(clause.lhs, data)
            if binds is not None:
                fr.env.vars.update(binds)
                self._branch(node, fr, clause.rhs)
                return
        raise EvalError(f"no match clause fits the value {data!r}")

    def k_ref_create(self, node: RefCreate, fr: _Frame) -> None:
        v = RefValue(self.vals.pop())
        fr.memo[id(node)] = v
        self.vals.append(v)

    def k_ref_read(self, node: RefRead, fr: _Frame) -> None:
        r = self.vals.pop()
        self.vals.append(r.value)  # not memoized: a ref's content changes

    def k_ref_write(self, node: RefWrite, fr: _Frame) -> None:
        value = self.vals.pop()
        r = self.vals.pop()
        r.value = value
        self.vals.append(())

    # -- starting a node ---------------------------------------------------------------------
    def visit_var(self, node: Var, fr: _Frame) -> None:
        self.vals.append(fr.env.lookup(node))

    def visit_constant(self, node: Constant, fr: _Frame) -> None:
        self.vals.append(node.data)

    def visit_global_var(self, node: GlobalVar, fr: _Frame) -> None:
        self.vals.append(self.interp.global_closure(node))

    def visit_op(self, node: Op, fr: _Frame) -> None:
        self.vals.append(OpValue(node))

    def visit_constructor(self, node: Constructor, fr: _Frame) -> None:
        self.vals.append(node)

    def visit_function(self, node: Function, fr: _Frame) -> None:
        v = Closure(node, fr.env)
        fr.memo[id(node)] = v
        self.vals.append(v)

    def visit_call(self, node: Call, fr: _Frame) -> None:
        push = self.tasks.append
        push((_Machine.k_call, node, fr))
        for a in reversed(node.args):
            push((None, a, fr))
        if type(node.op) is not Op:
            push((None, node.op, fr))

    def visit_tuple(self, node: Tuple, fr: _Frame) -> None:
        push = self.tasks.append
        push((_Machine.k_tuple, node, fr))
        for f in reversed(node.fields):
            push((None, f, fr))

    def visit_ref_write(self, node: RefWrite, fr: _Frame) -> None:
        push = self.tasks.append
        push((_Machine.k_ref_write, node, fr))
        push((None, node.value, fr))
        push((None, node.ref, fr))

    visit_tuple_getitem = _one_operand(lambda e: e.tuple_value, k_tuple_getitem)
    visit_if = _one_operand(lambda e: e.cond, k_if)
    visit_let = _one_operand(lambda e: e.value, k_let)
    visit_match = _one_operand(lambda e: e.data, k_match)
    visit_ref_create = _one_operand(lambda e: e.value, k_ref_create)
    visit_ref_read = _one_operand(lambda e: e.ref, k_ref_read)


def match_pattern(p: Pattern, value) -> dict | None:
    """Bindings if `value` matches `p`, else None."""
    binds: dict = {}
    stack = [(p, value)]
    while stack:
        q, v = stack.pop()
        if isinstance(q, PatternWildcard):
            continue
        if isinstance(q, PatternVar):
            binds[q.var] = v
        elif isinstance(q, PatternConstructor):
            if not isinstance(v, ConstructorValue) or v.constructor.name != q.constructor.name:
                return None
            stack.extend(zip(q.patterns, v.fields))
        elif isinstance(q, PatternTuple):
            if not isinstance(v, tuple) or len(v) != len(q.patterns):
                return None
            stack.extend(zip(q.patterns, v))
    return binds


def _type_bytes(t) -> int | None:
    if isinstance(t, TensorType):
        n = 1
        for d in t.shape:
            if not isinstance(d, int):
                return None
            n *= d
        return n * dt.itemsize(t.dtype) if t.dtype != "string" else n * 8
    if isinstance(t, TupleType):
        parts = [_type_bytes(f) for f in t.fields]
        return None if any(p is None for p in parts) else sum(parts)
    return None


def _coerce_input(value, t, name: str):
    if not isinstance(t, TensorType):
        return value
    arr = np.asarray(value)
    want = dt.to_numpy(t.dtype)
    if arr.dtype != want:
        if isinstance(value, np.ndarray) and not np.can_cast(arr.dtype, want, "same_kind"):
            raise InputError(f"input {name} has dtype {arr.dtype}, expected {t.dtype}")
        arr = arr.astype(want)
    if len(arr.shape) != len(t.shape) or any(
        isinstance(d, int) and d != s for d, s in zip(t.shape, arr.shape)
    ):
        shape = "(" + ", ".join("?" if not isinstance(d, int) else str(d) for d in t.shape) + ")"
        raise InputError(f"input {name} has shape {arr.shape}, expected {shape}")
    return arr


def evaluate(
    mod,
    *args,
    max_bytes: int | None = None,
    max_iterations: int | None = None,
    timeout: float | None = None,
    **kwargs,
):
    """Run `@main` (or a Function / closed expression) with numpy inputs.

    >>> evaluate(mod, np.ones((1, 4), "float32"))          # positional
    >>> evaluate(mod, x=np.ones((1, 4), "float32"))        # by parameter name
    Tensors come back as numpy arrays, tuples as tuples, ADT values as ConstructorValue.
    `max_iterations` / `timeout` (seconds) bound loops: over either, a ResourceLimitError.
    """
    if isinstance(mod, IRModule):
        main = mod["main"]
    elif isinstance(mod, Function):
        main, mod = mod, IRModule.from_expr(mod)
    elif isinstance(mod, Expr):
        return Interpreter(None, max_bytes, max_iterations, timeout).eval(mod)
    else:
        raise TypeError(f"evaluate needs an IRModule, Function or Expr, not {type(mod).__name__}")
    params = main.params
    names = [p.name_hint for p in params]
    if kwargs:
        unknown = [k for k in kwargs if k not in names]
        if unknown:
            raise InputError(f"unknown input(s) {unknown}; inputs are {names}")
    if len(args) > len(params):
        raise InputError(f"@main takes {len(params)} inputs, got {len(args)}")
    values = list(args)
    for p in params[len(args) :]:
        if p.name_hint not in kwargs:
            raise InputError(f"missing input {p.name_hint!r}; inputs are {names}")
        values.append(kwargs[p.name_hint])
    coerced = []
    for p, v in zip(params, values):
        t = p.type_annotation or p._checked_type
        coerced.append(_coerce_input(v, t, p.name_hint) if t is not None else v)
    interp = Interpreter(mod, max_bytes, max_iterations, timeout)
    interp._start()
    return interp.apply(Closure(main, Env(), "main"), coerced)
