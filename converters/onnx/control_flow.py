"""Control flow: If as a Relay If; Loop and Scan as recursive functions (as in the Relay
paper: a loop is a tail-recursive closure, `let %loop = fn(...) { if (...) { %loop(...) }
else { ... } }; %loop(init)`). Loop-carried values whose shape changes from one iteration to
the next are typed with `Any` dimensions; scan outputs grow along a new leading axis."""

from __future__ import annotations

import numpy as np

from converters.common import ConversionError
from relay_core.ir import Any, Call, Function, Let, TensorType, TupleType, Var
from relay_core.ir import If as RelayIf
from relay_core.ir import dtype as dt
from relay_core.ir.types import TypeCall

from .graph import wrap_captures
from .table import converter
from .util import scalar

I64 = TensorType((), "int64")
BOOL = TensorType((), "bool")


def generalize(a, b):
    """The least general type both `a` and `b` fit: differing dims become Any."""
    if a == b:
        return a
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        if a.dtype != b.dtype:
            raise ValueError(f"dtype changes from {a.dtype} to {b.dtype}")
        if len(a.shape) != len(b.shape):
            raise ValueError(f"rank changes from {len(a.shape)} to {len(b.shape)}")
        return TensorType(tuple(x if x == y else Any for x, y in zip(a.shape, b.shape)), a.dtype)
    if isinstance(a, TupleType) and isinstance(b, TupleType) and len(a.fields) == len(b.fields):
        return TupleType(tuple(generalize(x, y) for x, y in zip(a.fields, b.fields)))
    if isinstance(a, TypeCall) and isinstance(b, TypeCall) and a.func == b.func:
        return TypeCall(a.func, tuple(generalize(x, y) for x, y in zip(a.args, b.args)))
    raise ValueError(f"type changes from {a} to {b}")


def as_type(ctx, e, t):
    """`e` seen at the (more general) type `t`: dims that `t` leaves unknown are erased."""
    et = ctx.type_of(e)
    if et == t:
        return e
    if isinstance(t, TensorType):
        return ctx.call("dyn.reshape", e, ctx.call("shape_of", e, dtype="int64"))
    if isinstance(t, TupleType):
        return ctx.tuple([as_type(ctx, ctx.item(e, i), f) for i, f in enumerate(t.fields)])
    if isinstance(t, TypeCall):
        return ctx.call_prelude_cast(e, t)
    return e


def _scalar_bool(ctx, c):
    """A condition as a bool scalar (ONNX allows a one-element tensor)."""
    if ctx.dtype(c) != "bool":
        c = ctx.call("cast", c, dtype="bool")
    if ctx.shape_of(c) != ():
        c = ctx.call("reshape", c, newshape=())
    return c


def _scalar_i64(ctx, m):
    if ctx.dtype(m) != "int64":
        m = ctx.call("cast", m, dtype="int64")
    if ctx.shape_of(m) != ():
        m = ctx.call("reshape", m, newshape=())
    return m


@converter("If", 1)
def If(ctx, cond, *, then_branch, else_branch):
    c = ctx.value(cond)
    if c is not None and c.size == 1:
        # A constant condition (often a rank test in a function body): only the branch
        # taken is converted; the other may not even typecheck for these inputs.
        outs = ctx.branch(then_branch if bool(c.reshape(-1)[0]) else else_branch)
        return outs if len(outs) > 1 else outs[0]
    then_outs = ctx.branch(then_branch)
    else_outs = ctx.branch(else_branch)
    if len(then_outs) != len(else_outs):
        raise ctx.error(f"then_branch has {len(then_outs)} outputs, else_branch {len(else_outs)}")
    t = then_outs[0] if len(then_outs) == 1 else ctx.tuple(then_outs)
    e = else_outs[0] if len(else_outs) == 1 else ctx.tuple(else_outs)
    tt, et = ctx.type_of(t), ctx.type_of(e)
    if tt != et:
        try:
            g = generalize(tt, et)
        except ValueError as err:
            raise ctx.error(f"the branches' outputs differ: {err}") from None
        t, e = as_type(ctx, t, g), as_type(ctx, e, g)
    return RelayIf(_scalar_bool(ctx, cond), t, e, span=ctx.span)


def _unknown_dims(t):
    """`t` with tensor dims unknown (inside lists and options too)."""
    if isinstance(t, TensorType):
        return TensorType((Any,) * t.ndim, t.dtype)
    if isinstance(t, TypeCall):
        return TypeCall(t.func, tuple(_unknown_dims(a) for a in t.args))
    if isinstance(t, TupleType):
        return TupleType(tuple(_unknown_dims(f) for f in t.fields))
    return t


