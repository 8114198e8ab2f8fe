"""ToANormalForm and ToGraphNormalForm.

A-normal form binds every non-atomic expression to a let, so evaluation order and sharing are
explicit: `let %x1 = f(%a); let %x2 = g(%x1, %x1); %x2`. Graph normal form is the reverse:
dataflow as a DAG of shared nodes, with lets kept only where they mean something (effects,
recursive closures).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.expr import (
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Var,
)
from ..ir.module import IRModule
from ..ir.visitor import free_vars, post_order
from ._util import (
    Rewriter,
    child_exprs,
    has_effect,
    make_lets,
    map_functions,
    module_effects,
    rebuild,
)
from .manager import Pass, PassContext, register_pass

_ATOMS = (Var, GlobalVar, Constant, Op, Constructor)


@register_pass
@dataclass
class ToANormalForm(Pass):
    """Bind every non-atomic sub-expression to a let variable (vars, globals, constants, ops
    and constructors stay inline). A node shared by several uses is bound once, in the
    innermost scope (function body, branch, match clause) that encloses all its uses.

    Shared *effectful* nodes are assumed not to be split across branches (frontends and
    the Gradient pass never build that).

    >>> print(ToANormalForm()(mod))   # let %x = ...; let %y = ...; %y
    """

    opt_level = 0

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return map_functions(mod, lambda gv, f: to_anf(f))


# Per node kind: for each child (child_exprs order), does that slot open a new scope?
_OPENED_SCOPES = {
    Function: lambda e: [True],
    If: lambda e: [False, True, True],
    Match: lambda e: [False] + [True] * len(e.clauses),
}


def _opened_scopes(node: Expr) -> list[bool]:
    f = _OPENED_SCOPES.get(type(node))
    return f(node) if f is not None else [False] * len(child_exprs(node))


def to_anf(func: Function) -> Function:
    """`func` in A-normal form."""
    # 1. Scopes: each node goes to the innermost scope enclosing all of its uses.
    parent: list[int] = [-1]  # scope 0 is the function body
    depth: list[int] = [0]
    slot_scope: dict[tuple[int, int], int] = {}
    where: dict[int, int] = {}
    order = post_order(func.body, child_exprs)
    uses: dict[int, int] = {}

    def lca(a: int, b: int) -> int:
        while depth[a] > depth[b]:
            a = parent[a]
        while depth[b] > depth[a]:
            b = parent[b]
        while a != b:
            a, b = parent[a], parent[b]
        return a

    where[id(func.body)] = 0
    for node in reversed(order):
        s = where.get(id(node), 0)
        kids = child_exprs(node)
        if not kids:
            continue
        for i, (c, opens) in enumerate(zip(kids, _opened_scopes(node))):
            cs = s
            if opens:
                cs = len(parent)
                parent.append(s)
                depth.append(depth[s] + 1)
                slot_scope[(id(node), i)] = cs
            uses[id(c)] = uses.get(id(c), 0) + 1
            prev = where.get(id(c))
            where[id(c)] = cs if prev is None else lca(prev, cs)

    # 2. Emit bindings in evaluation order.
    binds: list[list[tuple[Var, Expr]]] = [[] for _ in parent]
    atom: dict[int, Expr] = {}
    fresh: set[int] = set()  # variables this pass made
    VISIT, FINISH, BIND_LET = 0, 1, 2
    tasks: list[tuple[int, Expr]] = [(VISIT, func.body)]
    while tasks:
        kind, node = tasks.pop()
        if kind == VISIT:
            if id(node) in atom:
                continue
            if isinstance(node, _ATOMS):
                atom[id(node)] = node
                continue
            tasks.append((FINISH, node))
            if type(node) is Let:
                tasks.append((VISIT, node.body))
                tasks.append((BIND_LET, node))
                tasks.append((VISIT, node.value))
            else:
                tasks.extend((VISIT, c) for c in reversed(child_exprs(node)))
        elif kind == BIND_LET:
            s = where[id(node)]
            val = atom[id(node.value)]
            lst = binds[s]
            if (
                lst
                and lst[-1][0] is val
                and id(val) in fresh
                and uses.get(id(node.value)) == 1
                and where.get(id(node.value)) == s
            ):
                # The value was just bound to a variable of ours: bind it to the let's own.
                lst[-1] = (node.var, lst[-1][1])
                atom[id(node.value)] = node.var
            else:
                lst.append((node.var, val))
        else:  # FINISH
            if id(node) in atom:
                continue
            t = type(node)
            if t is Let:
                atom[id(node)] = atom[id(node.body)]
                continue
            kids = child_exprs(node)
            new_kids = []
            for i, c in enumerate(kids):
                cs = slot_scope.get((id(node), i))
                a = atom[id(c)]
                new_kids.append(a if cs is None else make_lets(binds[cs], a))
            new = rebuild(node, new_kids)
            v = Var("x", span=node.span)
            fresh.add(id(v))
            binds[where.get(id(node), 0)].append((v, new))
            atom[id(node)] = v
    body = make_lets(binds[0], atom[id(func.body)])
    return Function(func.params, body, func.ret_type, func.type_params, func.attrs, span=func.span)


@register_pass
@dataclass
class ToGraphNormalForm(Pass):
    """Replace let-bound variables by their values (a DAG: the value node is shared by all
    uses). Lets whose value has an effect, or is a function (closures may be recursive),
    stay, so the program means the same; so do lets whose variable a nested function uses
    (moving the value into the function would recompute it on every call, e.g. in a loop).

    >>> print(ToGraphNormalForm()(mod))   # %0 = f(%a); g(%0, %0)
    """

    opt_level = 0

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        calls_pure = not module_effects(mod)
        return map_functions(mod, lambda gv, f: to_gnf(f, calls_pure))


def to_gnf(func: Function, calls_pure: bool = False) -> Function:
    """`func` with pure let bindings substituted into their uses. Calls of functions count
    as pure only if `calls_pure` (the module has no effects anywhere)."""
    order = post_order(func, child_exprs)
    impure: set[int] = set()
    for n in order:
        if type(n) is Function:
            continue
        if has_effect(n, calls_pure):
            impure.add(id(n))
        elif any(id(c) in impure for c in child_exprs(n)):
            impure.add(id(n))
    captured: set[Var] = set()  # variables some nested function uses
    for n in order:
        if type(n) is Function and n is not func:
            captured.update(free_vars(n))
    inline = {
        n.var: n
        for n in order
        if type(n) is Let
        and type(n.value) is not Function
        and id(n.value) not in impure
        and (n.var not in captured or isinstance(n.value, (Var, Constant, GlobalVar)))
    }
    if not inline:
        return func

    class _Subst(Rewriter):
        def rewrite(self, orig, new):
            t = type(orig)
            if t is Var and orig in inline:
                return self.memo[inline[orig].value]
            if t is Let and orig.var in inline:
                return new.body
            return new

    return _Subst().mutate(func)  # type: ignore[return-value]


__all__ = ["ToANormalForm", "ToGraphNormalForm", "to_anf", "to_gnf"]
