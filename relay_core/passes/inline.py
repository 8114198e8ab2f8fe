"""Inline: replace calls of small or single-use global functions by their bodies."""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.expr import Call, Expr, Function, GlobalVar
from ..ir.module import IRModule
from ..ir.visitor import post_order
from ._util import Rewriter, copy_fresh, make_lets
from .manager import Pass, PassContext, register_pass


@register_pass
@dataclass
class Inline(Pass):
    """Inline global functions marked `Inline=1`, and (with `called_once`) those called from
    exactly one place and never used as a value. Recursive functions (any cycle in the call
    graph) are never inlined; `@main` is never removed. A call `@f(%a, %b)` becomes
    `let %x = %a; let %y = %b; <body of @f, renamed>`. Globals left unreferenced after
    inlining are dropped.

    >>> mod = Inline(called_once=True)(mod)
    """

    called_once: bool = True
    opt_level = 1

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        graph = call_graph(mod)
        recursive = _recursive(graph)
        call_sites: dict[GlobalVar, int] = {}
        value_uses: dict[GlobalVar, int] = {}
        for _, f in mod.functions.items():
            for n in post_order(f):
                if type(n) is Call and type(n.op) is GlobalVar:
                    call_sites[n.op] = call_sites.get(n.op, 0) + 1
                for c in _kids(n):
                    if type(c) is GlobalVar and not (type(n) is Call and c is n.op):
                        value_uses[c] = value_uses.get(c, 0) + 1
        targets = set()
        for gv, f in mod.functions.items():
            if gv.name_hint == "main" or gv in recursive or f.attr("Primitive"):
                continue
            if f.attr("Inline") or (
                self.called_once and call_sites.get(gv, 0) == 1 and not value_uses.get(gv)
            ):
                targets.add(gv)
        if not targets:
            return mod
        # Callees first, so that a body is fully inlined before it is copied.
        done: dict[GlobalVar, Function] = {}
        for gv in _post_order_calls(graph, list(mod.functions)):
            f = mod.functions[gv]
            done[gv] = _inline_calls(f, targets, done)
        keep = {}
        for gv, f in done.items():
            if gv in targets and not _referenced(gv, done, targets):
                continue
            keep[gv] = f
        return mod.with_functions({gv: keep[gv] for gv in mod.functions if gv in keep})


def _kids(n: Expr):
    from ..ir.visitor import children

    return children(n)


def call_graph(mod: IRModule) -> dict[GlobalVar, set[GlobalVar]]:
    """For each global, the globals its body refers to."""
    out = {}
    for gv, f in mod.functions.items():
        out[gv] = {n for n in post_order(f) if type(n) is GlobalVar and n in mod.functions}
    return out


def _recursive(graph) -> set[GlobalVar]:
    """Globals on a cycle of the call graph (Tarjan's SCCs, iteratively)."""
    index: dict = {}
    low: dict = {}
    on: set = set()
    stack: list = []
    out: set = set()
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start], key=lambda g: g.name_hint)))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ()), key=lambda g: g.name_hint))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w is v or w == v:
                        break
                if len(comp) > 1 or v in graph.get(v, ()):
                    out.update(comp)
    return out


def _post_order_calls(graph, roots) -> list[GlobalVar]:
    seen: set = set()
    order: list = []
    for r in roots:
        if r in seen:
            continue
        stack = [(r, False)]
        while stack:
            g, done = stack.pop()
            if done:
                order.append(g)
                continue
            if g in seen:
                continue
            seen.add(g)
            stack.append((g, True))
            stack.extend((c, False) for c in graph.get(g, ()) if c not in seen)
    return order


def _inline_calls(f: Function, targets: set, done: dict) -> Function:
    class _Inline(Rewriter):
        def rewrite(self, orig, new):
            if type(new) is Call and type(new.op) is GlobalVar and new.op in targets:
                callee = done.get(new.op)
                if callee is None or len(callee.params) != len(new.args):
                    return new
                copy = copy_fresh(callee)
                return make_lets(zip(copy.params, new.args), copy.body)
            return new

    return _Inline().mutate(f)  # type: ignore[return-value]


def _referenced(gv: GlobalVar, funcs: dict, targets: set) -> bool:
    for g, f in funcs.items():
        if g == gv:
            continue
        for n in post_order(f):
            if type(n) is GlobalVar and n == gv:
                return True
    return False