def _incomplete(t) -> bool:
    from relay_core.ir import IncompleteType

    return isinstance(t, TypeCall) and any(isinstance(a, IncompleteType) for a in t.args)


def _open(t):
    from relay_core.ir import IncompleteType

    if isinstance(t, TypeCall):
        return TypeCall(t.func, tuple(IncompleteType() for _ in t.args))
    return _unknown_dims(t)


def _stack_init(ctx, t: TensorType, what: str, declared=None):
    """An empty accumulator (0, *t.shape) for a scan output of element type `t` (the body's
    declared output type supplies dims the conversion could not pin down)."""
    if not t.is_static and declared is not None:
        from .dtypes import relay_type

        d = relay_type(declared.type, f"{what} body output {declared.name!r}")
        if isinstance(d, TensorType) and d.is_static and d.ndim == t.ndim:
            t = TensorType(d.shape, t.dtype)
    if not t.is_static:
        raise ctx.error(f"{what}: scan outputs need a static element shape, got {t.shape}")
    return ctx.const(np.zeros((0, *t.shape), dtype=dt.to_numpy(t.dtype)))


def _append(ctx, acc, x, front=False):
    x = ctx.call("expand_dims", x, axis=0)
    return ctx.call("concatenate", *((x, acc) if front else (acc, x)), axis=0)


# A Loop of at most this many iterations, all known at conversion time, is unrolled.
UNROLL_MAX = 16


def _unrolled(ctx, M, cond, v_initial, body) -> list | None:
    """The Loop's outputs with its body converted once per iteration, inline, when the trip
    count is a constant of at most UNROLL_MAX and the body's condition stays a constant (None
    otherwise). torch's exporter writes building a list as a Loop of one iteration (MViTv2: 51
    of them): inline, each value keeps its static shape, where a loop-carried value forgets its
    dims (an If of MViTv2 then could not tell its branches' ranks apart)."""
    m = ctx.value(M) if M is not None else None
    if m is None or m.size != 1 or not 0 < int(m.reshape(-1)[0]) <= UNROLL_MAX:
        return None
    c = ctx.value(cond) if cond is not None else np.array(True)
    if c is None or c.size != 1 or not bool(c.reshape(-1)[0]):
        return None
    n_v = len(v_initial)
    vals, scans = list(v_initial), None
    try:
        for i in range(int(m.reshape(-1)[0])):
            inputs = [ctx.const(np.array(i, np.int64)), ctx.const(np.array(True)), *vals]
            outs = ctx.branch(body, inputs)
            go = ctx.value(outs[0]) if len(outs) > n_v else None
            if go is None or go.size != 1:
                return None
            vals = list(outs[1 : 1 + n_v])
            step = [[x] for x in outs[1 + n_v :]]
            scans = step if scans is None else [a + b for a, b in zip(scans, step)]
            if not bool(go.reshape(-1)[0]):
                break
        stacked = [
            ctx.call("concatenate", *[ctx.call("expand_dims", x, axis=0) for x in xs], axis=0)
            for xs in scans
        ]
        for x in stacked:  # the scan outputs' items must agree in shape
            ctx.type_of(x)
    except ConversionError:
        return None  # converted as a loop, which reports what is wrong
    return vals + stacked


@converter("Loop", 1)
def Loop(ctx, M=None, cond=None, *v_initial, body):
    unrolled = _unrolled(ctx, M, cond, v_initial, body)
    if unrolled is not None:
        return unrolled
    n_v = len(v_initial)
    init = [_initial_type(ctx, v, body.input[2 + k]) for k, v in enumerate(v_initial)]
    carried = [t for t, _ in init]
    flexible = [f for _, f in init]
    # The body's outputs: cond, carried..., scan outputs...
    params, outs, caps, carried = _settle(ctx, body, [I64, BOOL], carried, 1, "Loop", flexible)
    i_var, c_var, v_vars = params[0], params[1], params[2:]
    scan_outs = outs[1 + n_v :]
    elem_types = [ctx.type_of(s) for s in scan_outs]
    acc_types = []
    for k, et in enumerate(elem_types):
        if not isinstance(et, TensorType):
            raise ctx.error(f"scan output {k} must be a tensor, got {et}")
        acc_types.append(TensorType((Any, *et.shape), et.dtype))
    accs = [Var(f"scan{k}", t) for k, t in enumerate(acc_types)]
    lets = []
    m_var = None
    if M is not None:
        m_var = Var("max_trip_count", I64)
        lets.append((m_var, _scalar_i64(ctx, M)))
    loop = Var("loop")
    go = c_var
    if m_var is not None:
        go = ctx.call("logical_and", c_var, ctx.call("less", i_var, m_var))
    cond_out = _scalar_bool(ctx, outs[0])
    # Arguments need no conversion: a parameter typed (?, 3) accepts a (5, 3) tensor.
    v_outs = list(outs[1 : 1 + n_v])
    next_args = [ctx.call("add", i_var, scalar(ctx, 1, "int64")), cond_out, *v_outs]
    next_args += [_append(ctx, a, s) for a, s in zip(accs, scan_outs)]
    step = wrap_captures(caps, Call(loop, tuple(next_args), span=ctx.span))
    done = ctx.tuple([*v_vars, *accs])
    fn = Function(
        (i_var, c_var, *v_vars, *accs), RelayIf(go, step, done, span=ctx.span), span=ctx.span
    )
    cond0 = _scalar_bool(ctx, cond) if cond is not None else ctx.const(np.array(True))
    init = list(v_initial)
    init += [
        _stack_init(ctx, et, "Loop", body.output[1 + n_v + k]) for k, et in enumerate(elem_types)
    ]
    result = Call(loop, (scalar(ctx, 0, "int64"), cond0, *init), span=ctx.span)
    expr = Let(loop, fn, result, span=ctx.span)
    for v, value in reversed(lets):
        expr = Let(v, value, expr, span=ctx.span)
    return [ctx.item(expr, i) for i in range(n_v + len(scan_outs))]


