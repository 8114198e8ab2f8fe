"""Values a closure shares with its enclosing scope are computed once, outside it.

The VM emitter evaluates a dataflow node at its first use within a region, and a closure's body
is a function of its own: a node that the enclosing scope computes *and* a closure's body reads
(not through a variable: graph form) was computed again inside the closure, at every call. An
ONNX Loop whose body reads an outer tensor is such a closure, called once per iteration:
Mask R-CNN's mask-pasting loop read the kept detections, so every one of its 100 iterations ran
the detector's non-maximum suppression again (minutes instead of a second).

Like TVM's ToANormalForm, which binds a node in the scope that encloses all of its uses, each
such node is let-bound where the closure is defined and the closure captures the variable.
Nodes only the closure reads stay inside it (they may depend on whether it runs).
"""

from __future__ import annotations

from ..ir.expr import Constant, Function, GlobalVar, Let, Op, Var
from ..ir.visitor import Rewriter, child_exprs, post_order

_ATOMS = (Var, Constant, Op, GlobalVar)


def _is_closure(e) -> bool:
    return type(e) is Function and not e.attr("Primitive")


def _atomic(e) -> bool:
    return isinstance(e, _ATOMS) or type(e) is Function or type(e).__name__ == "Constructor"


def hoist_shared(body):
    """`body` with the nodes each outermost closure in it shares with the rest of `body`
    let-bound at the closure's definition; closures nested in a closure are handled within its
    body (a call per nesting level of closures, not per node). Returns `body` itself when
    nothing is shared."""
    outside: set[int] = set()  # the scope's nodes outside any closure
    closures = []
    for n in post_order(body, lambda x: () if _is_closure(x) else child_exprs(x)):
        if _is_closure(n):
            closures.append(n)
        else:
            outside.add(id(n))
    replaced: dict = {}
    for f in closures:
        shared, seen = [], set()
        stack = [f.body]  # pre-order: an outermost shared node covers its subtree
        while stack:
            n = stack.pop()
            if id(n) in seen:
                continue
            seen.add(id(n))
            if id(n) in outside and not _atomic(n):
                shared.append(n)
            elif not _is_closure(n):
                stack.extend(child_exprs(n))
        new_body = f.body
        fresh = []
        if shared:
            r = Rewriter()
            for k, n in enumerate(shared):
                v = Var(f"shared{k}", n.checked_type if n.has_type else None)
                r.memo[n] = v
                fresh.append((v, n))
            new_body = r.mutate(f.body)
        new_body = hoist_shared(new_body)  # closures inside this one
        if new_body is not f.body:
            g = Function(f.params, new_body, f.ret_type, f.type_params, f.attrs)
            replaced[f] = (g, fresh)
    if not replaced:
        return body
    return _Place(replaced).mutate(body)


class _Place(Rewriter):
    """Puts the rewritten closures in place, the shared nodes' lets before each: before the
    `let` that binds a closure (a recursive closure must stay that let's value: the emitter
    makes it refer to itself), else around the closure itself."""

    def __init__(self, replaced: dict):
        super().__init__()
        self.replaced = replaced
        for f, (g, _) in replaced.items():
            self.memo[f] = g

    def rewrite(self, orig, new):
        if type(orig) is not Let or orig.value not in self.replaced:
            return new
        for v, n in reversed(self.replaced[orig.value][1]):
            new = Let(v, n, new)
        return new

    def mutate(self, root):
        # closures that are not a let's value get their lets around themselves
        bound = {id(n.value) for n in post_order(root) if type(n) is Let}
        for f, (g, fresh) in self.replaced.items():
            if id(f) not in bound:
                for v, n in reversed(fresh):
                    g = Let(v, n, g)
                self.memo[f] = g
        return super().mutate(root)
