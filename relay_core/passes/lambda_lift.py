"""LambdaLift: every local function becomes a global function.

Design (how closures are represented after lifting):

- A local function used only in call position (`let %f = fn(%x) {..}; %f(%a)`, recursive or
  not) becomes `@g = fn(<free vars>, %x) {..}`; each call `%f(%a)` becomes
  `@g(<free vars>, %a)`. No closure is built at all.
- A local function that escapes (returned, stored in a tuple, passed as an argument) becomes a
  *closure constructor* `@g = fn(<free vars>) { fn(%x) {..} }` whose inner function carries
  the attribute `Closure=1`; where the closure was created there is now the partial
  application `@g(<free vars>)`, a value holding the captured variables (the closure record).
  Without free variables it is simply `@g = fn(%x) {..}`, referenced as `@g`.
- References of a recursive local function to itself become the same call / constructor.

Afterwards every function literal is a global, a fused `Primitive` group, or the `Closure`
body of a closure constructor, whose free variables are exactly the constructor's params.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.expr import Call, Expr, Function, GlobalVar, Let, Var
from ..ir.module import IRModule
from ..ir.visitor import free_vars, post_order
from ._util import Rewriter, child_exprs, ensure_typed, fresh_global, type_of
from .manager import Pass, PassContext, register_pass


@register_pass
@dataclass
class LambdaLift(Pass):
    """Turn local functions (closures) into global functions that take their free variables
    (see the module docstring for how escaping closures are represented).

    >>> mod = LambdaLift()(mod)      # let %f = fn(..) {..} becomes @main_f
    """

    opt_level = 0

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        mod = ensure_typed(mod)
        out = mod.copy()
        for gv, f in list(mod.functions.items()):
            out.functions[gv] = _Lifter(out, gv.name_hint).lift(f)
        return out


def _skip(f: Function, root: Function) -> bool:
    return f is root or bool(f.attr("Primitive")) or (bool(f.attr("Closure")) and root.body is f)


def _annotated(v: Var) -> Var:
    t = v.type_annotation or type_of(v)
    return Var(v.name_hint, t, span=v.span)


class _Info:
    __slots__ = ("gv", "fv", "direct", "var")

    def __init__(self, gv, var, direct):
        self.gv: GlobalVar = gv
        self.var: Var | None = var
        self.direct: bool = direct
        self.fv: list[Var] = []


class _Lifter:
    def __init__(self, mod: IRModule, prefix: str):
        self.mod = mod
        self.prefix = prefix

    def lift(self, root: Function) -> Function:
        order = post_order(root, child_exprs)
        funcs = [n for n in order if type(n) is Function and not _skip(n, root)]
        if not funcs:
            return root
        # How is each let-bound function used: only called, or as a value?
        uses: dict[Var, int] = {}
        calls: dict[Var, int] = {}
        for n in order:
            kids = child_exprs(n)
            for c in kids:
                if type(c) is Var:
                    uses[c] = uses.get(c, 0) + 1
            if type(n) is Call and type(n.op) is Var:
                calls[n.op] = calls.get(n.op, 0) + 1
        let_of_fn = {id(n.value): n for n in order if type(n) is Let and type(n.value) is Function}
        info: dict[int, _Info] = {}
        by_var: dict[Var, _Info] = {}
        for f in funcs:
            let = let_of_fn.get(id(f))
            v = let.var if let is not None else None
            direct = v is not None and uses.get(v, 0) == calls.get(v, 0)
            name = f"{self.prefix}_{v.name_hint if v is not None else 'lambda'}"
            gv = fresh_global(self.mod, name)
            self.mod.functions[gv] = f  # reserve the name
            i = info[id(f)] = _Info(gv, v, direct)
            if v is not None:
                by_var[v] = i
        # Free variables, with lifted functions' variables replaced by *their* free variables.
        raw = {id(f): [x for x in free_vars(f) if x is not info[id(f)].var] for f in funcs}
        for f in funcs:
            info[id(f)].fv = list(raw[id(f)])
        changed = True
        while changed:
            changed = False
            for f in funcs:
                i = info[id(f)]
                out: list[Var] = []
                for x in raw[id(f)]:
                    j = by_var.get(x)
                    for y in j.fv if j is not None else [x]:
                        if y not in out and y is not i.var:
                            out.append(y)
                if out != i.fv:
                    i.fv, changed = out, True

        lifter = self

        class _Lift(Rewriter):
            def rewrite_function(self, orig, new):
                if id(orig) in info:
                    return lifter.make_global(info[id(orig)], orig, new)
                return new

            def rewrite_call(self, orig, new):
                if type(orig.op) is Var:
                    i = by_var.get(orig.op)
                    if i is not None and i.direct:
                        return Call(i.gv, (*i.fv, *new.args), span=orig.span)
                return new

            def rewrite_var(self, orig, new):
                i = by_var.get(orig)
                if i is not None and not i.direct:
                    return Call(i.gv, tuple(i.fv), span=orig.span) if i.fv else i.gv
                return new

            def rewrite_let(self, orig, new):
                if orig.var in by_var:
                    return new.body  # every use now refers to the global
                return new

        return _Lift().mutate(root)  # type: ignore[return-value]

    def make_global(self, i: _Info, orig: Function, new: Function) -> Expr:
        fv_params = [_annotated(v) for v in i.fv]
        own = [_annotated(p) for p in new.params]
        sub = Rewriter()
        sub.memo.update(zip(i.fv, fv_params))
        sub.memo.update(zip(new.params, own))
        body = sub.mutate(new.body)
        ret = new.ret_type or _ret_type(orig)
        if i.direct or not i.fv:
            g = Function((*fv_params, *own), body, ret, new.type_params, _attrs(new), span=new.span)
            self.mod.functions[i.gv] = g
            if i.direct:
                return new  # the let that bound it disappears
            return i.gv
        inner = Function(tuple(own), body, ret, new.type_params, span=new.span).with_attr(
            "Closure", 1
        )
        self.mod.functions[i.gv] = Function(tuple(fv_params), inner, None, span=new.span)
        return Call(i.gv, tuple(i.fv), span=new.span)


def _ret_type(f: Function):
    t = type_of(f)
    return getattr(t, "ret_type", None) if t is not None else None


def _attrs(f: Function):
    return dict(f.attrs) if f.attrs else None


__all__ = ["LambdaLift"]