def _initial_type(ctx, v, body_input):
    """The type of a loop's initial value; an empty list of unknown element type takes the
    type the body declares for it."""
    from .dtypes import relay_type

    try:
        return ctx.type_of(v), False
    except ConversionError:
        t = relay_type(body_input.type, f"Loop body input {body_input.name!r}")
        if t is None:
            raise
        return t, True


def _settle(ctx, body, fixed, carried, offset, what, flexible=None):
    """Convert `body` (inputs: fixed..., carried...; outputs: offset values, carried...)
    until the carried types are stable: dims that change between iterations become Any.
    A `flexible` carried type (an initial value whose type was only guessed) takes the
    body's output type when the two disagree."""
    n = len(carried)
    flexible = list(flexible or [False] * n)
    for _ in range(8):
        try:
            params, outs, caps = ctx.body(body, fixed + carried)
            if len(outs) < offset + n:
                raise ctx.error(f"{what} body returns {len(outs)} values, needs {offset + n}")
            got_types = [ctx.type_of(o) for o in outs[offset : offset + n]]
        except ConversionError:
            if not any(flexible):
                raise
            # Let the body's uses decide the element types of guessed lists / options.
            carried = [_open(t) if f else t for t, f in zip(carried, flexible)]
            flexible = [False] * n
            continue
        new = []
        for i, (want, got) in enumerate(zip(carried, got_types)):
            try:
                new.append(generalize(want, got))
            except ValueError as err:
                if _incomplete(want):
                    new.append(_unknown_dims(got))
                    continue
                if not flexible[i]:
                    raise ctx.error(f"loop-carried value {i}: {err}") from None
                new.append(_unknown_dims(got))
                flexible[i] = False
        if new == carried:
            return params, outs, caps, carried
        carried = new
    raise ctx.error(f"{what}: the loop-carried types do not settle")


@converter("Scan", 9)
def Scan(
    ctx,
    *inputs,
    body,
    num_scan_inputs,
    scan_input_axes=None,
    scan_input_directions=None,
    scan_output_axes=None,
    scan_output_directions=None,
):
    n_scan = num_scan_inputs
    n_state = len(inputs) - n_scan
    states, xs = list(inputs[:n_state]), list(inputs[n_state:])
    in_axes = list(scan_input_axes or [0] * n_scan)
    in_dirs = list(scan_input_directions or [0] * n_scan)
    return _scan(ctx, body, states, xs, in_axes, in_dirs, scan_output_axes, scan_output_directions)


def _settle_scan(ctx, body, carried, elem_in):
    n = len(carried)
    for _ in range(8):
        params, outs, caps = ctx.body(body, carried + elem_in)
        try:
            new = [generalize(a, ctx.type_of(o)) for a, o in zip(carried, outs[:n])]
        except ValueError as err:
            raise ctx.error(f"Scan state: {err}") from None
        if new == carried:
            return params, outs, caps, carried
        carried = new
    raise ctx.error("Scan: the state types do not settle")


