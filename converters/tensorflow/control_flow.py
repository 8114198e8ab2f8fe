"""Functional control flow: While -> a recursive global function, If / Case -> Relay `If`,
PartitionedCall -> a global function. Nothing is unrolled.

A While with loop variables v becomes

    def @while_loop(%v...) -> (types of v) {
      if (cond(%v...)) { @while_loop(body(%v...)...) } else { (%v...) }
    }

Loop variables the body passes through unchanged and whose initial value is a constant are not
parameters: the constant is used inside (weights of an RNN cell stay constants). A loop variable
whose shape changes across iterations gets `Any` in those dims (found by converting the body
until the parameter types are stable).
"""

from __future__ import annotations

from relay_core.ir import (
    Any,
    Call,
    Constant,
    Function,
    GlobalVar,
    If,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
)

from ..common import sanitize_name
from .table import TF
from .tensor_list import PendingList, elem_dims, list_type, materialize, remember
from .util import as_bool_scalar

_PASS_OPS = frozenset({"Identity", "Snapshot", "StopGradient"})


@TF.register("While", 1, "StatelessWhile")
def While(ctx, *inputs, cond="", body="", output_shapes=(), parallel_iterations=10):
    return convert_while(ctx, cond, body, list(inputs), list(output_shapes or ()))


@TF.register("If", 1, "StatelessIf")
def If_(ctx, cond, *inputs, then_branch="", else_branch="", Tout=()):
    c = as_bool_scalar(ctx, cond)
    outs = [ctx.driver.inline(f, list(inputs)) for f in (then_branch, else_branch)]
    return _select(ctx, c, outs[0], outs[1])


@TF.register("Case", 1, "StatelessCase")
def Case(ctx, branch_index, *inputs, branches=(), Tout=()):
    """Branch i for index i; the last branch for any index out of range (TF's default)."""
    outs = [ctx.driver.inline(f, list(inputs)) for f in branches]
    result = outs[-1]
    for i in range(len(outs) - 2, -1, -1):
        c = ctx.call("equal", branch_index, ctx.const(i, ctx.dtype(branch_index)))
        result = _select(ctx, as_bool_scalar(ctx, c), outs[i], result)
    return result


def _select(ctx, c, then_outs, else_outs):
    if not then_outs:
        return []
    for v in (*then_outs, *else_outs):
        if isinstance(v, PendingList):
            raise ctx.error("a TensorList with an unknown element shape cannot leave an If")
    if len(then_outs) == 1:
        return [If(c, then_outs[0], else_outs[0], span=ctx.span)]
    out = If(c, Tuple(tuple(then_outs)), Tuple(tuple(else_outs)), span=ctx.span)
    return [TupleGetItem(out, i, span=ctx.span) for i in range(len(then_outs))]


@TF.register("PartitionedCall", 1, "StatefulPartitionedCall")
def PartitionedCall(ctx, *args, f="", Tin=(), Tout=()):
    return call_function(ctx, f, list(args))


def call_function(ctx, fname: str, args: list) -> list:
    """A call of library function `fname` as a call of a global Relay function (converted once
    per argument types; constant arguments are used inside the function)."""
    drv = ctx.driver
    if any(isinstance(a, PendingList) for a in args):
        return drv.inline(fname, args)
    g = drv.function_graph(fname)
    key = (fname,) + tuple(
        ("c", id(a)) if isinstance(a, Constant) else ("t", ctx.type_of(a)) for a in args
    )
    cache = ctx.memo.setdefault("functions", {})
    entry = cache.get(key)
    if entry is None:
        params, bind = [], []
        for name, a in zip(g.args, args):
            if isinstance(a, Constant):
                bind.append(a)
            else:
                v = Var(sanitize_name(name), ctx.type_of(a))
                params.append(v)
                bind.append(v)
        saved = _save(ctx)
        try:
            outs = drv.inline(fname, bind)
        finally:
            _restore(ctx, saved)
        body = outs[0] if len(outs) == 1 else Tuple(tuple(outs))
        gv = GlobalVar(drv.unique(sanitize_name(fname)))
        drv.mod[gv] = Function(tuple(params), body, ctx.type_of(body), span=ctx.span)
        entry = cache[key] = (gv, len(outs))
    gv, n = entry
    call = Call(gv, tuple(a for a in args if not isinstance(a, Constant)), span=ctx.span)
    if n == 1:
        return [call]
    return [TupleGetItem(call, i, span=ctx.span) for i in range(n)]


# -- While ----------------------------------------------------------------------------------------
def _passthrough(g, i: int) -> bool:
    """True if the body returns its argument i unchanged (through identities)."""
    name = g.outputs[i]
    while True:
        node_name, _, idx = name.partition(":")
        node = g.by_name.get(node_name)
        if node is None or (idx not in ("", "0")):
            return False
        if node.op == "Placeholder":
            return node.name == g.args[i]
        if node.op not in _PASS_OPS:
            return False
        data = [x for x in node.input if not x.startswith("^")]
        if not data:
            return False
        name = data[0]


def _generalize(ctx, old: TensorType, new, what: str) -> TensorType:
    if not isinstance(new, TensorType):
        raise ctx.error(f"{what} is not a tensor: {new}")
    if new.dtype != old.dtype or new.ndim != old.ndim:
        raise ctx.error(f"{what} changes from {old} to {new} across iterations")
    dims = tuple(a if a is Any or a == b else Any for a, b in zip(old.shape, new.shape))
    return TensorType(dims, old.dtype)


