"""Iterative traversals: no Python recursion per node, so 10,000-node models are fine.

- `children(e)` / `with_children(e, new)`: the one place that knows each node's sub-expressions.
- `post_order(root)`: every node reachable from `root`, children before parents, once each.
- `ExprVisitor`: calls `visit_<kind>(node)` on every node in post-order.
- `ExprMutator`: rebuilds bottom-up; `rewrite_<kind>(orig, new)` sees the node rebuilt from
  rewritten children (the same object when nothing below changed) and returns its replacement.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .expr import (
    Call,
    Clause,
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
    pattern_vars,
)


def _match_children(e: Match) -> tuple:
    out: list[Expr] = [e.data]
    for c in e.clauses:
        out.extend(pattern_vars(c.lhs))
        out.append(c.rhs)
    return tuple(out)


def _none(e: Expr) -> tuple:
    return ()


# Each node kind's sub-expressions in evaluation order, binders (params, let vars) first.
_CHILDREN = {
    Var: _none,
    GlobalVar: _none,
    Constant: _none,
    Op: _none,
    Constructor: _none,
    Call: lambda e: (e.op, *e.args),
    Tuple: lambda e: e.fields,
    TupleGetItem: lambda e: (e.tuple_value,),
    Let: lambda e: (e.var, e.value, e.body),
    Function: lambda e: (*e.params, e.body),
    If: lambda e: (e.cond, e.true_branch, e.false_branch),
    Match: _match_children,
    RefCreate: lambda e: (e.value,),
    RefRead: lambda e: (e.ref,),
    RefWrite: lambda e: (e.ref, e.value),
}


def children(e: Expr) -> tuple[Expr, ...]:
    """Sub-expressions of `e` in evaluation order. Binders (params, let vars) come first."""
    try:
        return _CHILDREN[type(e)](e)
    except KeyError:
        raise TypeError(f"not a Relay expression: {type(e).__name__}") from None


_BINDERS = {
    Function: lambda e: (e.params,),
    Let: lambda e: ((e.var,),),
    Match: lambda e: tuple(pattern_vars(c.lhs) for c in e.clauses),
}


def binders(e: Expr) -> tuple[tuple[Var, ...], ...]:
    """The variables `e` binds, one group per binding site (a function's params, a let's
    var, each match clause's pattern vars); `()` for nodes that bind nothing."""
    f = _BINDERS.get(type(e))
    return f(e) if f is not None else ()


def _map_pattern(p: Pattern, vmap: dict) -> Pattern:
    if isinstance(p, PatternVar):
        v = vmap.get(p.var, p.var)
        return p if v is p.var else PatternVar(v)
    if isinstance(p, PatternConstructor):
        ps = tuple(_map_pattern(q, vmap) for q in p.patterns)
        if all(a is b for a, b in zip(ps, p.patterns)):
            return p
        return PatternConstructor(p.constructor, ps)
    if isinstance(p, PatternTuple):
        ps = tuple(_map_pattern(q, vmap) for q in p.patterns)
        if all(a is b for a, b in zip(ps, p.patterns)):
            return p
        return PatternTuple(ps)
    return p


def _match_with(e: Match, new, s) -> Match:
    it = iter(new)
    data = next(it)
    clauses = []
    for c in e.clauses:
        pv = pattern_vars(c.lhs)
        vmap = {}
        for v in pv:
            nv = next(it)
            if nv is not v:
                vmap[v] = nv
        rhs = next(it)
        lhs = _map_pattern(c.lhs, vmap) if vmap else c.lhs
        clauses.append(c if (lhs is c.lhs and rhs is c.rhs) else Clause(lhs, rhs))
    return Match(data, tuple(clauses), e.complete, span=s)


def _function_with(e: Function, new, s) -> Function:
    n = len(e.params)
    return Function(tuple(new[:n]), new[n], e.ret_type, e.type_params, e.attrs, span=s)


# Each node kind rebuilt from new children (ordered as `children` gives them).
_WITH_CHILDREN = {
    Call: lambda e, new, s: Call(new[0], tuple(new[1:]), e.attrs, e.type_args, span=s),
    Tuple: lambda e, new, s: Tuple(tuple(new), span=s),
    TupleGetItem: lambda e, new, s: TupleGetItem(new[0], e.index, span=s),
    Let: lambda e, new, s: Let(new[0], new[1], new[2], span=s),
    Function: _function_with,
    If: lambda e, new, s: If(new[0], new[1], new[2], span=s),
    Match: _match_with,
    RefCreate: lambda e, new, s: RefCreate(new[0], span=s),
    RefRead: lambda e, new, s: RefRead(new[0], span=s),
    RefWrite: lambda e, new, s: RefWrite(new[0], new[1], span=s),
}


def with_children(e: Expr, new: tuple | list) -> Expr:
    """`e` rebuilt with `new` children (as `children(e)` orders them); `e` itself if unchanged."""
    old = children(e)
    if len(old) == len(new) and all(a is b for a, b in zip(old, new)):
        return e
    f = _WITH_CHILDREN.get(type(e))
    return e if f is None else f(e, new, e.span)


def post_order(root: Expr, children_fn: Callable[[Expr], Iterable[Expr]] = children) -> list[Expr]:
    """All nodes reachable from `root`, each once, every node after its children."""
    order: list[Expr] = []
    visited: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        key = id(node)
        if key in visited:
            continue
        visited.add(key)
        stack.append((node, True))
        kids = children_fn(node)
        for c in reversed(tuple(kids)):
            if id(c) not in visited:
                stack.append((c, False))
    return order


_KIND = {
    Var: "var",
    GlobalVar: "global_var",
    Constant: "constant",
    Op: "op",
    Constructor: "constructor",
    Call: "call",
    Tuple: "tuple",
    TupleGetItem: "tuple_getitem",
    Let: "let",
    Function: "function",
    If: "if",
    Match: "match",
    RefCreate: "ref_create",
    RefRead: "ref_read",
    RefWrite: "ref_write",
}
KINDS: tuple[str, ...] = tuple(_KIND.values())

# The operands a node evaluates in its own scope, before itself, per node kind: an If's
# condition but not its branches, a Match's scrutinee but not its clauses; none for a Let or a
# Function (their bodies are scopes of their own). A Call is left to each user (the printer
# and the VM compiler order and filter its callee differently): `{**SCOPE_OPERANDS, Call: ...}`.
SCOPE_OPERANDS: dict[type, Callable[[Expr], tuple]] = {
    Tuple: lambda e: e.fields,
    TupleGetItem: lambda e: (e.tuple_value,),
    If: lambda e: (e.cond,),
    Match: lambda e: (e.data,),
    RefCreate: lambda e: (e.value,),
    RefRead: lambda e: (e.ref,),
    RefWrite: lambda e: (e.ref, e.value),
}


def kind(e: Expr) -> str:
    """The node kind of `e` (`"call"`, `"let"`, ...): the suffix of its `visit_` method."""
    try:
        return _KIND[type(e)]
    except KeyError:
        raise TypeError(f"not a Relay expression: {type(e).__name__}") from None


def method_table(cls: type, prefix: str) -> dict[type, Callable]:
    """`{node type: cls.<prefix><kind>}`: a dispatch table for a family of per-kind methods
    (`visit_`, or a second one such as the type checker's `callee_`). A kind without its own
    method (or whose method is only an inherited alias of a `<prefix>default`) goes to the
    class's `<prefix>default`, so overriding the default covers every kind not overridden."""
    default = getattr(cls, prefix + "default", None)
    defaults = {
        b.__dict__[prefix + "default"] for b in cls.__mro__ if prefix + "default" in b.__dict__
    }
    table = {}
    for t, k in _KIND.items():
        m = getattr(cls, prefix + k, None)
        table[t] = default if m is None or m in defaults else m
    return table


class ExprFunctor:
    """One method per node kind: `dispatch(e, *args)` calls `visit_<kind>(e, *args)`.

    The dispatch table is built once per class (no `getattr` per node). Unhandled kinds go to
    `visit_default`, which raises. Subclasses set `PREFIX` to use another family of methods
    (ExprMutator uses `rewrite_`). Extra arguments pass through, so pairwise walks
    (structural equality: `visit_call(x, y)`) and machines with a frame (the interpreter:
    `visit_call(node, frame)`) use the same dispatch. The functor itself does not walk: the
    subclasses below (and consumers with their own evaluation order) drive it from an
    explicit stack, never by recursion.
    """

    PREFIX = "visit_"
    _table: dict = {}

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls._table = method_table(cls, cls.PREFIX)

    def dispatch(self, e, *args):
        try:
            fn = self._table[type(e)]
        except KeyError:
            raise TypeError(f"not a Relay expression: {type(e).__name__}") from None
        return fn(self, e, *args)

    def visit_default(self, e, *args):
        raise TypeError(f"{type(self).__name__} does not handle {type(e).__name__}")

    visit_var = visit_global_var = visit_constant = visit_op = visit_constructor = visit_default
    visit_call = visit_tuple = visit_tuple_getitem = visit_let = visit_function = visit_default
    visit_if = visit_match = visit_ref_create = visit_ref_read = visit_ref_write = visit_default


ExprFunctor._table = {t: getattr(ExprFunctor, "visit_" + k) for t, k in _KIND.items()}


class ExprVisitor(ExprFunctor):
    """Results per node, children first (as torch.fx's Interpreter): `visit(root)` walks the
    graph post-order from an explicit stack and stores `visit_<kind>(node)` in `self.memo`
    (each node once; read children's results as `self.memo[child]`).

    `children(e)` is called once per node, in pre-order (before anything below `e` is
    visited): override it to prune (return `()` not to descend into a Function) or to act on
    entry (number binders, open a scope). The default `visit_<kind>` returns None.
    """

    def __init__(self):
        self.memo: dict = {}

    def visit(self, root: Expr):
        memo = self.memo
        if root in memo:
            return memo[root]
        kids = self.children
        table = self._table
        for node in post_order(root, lambda n: () if n in memo else kids(n)):
            if node not in memo:
                memo[node] = table[type(node)](self, node)
        return memo[root]

    def children(self, e: Expr) -> Iterable[Expr]:
        return children(e)

    def visit_default(self, e: Expr):
        return None

    visit_var = visit_global_var = visit_constant = visit_op = visit_constructor = visit_default
    visit_call = visit_tuple = visit_tuple_getitem = visit_let = visit_function = visit_default
    visit_if = visit_match = visit_ref_create = visit_ref_read = visit_ref_write = visit_default


class ExprMutator(ExprFunctor):
    """Bottom-up rewriting with memoization (as torch.fx's Transformer).

    `mutate(e)` rebuilds each node from its rewritten children (keeping the node when nothing
    below changed) and hands `(orig, new)` to `rewrite_<kind>`, whose result replaces the node.
    `self.memo` maps original nodes to their replacements; pre-seed it to substitute.
    """

    PREFIX = "rewrite_"

    def __init__(self):
        self.memo: dict[Expr, Expr] = {}

    def children(self, e: Expr) -> Iterable[Expr]:
        return children(e)

    def mutate(self, root: Expr) -> Expr:
        memo = self.memo
        if root in memo:
            return memo[root]
        kids_fn = self.children
        for node in post_order(root, lambda n: () if n in memo else kids_fn(n)):
            if node in memo:
                continue
            kids = tuple(kids_fn(node))
            new = self.rebuild(node, tuple(memo.get(c, c) for c in kids)) if kids else node
            memo[node] = self.rewrite(node, new)
        return memo[root]

    def rebuild(self, node: Expr, new_children: tuple) -> Expr:
        """`node` with its children replaced (`node` itself when none changed)."""
        return with_children(node, new_children)

    def rewrite(self, orig: Expr, new: Expr) -> Expr:
        """The hook every node goes through: dispatches to `rewrite_<kind>`. Override it
        instead to handle all kinds in one method."""
        return self._table[type(orig)](self, orig, new)

    def rewrite_default(self, orig: Expr, new: Expr) -> Expr:
        return new

    rewrite_var = rewrite_global_var = rewrite_constant = rewrite_op = rewrite_default
    rewrite_constructor = rewrite_call = rewrite_tuple = rewrite_tuple_getitem = rewrite_default
    rewrite_let = rewrite_function = rewrite_if = rewrite_match = rewrite_default
    rewrite_ref_create = rewrite_ref_read = rewrite_ref_write = rewrite_default


# ---------------------------------------------------------------------------------------------
# Rewriting that knows binders (the passes' rewriter).


# Sub-expressions without binders, for the kinds that bind (the others: `children`).
_CHILD_EXPRS = {
    Let: lambda e: (e.value, e.body),
    Function: lambda e: (e.body,),
    Match: lambda e: (e.data, *(c.rhs for c in e.clauses)),
}


def child_exprs(e: Expr) -> tuple[Expr, ...]:
    """Sub-expressions of `e` without its binders (let vars, params, pattern vars)."""
    f = _CHILD_EXPRS.get(type(e))
    return f(e) if f is not None else children(e)


def _let_rebuild(e: Let, new, binders: dict) -> Let:
    v = binders.get(e.var, e.var)
    if v is e.var and new[0] is e.value and new[1] is e.body:
        return e
    return Let(v, new[0], new[1], span=e.span)


def _function_rebuild(e: Function, new, binders: dict) -> Function:
    ps = tuple(binders.get(p, p) for p in e.params)
    if new[0] is e.body and all(a is b for a, b in zip(ps, e.params)):
        return e
    return Function(ps, new[0], e.ret_type, e.type_params, e.attrs, span=e.span)


def _match_rebuild(e: Match, new, binders: dict) -> Match:
    clauses = []
    for c, rhs in zip(e.clauses, new[1:]):
        lhs = _rename_pattern(c.lhs, binders) if binders else c.lhs
        clauses.append(c if lhs is c.lhs and rhs is c.rhs else Clause(lhs, rhs))
    if new[0] is e.data and all(a is b for a, b in zip(clauses, e.clauses)):
        return e
    return Match(new[0], tuple(clauses), e.complete, span=e.span)


# The binding kinds rebuilt from `child_exprs`-ordered children and renamed binders.
_REBUILD = {Let: _let_rebuild, Function: _function_rebuild, Match: _match_rebuild}


def rebuild(e: Expr, new: tuple | list, binders: dict | None = None) -> Expr:
    """`e` with new non-binder children (as `child_exprs` orders them); binders renamed via
    `binders` (old Var -> new Var). Returns `e` itself when nothing changed."""
    f = _REBUILD.get(type(e))
    if f is not None:
        return f(e, new, binders or {})
    return with_children(e, tuple(new))


def _rename_pattern(p, binders):
    if isinstance(p, PatternVar):
        v = binders.get(p.var, p.var)
        return p if v is p.var else PatternVar(v)
    if isinstance(p, (PatternConstructor, PatternTuple)):
        ps = tuple(_rename_pattern(q, binders) for q in p.patterns)
        if all(a is b for a, b in zip(ps, p.patterns)):
            return p
        if isinstance(p, PatternTuple):
            return PatternTuple(ps)
        return PatternConstructor(p.constructor, ps)
    return p


class Rewriter(ExprMutator):
    """Bottom-up rewriting with memoization that never rewrites binders.

    Unlike `ExprMutator`, let vars, params and pattern vars are not visited as children, so
    `rewrite_var` sees only *uses* of variables, and in a let the value is rewritten before the
    body (so `self.memo[var] = ...` set while rewriting the value's let takes effect in the
    body). `self.binders` renames binders (old Var -> new Var). Override `rewrite(orig, new)`
    (or the per-kind `rewrite_<kind>`); return `new` to keep it.
    """

    def __init__(self):
        super().__init__()
        self.binders: dict[Var, Var] = {}

    def children(self, e: Expr) -> tuple[Expr, ...]:
        return child_exprs(e)

    def rebuild(self, node: Expr, new_children: tuple) -> Expr:
        return rebuild(node, new_children, self.binders)


def substitute(e: Expr, mapping: dict[Var, Expr]) -> Expr:
    """Replace free occurrences of vars by expressions."""
    m = ExprMutator()
    m.memo.update(mapping)
    return m.mutate(e)


def free_vars(e: Expr) -> list[Var]:
    """Variables used in `e` but not bound inside it, in first-use order."""
    bound: set[Var] = set()
    used: list[Var] = []
    seen: set[Var] = set()
    for node in post_order(e):
        if type(node) is Var:
            if node not in seen:
                seen.add(node)
                used.append(node)
        else:
            for group in binders(node):
                bound.update(group)
    return [v for v in used if v not in bound]


def bound_vars(e: Expr) -> list[Var]:
    out: list[Var] = []
    for node in post_order(e):
        for group in binders(node):
            out.extend(group)
    return out


def global_vars(e: Expr) -> list[GlobalVar]:
    seen: dict[str, GlobalVar] = {}
    for node in post_order(e):
        if type(node) is GlobalVar:
            seen.setdefault(node.name_hint, node)
    return list(seen.values())


def count_nodes(e: Expr) -> int:
    return len(post_order(e))


__all__ = [
    "KINDS",
    "kind",
    "ExprFunctor",
    "method_table",
    "children",
    "binders",
    "with_children",
    "post_order",
    "ExprVisitor",
    "ExprMutator",
    "Rewriter",
    "child_exprs",
    "rebuild",
    "substitute",
    "free_vars",
    "bound_vars",
    "global_vars",
    "count_nodes",
    "PatternWildcard",
]
