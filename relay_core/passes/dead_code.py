"""DeadCodeElimination: drop unused let bindings (and, optionally, unreachable globals)."""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.expr import Expr, Function, GlobalVar, Let, Var
from ..ir.module import IRModule
from ..ir.visitor import post_order
from ._util import Rewriter, child_exprs, has_effect, map_functions, module_effects
from .manager import Pass, PassContext, register_pass


@register_pass
@dataclass
class DeadCodeElimination(Pass):
    """Remove `let %x = v; body` when `%x` is unused in `body` and evaluating `v` has no
    effect (no refs, no stateful ops; calls of functions count as pure only when the module
    uses no effects at all). Dead bindings cascade: removing one can make others dead.

    `remove_unused_functions`: also drop global functions not reachable from `@main`.

    >>> mod = DeadCodeElimination(remove_unused_functions=True)(mod)
    """

    remove_unused_functions: bool = False
    opt_level = 1

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        calls_pure = not module_effects(mod)
        mod = map_functions(mod, lambda gv, f: eliminate(f, calls_pure))
        if self.remove_unused_functions and "main" in mod:
            keep = reachable_globals(mod, [mod.get_global_var("main")])
            funcs = {g: f for g, f in mod.functions.items() if g in keep}
            if len(funcs) != len(mod.functions):
                mod = mod.with_functions(funcs)
        return mod


def reachable_globals(mod: IRModule, roots: list[GlobalVar]) -> set[GlobalVar]:
    """Globals reachable from `roots` through references in function bodies."""
    seen = set(roots)
    stack = list(roots)
    while stack:
        g = stack.pop()
        f = mod.functions.get(g)
        if f is None:
            continue
        for n in post_order(f):
            if type(n) is GlobalVar and n not in seen:
                seen.add(n)
                stack.append(n)
    return seen


def eliminate(func: Expr, calls_pure: bool) -> Expr:
    """`func` without dead let bindings."""
    order = post_order(func, child_exprs)
    rc: dict[int, int] = {}  # id(node) -> number of references from live parents
    for n in order:
        for c in child_exprs(n):
            rc[id(c)] = rc.get(id(c), 0) + 1
    impure: set[int] = set()
    for n in order:
        if type(n) is Function:
            continue  # making a closure has no effect
        if has_effect(n, calls_pure):
            impure.add(id(n))
            continue
        if any(id(c) in impure for c in child_exprs(n)):
            impure.add(id(n))

    dead: set[int] = set()
    for n in order:
        if type(n) is not Let or id(n.value) in impure:
            continue
        uses = rc.get(id(n.var), 0)
        if uses and type(n.value) is Function:
            uses -= _uses_inside(n.value, n.var)  # a recursive closure refers to itself
        if uses == 0:
            dead.add(id(n))
            _release(n.value, rc)
    if not dead:
        return func

    class _Drop(Rewriter):
        def rewrite(self, orig, new):
            return new.body if id(orig) in dead else new

    return _Drop().mutate(func)


def _uses_inside(e: Expr, v: Var) -> int:
    n = 0
    for node in post_order(e, child_exprs):
        n += sum(1 for c in child_exprs(node) if c is v)
    return n


def _release(e: Expr, rc: dict[int, int]) -> None:
    # One reference to `e` is gone; nodes that lose their last reference release their children.
    stack = [e]
    while stack:
        x = stack.pop()
        k = id(x)
        rc[k] = rc.get(k, 1) - 1
        if rc[k] == 0:
            stack.extend(child_exprs(x))