def _initial_type(ctx, init, shape_hint):
    if isinstance(init, PendingList):
        raise ctx.error("internal: unresolved TensorList")
    if ctx.memo.get("list_elems", {}).get(init) is not None:
        return list_type(ctx, init)
    t = ctx.tensor_type(init)
    if shape_hint is not None and len(shape_hint) == t.ndim:
        # TF's shape invariants: None dims vary across iterations.
        return TensorType(
            tuple(Any if h is None else d for d, h in zip(t.shape, shape_hint)), t.dtype
        )
    return t


def _functions(ctx) -> set:
    return set(ctx.driver.mod.functions)


def _drop_functions_since(ctx, before: set) -> None:
    """Forget global functions made by a conversion whose result is thrown away."""
    mod = ctx.driver.mod
    gone = [gv for gv in mod.functions if gv not in before]
    for gv in gone:
        del mod.functions[gv]
    cache = ctx.memo.get("functions", {})
    for key in [k for k, (gv, _) in cache.items() if gv in gone]:
        del cache[key]


def _save(ctx):
    return ctx.node, ctx.node_name, ctx.node_op


def _restore(ctx, saved):
    ctx.node, ctx.node_name, ctx.node_op = saved


def _resolve_pending(ctx, body, inits, types_hint):
    """Give each PendingList loop variable a real list: probe the body once to see the type
    of what it writes into the list."""
    pend = [i for i, v in enumerate(inits) if isinstance(v, PendingList)]
    if not pend:
        return inits
    drv = ctx.driver
    bind = []
    for i, v in enumerate(inits):
        if isinstance(v, PendingList):
            bind.append(PendingList(v.n, v.dtype))
        elif isinstance(v, Constant):
            bind.append(v)
        else:
            bind.append(Var(f"probe{i}", _initial_type(ctx, v, types_hint[i])))
    saved, before = _save(ctx), _functions(ctx)
    try:
        drv.inline(body, bind)
    finally:
        _restore(ctx, saved)
        _drop_functions_since(ctx, before)  # the probe's own loops and calls
    out = list(inits)
    for i in pend:
        if bind[i].item_type is None:
            raise ctx.error(
                "a TensorList loop variable with an unknown element shape is never "
                "written by the loop"
            )
        out[i] = materialize(ctx, inits[i], bind[i].item_type)
    return out


def convert_while(ctx, cond: str, body: str, inits: list, shapes: list) -> list:
    drv = ctx.driver
    g = drv.function_graph(body)
    n = len(inits)
    if len(g.args) != n or len(g.outputs) != n:
        raise ctx.error(f"the While body {body} does not take and return {n} loop variables")
    hints = [shapes[i] if i < len(shapes) else None for i in range(n)]
    inits = _resolve_pending(ctx, body, inits, hints)
    fixed = [isinstance(v, Constant) and _passthrough(g, i) for i, v in enumerate(inits)]
    loop_idx = [i for i in range(n) if not fixed[i]]
    types = {i: _initial_type(ctx, inits[i], hints[i]) for i in loop_idx}
    names = {i: sanitize_name(g.args[i]) for i in loop_idx}
    span = ctx.span
    saved = _save(ctx)
    try:
        for _ in range(8):
            before = _functions(ctx)
            params = {i: Var(names[i], types[i]) for i in loop_idx}
            for i in loop_idx:
                if ctx.memo.get("list_elems", {}).get(inits[i]) is not None:
                    remember(ctx, params[i], elem_dims(ctx, inits[i]))
            bind = [params[i] if i in params else inits[i] for i in range(n)]
            c = drv.inline(cond, bind)
            if len(c) != 1:
                raise ctx.error(f"the While condition {cond} must return one value")
            outs = drv.inline(body, bind)
            new = {
                i: _generalize(
                    ctx, types[i], ctx.type_of(outs[i]), f"loop variable {i} ({g.args[i]})"
                )
                for i in loop_idx
            }
            if new == types:
                break
            types = new
            _drop_functions_since(ctx, before)  # nested loops of the discarded body
        else:
            raise ctx.error("the loop variables' types do not settle")
    finally:
        _restore(ctx, saved)
    base = sanitize_name(ctx.node_name or body)
    gv = GlobalVar(drv.unique(base if "while" in base.lower() else "while_" + base))
    ps = tuple(params[i] for i in loop_idx)
    ret = TupleType(tuple(types[i] for i in loop_idx))
    recur = Call(gv, tuple(outs[i] for i in loop_idx), span=span)
    test = as_bool_scalar(ctx, c[0])
    drv.mod[gv] = Function(ps, If(test, recur, Tuple(ps, span=span), span=span), ret, span=span)
    call = Call(gv, tuple(inits[i] for i in loop_idx), span=span)
    results = []
    for i in range(n):
        if fixed[i]:
            results.append(inits[i])
            continue
        r = TupleGetItem(call, loop_idx.index(i), span=span)
        if ctx.memo.get("list_elems", {}).get(inits[i]) is not None:
            remember(ctx, r, elem_dims(ctx, inits[i]))
        results.append(r)
    return results
