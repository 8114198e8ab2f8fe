"""EliminateCommonSubexpr: share identical pure computations."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.expr import Call, Constant, Expr, Function, If, Let, Match, Op, Tuple, TupleGetItem, Var
from ..ir.module import IRModule
from ..ir.visitor import ExprFunctor, post_order
from ._util import child_exprs, map_functions, rebuild
from .manager import Pass, PassContext, register_pass

_SMALL_CONST = 64  # constants up to this many elements are merged by value


@register_pass
@dataclass
class EliminateCommonSubexpr(Pass):
    """Replace a call (or tuple, or projection) by an earlier identical one whose value is
    available where it is used. Stateful ops and refs are never merged; calls of functions
    are left alone (they may have effects).

    An identical computation is reused only where the first one *dominates* it: in the
    same scope or an inner one (a branch, a function body, a let body). When the first is
    bound by a let, the duplicate becomes the let's variable, and `let %b = %a` is
    propagated away.

    >>> mod = EliminateCommonSubexpr()(mod)
    """

    opt_level = 2

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, lambda gv, f: eliminate_common(f))


class _Scopes(ExprFunctor):
    """The scope tree of one function with Euler-tour numbers for O(1) dominance tests.

    `visit_<kind>(node, s)` lists a node's children with the scope each is in (`s`, the
    node's own scope, or a new scope opened below it)."""

    def __init__(self, root: Expr):
        self.of: dict[int, int] = {}
        self.parent: list[int] = [-1]
        self.let_body_scope: dict[int, int] = {}
        stack: list[tuple[Expr, int]] = [(root, 0)]
        table = self._table
        while stack:
            node, s = stack.pop()
            if id(node) in self.of:
                continue
            self.of[id(node)] = s
            stack.extend(reversed(table[type(node)](self, node, s)))
        parent = self.parent
        # Euler tour over the scope tree.
        kids_of: list[list[int]] = [[] for _ in parent]
        for i, p in enumerate(parent):
            if p >= 0:
                kids_of[p].append(i)
        self.pre = [0] * len(parent)
        self.post = [0] * len(parent)
        clock = 0
        todo: list[tuple[int, bool]] = [(0, False)]
        while todo:
            s, done = todo.pop()
            clock += 1
            if done:
                self.post[s] = clock
                continue
            self.pre[s] = clock
            todo.append((s, True))
            todo.extend((k, False) for k in kids_of[s])

    def open(self, s: int) -> int:
        """A new scope inside `s`."""
        self.parent.append(s)
        return len(self.parent) - 1

    def visit_function(self, node: Function, s: int) -> list:
        return [(node.body, self.open(s))]

    def visit_if(self, node: If, s: int) -> list:
        return [(node.cond, s), (node.true_branch, self.open(s)), (node.false_branch, self.open(s))]

    def visit_match(self, node: Match, s: int) -> list:
        return [(node.data, s)] + [(c.rhs, self.open(s)) for c in node.clauses]

    def visit_let(self, node: Let, s: int) -> list:
        body = self.let_body_scope[id(node)] = self.open(s)
        return [(node.value, s), (node.body, body)]

    def visit_default(self, node: Expr, s: int) -> list:
        return [(c, s) for c in child_exprs(node)]

    visit_var = visit_global_var = visit_constant = visit_op = visit_constructor = visit_default
    visit_call = visit_tuple = visit_tuple_getitem = visit_default
    visit_ref_create = visit_ref_read = visit_ref_write = visit_default

    def dominates(self, a: int, b: int) -> bool:
        """Scope `a` encloses scope `b` (or is it)."""
        return self.pre[a] <= self.pre[b] and self.post[b] <= self.post[a]


def _attrs_key(attrs):
    try:
        hash(attrs)
        return attrs
    except TypeError:
        return ("id", id(attrs))


def _call_key(node: Call, ids: tuple) -> tuple | None:
    if type(node.op) is not Op or node.op.opdef.stateful:
        return None
    return ("call", node.op.name, _attrs_key(node.attrs), node.type_args, ids[1:])


# The key of a mergeable computation, per node kind (other kinds are never merged).
_KEYS = {
    Call: _call_key,
    Tuple: lambda node, ids: ("tuple", ids),
    TupleGetItem: lambda node, ids: ("get", node.index, ids),
}


def _key(node: Expr, kids: tuple) -> tuple | None:
    f = _KEYS.get(type(node))
    return f(node, tuple(id(k) for k in kids)) if f is not None else None


class _Eliminate(ExprFunctor):
    """`visit_<kind>(node)`: the replacement of `node`, its children's already in `memo`."""

    def __init__(self, func: Function):
        self.scopes = _Scopes(func)
        self.let_of_value: dict[int, Let] = {}
        self.let_of_var: dict[Var, Let] = {}
        for n in post_order(func, child_exprs):
            if type(n) is Let:
                self.let_of_value.setdefault(id(n.value), n)
                self.let_of_var[n.var] = n
        self.memo: dict[int, Expr] = {}
        self.table: dict[tuple, list[tuple[int, Expr]]] = {}
        self.consts: dict[tuple, Constant] = {}

    def run(self, func: Function) -> Function:
        memo = self.memo
        table = self._table
        for node in post_order(func, child_exprs):
            memo[id(node)] = table[type(node)](self, node)
        return memo[id(func)]  # type: ignore[return-value]

    def visit_var(self, node: Var) -> Expr:
        let = self.let_of_var.get(node)
        if let is not None and type(self.memo.get(id(let.value))) is Var:
            return self.memo[id(let.value)]  # let %b = %a: use %a
        return node

    def visit_constant(self, node: Constant) -> Expr:
        return _canonical_const(node, self.consts)

    def visit_let(self, node: Let) -> Expr:
        value = self.memo.get(id(node.value), node.value)
        if type(value) is Var and value is not node.var:
            return self.memo.get(id(node.body), node.body)  # the binding was propagated
        return self.visit_default(node)

    def visit_default(self, node: Expr) -> Expr:
        memo = self.memo
        kids = child_exprs(node)
        new_kids = tuple(memo.get(id(c), c) for c in kids)
        new = rebuild(node, new_kids) if kids else node
        key = _key(node, new_kids)
        if key is None:
            return new
        scopes = self.scopes
        scope = scopes.of[id(node)]
        entries = self.table.setdefault(key, [])
        best = None
        for s, e in entries:
            if scopes.dominates(s, scope) and (best is None or scopes.dominates(best[0], s)):
                best = (s, e)
        if best is not None:
            return best[1]
        entries.append((scope, new))
        let = self.let_of_value.get(id(node))
        if let is not None:  # inside the let's body, the duplicate is the let's var
            entries.append((scopes.let_body_scope[id(let)], let.var))
        return new

    visit_global_var = visit_op = visit_constructor = visit_call = visit_default
    visit_tuple = visit_tuple_getitem = visit_function = visit_if = visit_match = visit_default
    visit_ref_create = visit_ref_read = visit_ref_write = visit_default


def eliminate_common(func: Function) -> Function:
    return _Eliminate(func).run(func)


def _canonical_const(c: Constant, consts: dict) -> Constant:
    d = c.data
    if d.size > _SMALL_CONST or d.dtype == object:
        return c
    key = (d.dtype.str, d.shape, np.ascontiguousarray(d).tobytes())
    return consts.setdefault(key, c)
