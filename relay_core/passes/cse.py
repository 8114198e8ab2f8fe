"""EliminateCommonSubexpr: share identical pure computations."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.expr import Call, Constant, Expr, Function, If, Let, Match, Op, Tuple, TupleGetItem, Var
from ..ir.module import IRModule
from ..ir.visitor import post_order
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


class _Scopes:
    """The scope tree of one function with Euler-tour numbers for O(1) dominance tests."""

    def __init__(self, root: Expr):
        self.of: dict[int, int] = {}
        parent: list[int] = [-1]
        stack: list[tuple[Expr, int]] = [(root, 0)]
        self.let_body_scope: dict[int, int] = {}
        while stack:
            node, s = stack.pop()
            if id(node) in self.of:
                continue
            self.of[id(node)] = s
            t = type(node)
            kids: list[tuple[Expr, int]] = []
            if t is Function:
                parent.append(s)
                kids = [(node.body, len(parent) - 1)]
            elif t is If:
                parent.append(s)
                parent.append(s)
                n = len(parent)
                kids = [(node.cond, s), (node.true_branch, n - 2), (node.false_branch, n - 1)]
            elif t is Match:
                kids = [(node.data, s)]
                for c in node.clauses:
                    parent.append(s)
                    kids.append((c.rhs, len(parent) - 1))
            elif t is Let:
                parent.append(s)
                self.let_body_scope[id(node)] = len(parent) - 1
                kids = [(node.value, s), (node.body, len(parent) - 1)]
            else:
                kids = [(c, s) for c in child_exprs(node)]
            stack.extend(reversed(kids))
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

    def dominates(self, a: int, b: int) -> bool:
        """Scope `a` encloses scope `b` (or is it)."""
        return self.pre[a] <= self.pre[b] and self.post[b] <= self.post[a]


def _attrs_key(attrs):
    try:
        hash(attrs)
        return attrs
    except TypeError:
        return ("id", id(attrs))


def _key(node: Expr, kids: tuple) -> tuple | None:
    t = type(node)
    ids = tuple(id(k) for k in kids)
    if t is Call and type(node.op) is Op:
        if node.op.opdef.stateful:
            return None
        return ("call", node.op.name, _attrs_key(node.attrs), node.type_args, ids[1:])
    if t is Tuple:
        return ("tuple", ids)
    if t is TupleGetItem:
        return ("get", node.index, ids)
    return None


def eliminate_common(func: Function) -> Function:
    scopes = _Scopes(func)
    let_of_value: dict[int, Let] = {}
    let_of_var: dict[Var, Let] = {}
    for n in post_order(func, child_exprs):
        if type(n) is Let:
            let_of_value.setdefault(id(n.value), n)
            let_of_var[n.var] = n
    memo: dict[int, Expr] = {}
    table: dict[tuple, list[tuple[int, Expr]]] = {}
    consts: dict[tuple, Constant] = {}

    for node in post_order(func, child_exprs):
        t = type(node)
        if t is Var:
            new: Expr = node
            let = let_of_var.get(node)
            if let is not None and type(memo.get(id(let.value))) is Var:
                new = memo[id(let.value)]  # let %b = %a: use %a
            memo[id(node)] = new
            continue
        if t is Constant:
            memo[id(node)] = _canonical_const(node, consts)
            continue
        kids = child_exprs(node)
        new_kids = tuple(memo.get(id(c), c) for c in kids)
        if t is Let and type(new_kids[0]) is Var and new_kids[0] is not node.var:
            memo[id(node)] = new_kids[1]  # the binding was propagated into the body
            continue
        new = rebuild(node, new_kids) if kids else node
        key = _key(node, new_kids)
        if key is not None:
            scope = scopes.of[id(node)]
            entries = table.setdefault(key, [])
            best = None
            for s, e in entries:
                if scopes.dominates(s, scope) and (best is None or scopes.dominates(best[0], s)):
                    best = (s, e)
            if best is not None:
                new = best[1]
            else:
                entries.append((scope, new))
                let = let_of_value.get(id(node))
                if let is not None:  # inside the let's body, the duplicate is the let's var
                    entries.append((scopes.let_body_scope[id(let)], let.var))
        memo[id(node)] = new
    return memo[id(func)]  # type: ignore[return-value]


def _canonical_const(c: Constant, consts: dict) -> Constant:
    d = c.data
    if d.size > _SMALL_CONST or d.dtype == object:
        return c
    key = (d.dtype.str, d.shape, np.ascontiguousarray(d).tobytes())
    return consts.setdefault(key, c)