def _scan(ctx, body, states, xs, in_axes, in_dirs, out_axes, out_dirs):
    n_state = len(states)
    ranks = [ctx.ndim(x) for x in xs]
    in_axes = [a + r if a < 0 else a for a, r in zip(in_axes, ranks)]
    elem_in = []
    for x, a in zip(xs, in_axes):
        t = ctx.tensor_type(x)
        elem_in.append(TensorType(t.shape[:a] + t.shape[a + 1 :], t.dtype))
    # Sequence length: static when known, else read at run time.
    t0 = ctx.tensor_type(xs[0])
    length = t0.shape[in_axes[0]]
    n_expr = (
        scalar(ctx, length, "int64")
        if isinstance(length, int)
        else ctx.call(
            "take",
            ctx.call("shape_of", xs[0], dtype="int64"),
            scalar(ctx, in_axes[0], "int64"),
            axis=0,
        )
    )
    carried = [ctx.type_of(s) for s in states]
    # Body inputs: state..., scan elements...; settle the states with the elements fixed.
    params, outs, caps, carried = _settle_scan(ctx, body, carried, elem_in)
    s_vars, x_vars = params[:n_state], params[n_state:]
    scan_outs = outs[n_state:]
    n_out = len(scan_outs)
    out_axes = list(out_axes or [0] * n_out)
    out_dirs = list(out_dirs or [0] * n_out)
    elem_types = [ctx.type_of(s) for s in scan_outs]
    i_var = Var("i", I64)
    n_var = Var("n", I64)
    x_outer = [Var(f"scan_input{k}", ctx.type_of(x)) for k, x in enumerate(xs)]
    accs = [Var(f"scan{k}", TensorType((Any, *t.shape), t.dtype)) for k, t in enumerate(elem_types)]
    loop = Var("scan_loop")
    # Bind each body input element: x[i] (or x[n-1-i] in reverse) along its axis.
    binds = []
    for xv, xo, a, d in zip(x_vars, x_outer, in_axes, in_dirs):
        idx = (
            i_var
            if not d
            else ctx.call("subtract", ctx.call("subtract", n_var, i_var), scalar(ctx, 1, "int64"))
        )
        binds.append((xv, ctx.call("take", xo, idx, axis=a)))
    nxt = [ctx.call("add", i_var, scalar(ctx, 1, "int64"))]
    nxt += list(outs[:n_state])
    nxt += [_append(ctx, a, s, front=bool(d)) for a, s, d in zip(accs, scan_outs, out_dirs)]
    step = wrap_captures(caps, Call(loop, tuple(nxt), span=ctx.span))
    for v, value in reversed(binds):
        step = Let(v, value, step, span=ctx.span)
    done = ctx.tuple([*s_vars, *accs])
    cond = ctx.call("less", i_var, n_var)
    fn = Function((i_var, *s_vars, *accs), RelayIf(cond, step, done, span=ctx.span), span=ctx.span)
    init = [scalar(ctx, 0, "int64")]
    init += list(states)
    init += [
        _stack_init(ctx, t, "Scan", body.output[n_state + k]) for k, t in enumerate(elem_types)
    ]
    expr = Let(loop, fn, Call(loop, tuple(init), span=ctx.span), span=ctx.span)
    for v, value in reversed([(n_var, n_expr), *zip(x_outer, xs)]):
        expr = Let(v, value, expr, span=ctx.span)
    results = [ctx.item(expr, i) for i in range(n_state + n_out)]
    for k in range(n_out):
        r = results[n_state + k]
        a = out_axes[k]
        rank = len(elem_types[k].shape) + 1
        a = a + rank if a < 0 else a
        if a != 0:
            perm = list(range(1, a + 1)) + [0] + list(range(a + 1, rank))
            r = ctx.call("transpose", r, axes=perm)
        results[n_state + k] = r
    return results


@converter("Scan", 8)
def Scan_8(ctx, sequence_lens=None, *inputs, body, num_scan_inputs, directions=None):
    # Opset 8 has a leading batch axis: scan each batch entry along axis 1, then stack.
    if sequence_lens is not None:
        raise ctx.error("Scan-8 with sequence_lens is not supported")
    n_state = len(inputs) - num_scan_inputs
    batch = ctx.shape_of(inputs[0])[0]
    if not isinstance(batch, int):
        raise ctx.error("Scan-8 needs a static batch size")
    per_batch = []
    for b in range(batch):
        sl = [ctx.call("take", x, scalar(ctx, b, "int64"), axis=0) for x in inputs]
        per_batch.append(
            _scan(
                ctx,
                body,
                sl[:n_state],
                sl[n_state:],
                [0] * num_scan_inputs,
                list(directions or [0] * num_scan_inputs),
                None,
                None,
            )
        )
    outs = []
    for k in range(len(per_batch[0])):
        outs.append(ctx.call("stack", *[r[k] for r in per_batch], axis=0))
    return outs
