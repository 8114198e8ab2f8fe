"""Helpers shared by the passes: a binder-aware rewriter, let chains, effects, typing.

Everything here is iterative (explicit stacks), so 10,000-node programs are fine.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable

from ..ir import dtype as dt
from ..ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    Let,
    Op,
    RefCreate,
    RefRead,
    RefWrite,
    Var,
)
from ..ir.module import IRModule
from ..ir.types import TensorType, Type
from ..ir.visitor import binders, children, post_order
from ..typing.infer import ensure_typed, type_bytes  # noqa: F401  (they live with the types)

# ---------------------------------------------------------------------------------------------
# Small predicates.


def op_name(e: Expr) -> str | None:
    """The operator's name when `e` is a call of a primitive op, else None."""
    if type(e) is Call and type(e.op) is Op:
        return e.op.name
    return None


def opdef_of(e: Expr):
    if type(e) is Call and type(e.op) is Op:
        return e.op.opdef
    return None


# Attributes of elementwise ops that hold scalars or dtypes (not an axis, a shape or a layout).
_SCALAR_ATTRS = frozenset(
    """dtype out_dtype saturate a_min a_max alpha beta gamma approximate bias lambd threshold
    keys values default pattern""".split()
)


def is_layout_free(e: Expr) -> bool:
    """A call of an elementwise or broadcast op (its registry pattern; no data-dependent shape,
    no state) whose attributes are scalars: each output element comes from the same element of
    its (broadcast) inputs whatever their shape or layout, so a reshape or transpose of all its
    tensor inputs can move to its output (SinkReshape, ChannelsFirst)."""
    from ..ops.registry import OpPattern, attrs_to_dict

    od = opdef_of(e)
    if od is None or od.pattern not in (OpPattern.ELEMWISE, OpPattern.BROADCAST):
        return False
    if od.data_dependent_shape or od.stateful:
        return False
    return set(attrs_to_dict(e.attrs)) <= _SCALAR_ATTRS


def type_of(e: Expr) -> Type | None:
    """The checked type if inference has run on `e`, else None (constants know theirs)."""
    t = e._checked_type
    if t is None and type(e) is Constant:
        return e.type
    return t


def is_float_tensor(t: Type | None) -> bool:
    return isinstance(t, TensorType) and dt.is_float(t.dtype)


# ---------------------------------------------------------------------------------------------
# Fresh names.

_counter = itertools.count()


def fresh_var(name: str, type_annotation: Type | None = None) -> Var:
    return Var(name, type_annotation)


def fresh_global(mod: IRModule, base: str) -> GlobalVar:
    """A GlobalVar named `base`, `base_1`, ... that `mod` does not use yet."""
    names = {g.name_hint for g in mod.functions}
    if base not in names:
        return GlobalVar(base)
    for i in itertools.count(1):
        n = f"{base}_{i}"
        if n not in names:
            return GlobalVar(n)
    raise AssertionError("unreachable")


# ---------------------------------------------------------------------------------------------
# Let chains.


def let_chain(e: Expr) -> tuple[list[tuple[Var, Expr]], Expr]:
    """`let a = x; let b = y; body` as ([(a, x), (b, y)], body)."""
    binds = []
    while type(e) is Let:
        binds.append((e.var, e.value))
        e = e.body
    return binds, e


def make_lets(binds: Iterable[tuple[Var, Expr]], body: Expr) -> Expr:
    """Nest `binds` around `body` (the first binding outermost)."""
    for v, val in reversed(list(binds)):
        body = Let(v, val, body)
    return body


# The binder-aware rewriter is ir.visitor's (one traversal framework); re-exported for the passes.
from ..ir.visitor import Rewriter, child_exprs, rebuild  # noqa: E402


def copy_fresh(e: Expr, subst: dict[Var, Expr] | None = None) -> Expr:
    """A copy of `e` with every binder replaced by a fresh Var (alpha-renaming), and free
    variables replaced per `subst`. Used by inlining so that one body can appear twice."""
    fresh: dict[Var, Var] = {}
    for node in post_order(e):
        for group in binders(node):
            for v in group:
                if v not in fresh:
                    fresh[v] = Var(v.name_hint, v.type_annotation, span=v.span)
    r = Rewriter()
    r.binders = fresh
    r.memo.update(fresh)
    if subst:
        r.memo.update(subst)
    return r.mutate(e)


# ---------------------------------------------------------------------------------------------
# Effects.


def _always(e: Expr) -> bool:
    return True


# Per node kind: does evaluating it read or write state?
_EFFECT = {
    RefCreate: _always,
    RefRead: _always,
    RefWrite: _always,
    Call: lambda e: type(e.op) is Op and e.op.opdef.stateful,
}


def is_effect_node(e: Expr) -> bool:
    """Nodes whose evaluation reads or writes state: refs and stateful ops."""
    f = _EFFECT.get(type(e))
    return f is not None and f(e)


def has_effect(e: Expr, calls_pure: bool) -> bool:
    """Evaluating `e` itself (not its operands) may have an effect: refs, stateful ops, and
    calls of functions unless `calls_pure` (the module has no effects at all)."""
    if is_effect_node(e):
        return True
    return not calls_pure and type(e) is Call and type(e.op) is not Op


def module_effects(mod: IRModule) -> bool:
    """True when any function of `mod` uses refs or stateful ops."""
    for _, f in mod.functions.items():
        for n in post_order(f):
            if is_effect_node(n):
                return True
    return False


def is_pure(e: Expr, calls_pure: bool) -> bool:
    """Evaluating `e` has no effect. Calls of functions count as pure only if `calls_pure`
    (the caller knows the module has no effects at all)."""
    for n in post_order(e, lambda x: () if type(x) is Function else children(x)):
        if has_effect(n, calls_pure):
            return False
    return True


# ---------------------------------------------------------------------------------------------
# Typing.


def use_counts(func: Expr) -> Counter:
    """How many times each node of `func` is an operand (identity-keyed: a node read by two
    consumers counts 2); passes that move work along single-use chains ask it."""
    uses: Counter = Counter()
    for n in post_order(func, child_exprs):
        for c in child_exprs(n):
            uses[c] += 1
    return uses


def map_functions(mod: IRModule, fn) -> IRModule:
    """Apply `fn(gv, func) -> func` to every global; the same module when nothing changed."""
    funcs = {}
    changed = False
    for gv, f in mod.functions.items():
        nf = fn(gv, f)
        changed |= nf is not f
        funcs[gv] = nf
    return mod.with_functions(funcs) if changed else mod


__all__ = [
    "Rewriter",
    "child_exprs",
    "use_counts",
    "copy_fresh",
    "ensure_typed",
    "fresh_global",
    "fresh_var",
    "has_effect",
    "is_effect_node",
    "is_float_tensor",
    "is_pure",
    "let_chain",
    "make_lets",
    "map_functions",
    "module_effects",
    "op_name",
    "opdef_of",
    "rebuild",
    "type_bytes",
    "type_of",
]
