"""Higher-order reverse-mode AD (the Relay paper's transformation, with references).

Types are lifted: a floating-point tensor `T` becomes `(T, Ref[T])` — the value and the cell
accumulating its adjoint; tuples, functions, refs and ADT type arguments are lifted
componentwise; other tensors (ints, bools) stay as they are. Expressions are transformed
structurally (let, if, match, tuples, closures and calls keep their shape); each op call
becomes:

    let %v = %a.0;                       // forward inputs
    let %y = op(%v, ...);                // forward output
    let %r = (%y, ref(zeros_like(%y)));  // lifted output
    let %prev = !%bp;
    %bp := fn () {                       // one backward step
      let %g = !%r.1;
      %a.1 := !%a.1 + <grad rule for input a>(%g); ...
      %prev()
    };
    %r

Every global function `@f` gets a lifted twin `@f_ad` taking `%bp` as an extra parameter;
local closures capture `%bp` lexically. The new `@main` lifts the parameters, calls
`@main_ad`, seeds the output cells with ones, runs `(!%bp)()` and reads the parameters'
cells. Polymorphic functions work unchanged (a type variable lifts to itself). ADTs whose
constructors hold tensors of fixed types cannot be lifted and are refused with a clear error.
"""

from __future__ import annotations

from ..ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    call,
)
from ..ir.module import IRModule
from ..ir.types import FuncType, RefType, TensorType, TupleType, Type, TypeCall, free_type_vars
from ..ir.visitor import binders, method_table, post_order
from ..ops.grads import GradCtx
from ..typing import infer_type
from ._util import Rewriter, child_exprs, is_float_tensor, make_lets, type_of
from .gradient import GradientError, grad_rule, has_float
from .normal_form import to_anf

UNIT = TupleType(())
BP_TYPE = RefType(FuncType((), UNIT))


def lift_type(t: Type) -> Type:
    """The type of a lifted value: float tensors carry a cell for their adjoint."""
    if isinstance(t, TensorType):
        return TupleType((t, RefType(t))) if is_float_tensor(t) else t
    if isinstance(t, TupleType):
        return TupleType(tuple(lift_type(f) for f in t.fields))
    if isinstance(t, FuncType):
        return FuncType(
            tuple(lift_type(a) for a in t.arg_types), lift_type(t.ret_type), t.type_params
        )
    if isinstance(t, RefType):
        return RefType(lift_type(t.value))
    if isinstance(t, TypeCall):
        return TypeCall(t.func, tuple(lift_type(a) for a in t.args))
    return t


def lift_value(e: Expr, t: Type) -> Expr:
    """A forward value of type `t` with fresh zero adjoint cells."""
    if is_float_tensor(t):
        return Tuple((e, RefCreate(call("zeros_like", e))))
    if isinstance(t, TupleType):
        return Tuple(tuple(lift_value(TupleGetItem(e, i), f) for i, f in enumerate(t.fields)))
    return e


def unlift_value(e: Expr, t: Type) -> Expr:
    """The forward value of a lifted expression of (unlifted) type `t`."""
    if is_float_tensor(t):
        return TupleGetItem(e, 0)
    if isinstance(t, TupleType):
        return Tuple(tuple(unlift_value(TupleGetItem(e, i), f) for i, f in enumerate(t.fields)))
    return e


def read_grad(e: Expr, t: Type, fwd: Expr) -> Expr:
    """The adjoint accumulated in a lifted value (zeros for non-float leaves)."""
    if is_float_tensor(t):
        return RefRead(TupleGetItem(e, 1))
    if isinstance(t, TupleType):
        return Tuple(
            tuple(
                read_grad(TupleGetItem(e, i), f, TupleGetItem(fwd, i))
                for i, f in enumerate(t.fields)
            )
        )
    return call("zeros_like", fwd)


def _float_leaves(e: Expr, t: Type) -> list[Expr]:
    if is_float_tensor(t):
        return [e]
    if isinstance(t, TupleType):
        out = []
        for i, f in enumerate(t.fields):
            out.extend(_float_leaves(TupleGetItem(e, i), f))
        return out
    return []


def _accumulate(cell: Expr, g: Expr) -> Expr:
    return RefWrite(cell, call("add", RefRead(cell), g))


def _check_adts(mod: IRModule) -> None:
    for td in mod.type_definitions.values():
        for c in td.constructors:
            for t in c.inputs:
                if has_float(t) and not free_type_vars(t):
                    raise GradientError(
                        f"gradient: constructor {c.name} of {td.header.name} holds {t}; ADTs "
                        "whose fields are fixed float tensors cannot be differentiated "
                        "(make the field a type parameter)"
                    )


