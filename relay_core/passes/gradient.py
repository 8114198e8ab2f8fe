"""Gradient: reverse-mode automatic differentiation as a source-to-source transformation.

`gradient(mod)` returns a module whose `@main` takes the same parameters as the original and
returns `(value, (d value / d param_0, d value / d param_1, ...))`. A tensor-valued (or
tuple-valued) main is seeded with ones, so the gradients are those of the sum of every
floating-point output element.

Two modes, as in the Relay paper:

- `higher_order` (default; gradient_ho.py) handles the whole language: let, if, tuples,
  closures, recursion (a loop from an ONNX `Loop` is a recursive function), refs and ADT
  values. Each floating-point tensor travels with a reference cell holding its adjoint, and a
  global `backprop` reference holds a closure that runs the backward pass accumulated so far.
  Every op call pushes a closure that adds its inputs' gradients into their cells, then calls
  the previous one. Closures and recursive functions need nothing special: whatever runs
  forward pushes its own backward step.
- `first_order` (this module) handles dataflow programs (ops, lets, tuples): the backward
  pass is written out as plain let bindings in reverse order, with no refs or closures, so
  every other pass and the backend optimise it like any forward program.

Gradient rules come from `OpDef.grad` (relay_core/ops/grads*.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import RelayError
from ..ir.expr import Call, Constant, Expr, Function, GlobalVar, Op, Tuple, TupleGetItem, Var, call
from ..ir.module import IRModule
from ..ir.types import TensorType, TupleType, Type
from ..ir.visitor import ExprFunctor
from ..ops.grads import GradCtx
from ..typing import infer_type
from ._util import is_float_tensor, let_chain, make_lets, type_of
from .manager import Pass, PassContext, register_pass
from .normal_form import to_anf


class GradientError(RelayError):
    """The program cannot be differentiated as asked (the message says why)."""


@register_pass
@dataclass
class Gradient(Pass):
    """Replace `@main` by its gradient program (see the module docstring).

    >>> gmod = Gradient(mode="first_order")(mod)
    >>> value, grads = relay_core.evaluate(gmod, x, w)
    """

    mode: str = "higher_order"
    opt_level = 0

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return gradient(mod, self.mode)


def gradient(mod: IRModule, mode: str = "higher_order") -> IRModule:
    """The module whose `@main` returns `(value, (gradient w.r.t. each parameter, ...))`.

    >>> g = relay_core.gradient(mod)                      # any program
    >>> g = relay_core.gradient(mod, mode="first_order")  # dataflow programs, no refs
    """
    if mode not in ("higher_order", "first_order"):
        raise ValueError(f"gradient mode must be 'higher_order' or 'first_order', not {mode!r}")
    if "main" not in mod:
        raise GradientError("gradient needs a module with a @main function")
    infer_type(mod)
    _check_main(mod["main"])
    mod = _expand_for_ad(mod)
    if mode == "first_order":
        out = first_order(mod)
    else:
        from .gradient_ho import higher_order

        out = higher_order(mod)
    return infer_type(out)


def _expand_for_ad(mod: IRModule) -> IRModule:
    """Ops without a gradient rule but with a decomposition are differentiated through it."""
    from ._util import map_functions
    from .simplify_inference import expand_decompositions

    for _ in range(4):
        out = map_functions(
            mod, lambda gv, f: expand_decompositions(f, only=lambda d: d.grad is None)
        )
        if out is mod:
            return mod
        mod = infer_type(out)
    return mod


def _check_main(main: Function) -> None:
    for p in main.params:
        if not _differentiable_type(type_of(p)):
            raise GradientError(
                f"gradient: parameter %{p.name_hint} has type {type_of(p)}; parameters must "
                "be tensors or tuples of tensors"
            )
    ret = type_of(main).ret_type
    if not _differentiable_type(ret):
        raise GradientError(
            f"gradient: @main returns {ret}; only tensors and tuples of tensors can be "
            "differentiated"
        )


def _differentiable_type(t: Type | None) -> bool:
    stack = [t]
    while stack:
        x = stack.pop()
        if isinstance(x, TupleType):
            stack.extend(x.fields)
        elif not isinstance(x, TensorType):
            return False
    return True


def has_float(t: Type | None) -> bool:
    """`t` contains a floating-point tensor (possibly inside tuples)."""
    stack = [t]
    while stack:
        x = stack.pop()
        if isinstance(x, TupleType):
            stack.extend(x.fields)
        elif is_float_tensor(x):
            return True
    return False


def ones_seed(e: Expr, t: Type) -> Expr:
    """The output gradient that seeds the backward pass: ones for float leaves."""
    if isinstance(t, TupleType):
        return Tuple(tuple(ones_seed(TupleGetItem(e, i), f) for i, f in enumerate(t.fields)))
    return call("ones_like" if is_float_tensor(t) else "zeros_like", e)


def zeros_of(e: Expr, t: Type) -> Expr:
    if isinstance(t, TupleType):
        return Tuple(tuple(zeros_of(TupleGetItem(e, i), f) for i, f in enumerate(t.fields)))
    return call("zeros_like", e)


def grad_rule(opdef, where: str = ""):
    if opdef.grad is None:
        raise GradientError(
            f"no gradient rule for operator {opdef.name}{where}: it is not differentiable "
            "here, or its rule is missing (add one in relay_core/ops/grads*.py)"
        )
    return opdef.grad


# ---------------------------------------------------------------------------------------------
# First-order mode.


class _Adjoints:
    """Gradient contributions per variable, by path into nested tuples."""

    def __init__(self):
        self.parts: dict[Var, list[tuple[tuple[int, ...], Expr]]] = {}

    def add(self, v: Var, g: Expr, path: tuple[int, ...] = ()) -> None:
        self.parts.setdefault(v, []).append((path, g))

    def has(self, v: Var) -> bool:
        return v in self.parts

    def total(self, v: Var, t: Type) -> Expr:
        return _sum_parts(v, t, self.parts.get(v, []))


def _sum_parts(base: Expr, t: Type, parts: list) -> Expr:
    if isinstance(t, TupleType):
        fields: list[list] = [[] for _ in t.fields]
        for path, g in parts:
            if path:
                fields[path[0]].append((path[1:], g))
            else:  # a whole-tuple gradient: split it into its fields
                for i in range(len(t.fields)):
                    fields[i].append(((), TupleGetItem(g, i)))
        return Tuple(
            tuple(_sum_parts(TupleGetItem(base, i), f, fields[i]) for i, f in enumerate(t.fields))
        )
    if not parts or not is_float_tensor(t):
        return call("zeros_like", base)
    total = parts[0][1]
    for _, g in parts[1:]:
        total = call("add", total, g)
    return total


class _Backprop(ExprFunctor):
    """`visit_<kind>(value, v, g, adj)`: for `let v = value`, add the adjoints of `value`'s
    operands given `g`, the adjoint of `v`. With `adj` None only checks that the kind is
    one first_order handles (ops, lets, tuples)."""

    def visit_var(self, value: Var, v, g, adj) -> None:
        if adj is not None:
            adj.add(value, g)

    def visit_constant(self, value: Constant, v, g, adj) -> None:
        pass

    def visit_tuple_getitem(self, value: TupleGetItem, v, g, adj) -> None:
        if adj is not None and type(value.tuple_value) is Var:
            adj.add(value.tuple_value, g, (value.index,))

    def visit_tuple(self, value: Tuple, v, g, adj) -> None:
        if adj is None:
            return
        for i, f in enumerate(value.fields):
            if type(f) is Var:
                adj.add(f, TupleGetItem(g, i))

    def visit_call(self, value: Call, v, g, adj) -> None:
        if type(value.op) is not Op:
            raise GradientError(
                "first_order gradient handles dataflow programs (ops, lets, tuples); this "
                "program calls a function: use mode='higher_order'"
            )
        if adj is None:
            return
        opdef = value.op.opdef
        arg_types = [type_of(a) for a in value.args]
        if not any(is_float_tensor(a) for a in arg_types):
            return
        rule = grad_rule(opdef)
        ctx = GradCtx(value, v, arg_types, type_of(v))
        grads = rule(value, g, ctx)
        for a, ga, at in zip(value.args, grads, arg_types):
            if ga is not None and type(a) is Var and has_float(at):
                adj.add(a, ga)

    def visit_default(self, value: Expr, v, g, adj) -> None:
        raise GradientError(
            f"first_order gradient handles dataflow programs (ops, lets, tuples); this "
            f"program has {type(value).__name__}: use mode='higher_order'"
        )


def first_order(mod: IRModule) -> IRModule:
    """Gradient of a dataflow `@main` as straight-line code (no refs, no closures)."""
    main = mod["main"]
    anf = to_anf(main)
    tmp = mod.copy()
    tmp.functions[GlobalVar("main")] = anf
    infer_type(tmp)
    anf = tmp["main"]
    binds, result = let_chain(anf.body)
    backprop = _Backprop()
    for _, value in binds:
        backprop.dispatch(value, None, None, None)  # check: raises on what it cannot handle
    if type(result) not in (Var, Constant):
        raise GradientError("first_order gradient: unexpected result expression")

    adj = _Adjoints()
    back: list[tuple[Var, Expr]] = []
    out_t = type_of(result)
    if type(result) is Var:
        adj.add(result, ones_seed(result, out_t))
    for v, value in reversed(binds):
        if not adj.has(v) or not has_float(type_of(v)):
            continue
        g = Var("g", type_of(v))
        back.append((g, adj.total(v, type_of(v))))
        backprop.dispatch(value, v, g, adj)
    grads = []
    for p in main.params:
        pv = p
        grads.append(adj.total(pv, type_of(pv)))
    body = make_lets(binds + back, Tuple((result, Tuple(tuple(grads)))))
    out = mod.copy()
    out.functions[GlobalVar("main")] = Function(
        anf.params, body, None, anf.type_params, anf.attrs, span=main.span
    )
    return out


__all__ = ["Gradient", "GradientError", "gradient", "first_order"]