class _Transform(Rewriter):
    """Lifts one function body (in A-normal form, typed)."""

    def __init__(self, ad: dict[GlobalVar, GlobalVar], bp: Var, root: Expr):
        super().__init__()
        self.ad = ad
        self.bp = bp
        for n in post_order(root, child_exprs):
            for group in binders(n):
                for v in group:
                    if v not in self.binders:
                        nv = Var(v.name_hint, _lifted_annotation(v), span=v.span)
                        self.binders[v] = nv
                        self.memo[v] = nv

    def rewrite_constant(self, orig: Constant, new: Expr) -> Expr:
        return lift_value(orig, orig.type)

    def rewrite_global_var(self, orig: GlobalVar, new: Expr) -> Expr:
        return self._global_value(orig)

    def rewrite_call(self, orig: Call, new: Call) -> Expr:
        return _CALLEE[type(orig.op)](self, orig, new)

    def rewrite_function(self, orig: Function, new: Function) -> Expr:
        ret = lift_type(new.ret_type) if new.ret_type is not None else None
        return Function(new.params, new.body, ret, new.type_params, new.attrs, span=new.span)

    # A call, by its callee's kind.
    def callee_op(self, orig: Call, new: Call) -> Expr:
        return self._op_call(orig, new)

    def callee_global_var(self, orig: Call, new: Call) -> Expr:
        return Call(self.ad[orig.op], (*new.args, self.bp), span=orig.span)

    def callee_constructor(self, orig: Call, new: Call) -> Expr:
        return Call(orig.op, new.args, span=orig.span)

    def callee_default(self, orig: Call, new: Call) -> Expr:
        return new

    def _global_value(self, gv: GlobalVar) -> Expr:
        # A global used as a value: a closure over %bp that calls its lifted twin.
        ft = type_of(gv)
        if not isinstance(ft, FuncType):
            raise GradientError(f"gradient: cannot use @{gv.name_hint} as a value here")
        ps = tuple(Var("a", lift_type(a)) for a in ft.arg_types)
        return Function(ps, Call(self.ad[gv], (*ps, self.bp)), lift_type(ft.ret_type))

    def _op_call(self, orig: Call, new: Call) -> Expr:
        opdef = orig.op.opdef
        binds: list[tuple[Var, Expr]] = []
        vals: list[Expr] = []
        lifted_in: list[int] = []
        arg_types = [type_of(a) for a in orig.args]
        for i, (oa, na, at) in enumerate(zip(orig.args, new.args, arg_types)):
            if type(oa) is Constant or not has_float(at):
                vals.append(oa if type(oa) is Constant else na)
            elif is_float_tensor(at):
                v = Var("v", at)
                binds.append((v, TupleGetItem(na, 0)))
                vals.append(v)
                lifted_in.append(i)
            else:
                raise GradientError(f"gradient: {opdef.name} takes a tuple argument {at}")
        out_t = type_of(orig)
        fwd = Call(orig.op, tuple(vals), orig.attrs, orig.type_args, span=orig.span)
        y = Var("y", out_t)
        binds.append((y, fwd))
        res = Var("r", lift_type(out_t))
        binds.append((res, lift_value(y, out_t)))
        if lifted_in and has_float(out_t) and not opdef.stateful:
            rule = grad_rule(opdef)
            g = Var("g", out_t)
            ctx = GradCtx(fwd, y, arg_types, out_t)
            grads = rule(fwd, g, ctx)
            step: list[tuple[Var, Expr]] = [(g, read_grad(res, out_t, y))]
            for i in lifted_in:
                if grads[i] is not None:
                    step.append((Var("_"), _accumulate(TupleGetItem(new.args[i], 1), grads[i])))
            prev = Var("prev", FuncType((), UNIT))
            binds.append((prev, RefRead(self.bp)))
            closure = Function((), make_lets(step, Call(prev, ())), UNIT)
            binds.append((Var("_"), RefWrite(self.bp, closure)))
        return make_lets(binds, res)


_CALLEE = method_table(_Transform, "callee_")


def _lifted_annotation(v: Var) -> Type | None:
    t = type_of(v) or v.type_annotation
    return lift_type(t) if t is not None else None


def higher_order(mod: IRModule) -> IRModule:
    """Gradient of `@main` by the higher-order transformation (see the module docstring)."""
    _check_adts(mod)
    anf = mod.copy()
    for gv, f in mod.functions.items():
        anf.functions[gv] = to_anf(f)
    infer_type(anf)
    names = {g.name_hint for g in mod.functions}
    ad: dict[GlobalVar, GlobalVar] = {}
    for gv in anf.functions:
        n = gv.name_hint + "_ad"
        while n in names:
            n += "_"
        names.add(n)
        ad[gv] = GlobalVar(n)
    out = mod.copy()
    for gv, f in anf.functions.items():
        bp = Var("bp", BP_TYPE)
        tr = _Transform(ad, bp, f)
        body = tr.mutate(f.body)
        params = tuple(tr.binders[p] for p in f.params)
        ft = type_of(f)
        out.functions[ad[gv]] = Function(
            (*params, bp), body, lift_type(ft.ret_type), f.type_params, span=f.span
        )
    main = mod["main"]
    out.functions[GlobalVar("main")] = _wrapper(main, ad[GlobalVar("main")])
    return out


def _wrapper(main: Function, main_ad: GlobalVar) -> Function:
    params = tuple(Var(p.name_hint, type_of(p), span=p.span) for p in main.params)
    bp = Var("bp", BP_TYPE)
    binds: list[tuple[Var, Expr]] = [(bp, RefCreate(Function((), Tuple(()), UNIT)))]
    lifted = []
    for p in params:
        lp = Var(p.name_hint + "_ad", lift_type(p.type_annotation))
        binds.append((lp, lift_value(p, p.type_annotation)))
        lifted.append(lp)
    ret_t = type_of(main).ret_type
    r = Var("result", lift_type(ret_t))
    binds.append((r, Call(main_ad, (*lifted, bp))))
    for leaf in _float_leaves(r, ret_t):
        binds.append(
            (Var("_"), _accumulate(TupleGetItem(leaf, 1), call("ones_like", TupleGetItem(leaf, 0))))
        )
    binds.append((Var("_"), Call(RefRead(bp), ())))
    grads = tuple(read_grad(lp, p.type_annotation, p) for lp, p in zip(lifted, params))
    body = make_lets(binds, Tuple((unlift_value(r, ret_t), Tuple(grads))))
    return Function(params, body, None, main.type_params, main.attrs, span=main.span)


__all__ = ["higher_order", "lift_type", "lift_value", "unlift_value"]
