"""Recurrent layers (LSTM, GRU, Elman RNN) as recursive Relay functions over time steps.

The input projection of every step is one nn.dense over the whole sequence (with both biases
where the cell only adds them, as the ONNX LSTM / RNN fold B). A known sequence of at most
UNROLL_MAX_STEPS steps is unrolled into a static graph, as the ONNX converter does for the same
layers (the backend fuses each step's elementwise work and runs no loop); a longer or symbolic
one is a tail-recursive local function `%loop(t, h[, c], ys)` that stops at the sequence length,
so the program does not grow with it.
"""

from __future__ import annotations

from relay_core.ir import Any, Call, Expr, Function, FuncType, If, Let, TensorType, Tuple, TupleType
from relay_core.ir import Var as RVar

from ..common import RNN_UNROLL_MAX_STEPS as UNROLL_MAX_STEPS
from ..common import gate_slices
from .table import aten


def _cell_lstm(ctx, xt, state, w_hh, b_hh, hidden):
    h, c = state
    g = ctx.call("add", xt, _hidden_proj(ctx, h, w_hh, b_hh))
    i, f, gg, o = gate_slices(ctx, g, 4, hidden)
    c2 = ctx.call(
        "add",
        ctx.call("multiply", ctx.call("sigmoid", f), c),
        ctx.call("multiply", ctx.call("sigmoid", i), ctx.call("tanh", gg)),
    )
    h2 = ctx.call("multiply", ctx.call("sigmoid", o), ctx.call("tanh", c2))
    return h2, (h2, c2)


def _cell_gru(ctx, xt, state, w_hh, b_hh, hidden):
    (h,) = state
    hp = _hidden_proj(ctx, h, w_hh, b_hh)
    xs = gate_slices(ctx, xt, 3, hidden)
    hs = gate_slices(ctx, hp, 3, hidden)
    r = ctx.call("sigmoid", ctx.call("add", xs[0], hs[0]))
    z = ctx.call("sigmoid", ctx.call("add", xs[1], hs[1]))
    n = ctx.call("tanh", ctx.call("add", xs[2], ctx.call("multiply", r, hs[2])))
    one = ctx.expr(1.0, ctx.dtype(h))
    h2 = ctx.call(
        "add", ctx.call("multiply", ctx.call("subtract", one, z), n), ctx.call("multiply", z, h)
    )
    return h2, (h2,)


def _cell_rnn(act):
    def cell(ctx, xt, state, w_hh, b_hh, hidden):
        (h,) = state
        pre = ctx.call("add", xt, _hidden_proj(ctx, h, w_hh, b_hh))
        h2 = ctx.call("tanh", pre) if act == "tanh" else ctx.call("nn.relu", pre)
        return h2, (h2,)

    return cell


def _hidden_proj(ctx, h, w_hh, b_hh):
    p = ctx.call("nn.dense", h, w_hh)
    return p if b_hh is None else ctx.call("add", p, b_hh)


def _scan(ctx, cell, xp, init, w_hh, b_hh, hidden, tag):
    """Run `cell` over the time axis (0) of the projected inputs `xp`; returns (ys, final
    state). `let %xp = ...; let %loop = fn(t, state..., ys) {...}; %loop(0, init..., [])`."""
    n = ctx.dim_size(xp, 0)
    if isinstance(n, int) and 0 < n <= UNROLL_MAX_STEPS:
        return _unrolled(ctx, cell, xp, init, w_hh, b_hh, hidden, n)
    span = ctx.span
    d = ctx.dtype(xp)
    xshape = ctx.shape_of(xp)
    state_t = TensorType((xshape[1], hidden), d)
    n_state = len(init)
    static = isinstance(n, int)  # then ys is preallocated and written step by step
    ys_t = TensorType((n if static else Any, xshape[1], hidden), d)
    xp_var = RVar(f"{tag}_x", ctx.type_of(xp))
    t_var = RVar(f"{tag}_t", TensorType((), "int64"))
    s_vars = [RVar(f"{tag}_s{i}", state_t) for i in range(n_state)]
    ys_var = RVar(f"{tag}_ys", ys_t)
    ret = TupleType((ys_t,) + (state_t,) * n_state)
    loop = RVar(
        f"{tag}_loop", FuncType((t_var.type_annotation,) + (state_t,) * n_state + (ys_t,), ret)
    )
    xt = ctx.call("take", xp_var, t_var, axis=0)
    out, new_state = cell(ctx, xt, s_vars, w_hh, b_hh, hidden)
    row = ctx.call("expand_dims", out, axis=0)
    if static:
        at = ctx.call("reshape", t_var, newshape=(1, 1))
        ys2 = ctx.call("scatter_nd", ys_var, at, row, mode="update")
    else:
        ys2 = ctx.call("concatenate", ys_var, row, axis=0)
    step = Call(loop, (ctx.call("add", t_var, ctx.const(1, "int64")), *new_state, ys2), span=span)
    body = If(
        ctx.call("less", t_var, ctx.expr(n, "int64")),
        step,
        Tuple((ys_var, *s_vars), span=span),
        span=span,
    )
    fn = Function((t_var, *s_vars, ys_var), body, ret_type=ret, span=span)
    first = ctx.call("expand_dims", ctx.call("zeros_like", init[0]), axis=0)
    if static:
        ys0 = ctx.call("repeat", first, repeats=n, axis=0) if n != 1 else first
    else:
        ys0 = ctx.call("strided_slice", first, begin=(0,), end=(0,), axes=(0,))
    call = Call(loop, (ctx.const(0, "int64"), *init, ys0), span=span)
    res: Expr = Let(xp_var, xp, Let(loop, fn, call, span=span), span=span)
    return ctx.item(res, 0), [ctx.item(res, 1 + i) for i in range(n_state)]


def _unrolled(ctx, cell, xp, init, w_hh, b_hh, hidden, n):
    """`cell` applied at each of the `n` (known) time steps of `xp`: (ys [n, B, H], state)."""
    state = list(init)
    ys = []
    for t in range(n):
        xt = ctx.call("take", xp, ctx.const(t, "int64"), axis=0)
        out, state = cell(ctx, xt, state, w_hh, b_hh, hidden)
        ys.append(ctx.call("expand_dims", out, axis=0))
    return (ys[0] if n == 1 else ctx.call("concatenate", *ys, axis=0)), list(state)


def _rnn(
    ctx,
    cell,
    n_gates,
    input,
    hx,
    params,
    has_biases,
    num_layers,
    bidirectional,  # noqa: A002
    batch_first,
    join_bias=True,
):
    """`join_bias`: the cell adds b_hh to h W_hh^T and nothing else (not GRU, whose reset gate
    multiplies it), so it joins b_ih in the input projection."""
    x = ctx.expr(input)
    unbatched = ctx.ndim(x) == 2
    if unbatched:
        x = ctx.call("expand_dims", x, axis=1)
    elif batch_first:
        x = ctx.call("transpose", x, axes=(1, 0, 2))
    hx = list(hx) if isinstance(hx, (list, tuple)) else [hx]
    if unbatched:
        hx = [ctx.call("expand_dims", h, axis=1) for h in hx]
    dirs = 2 if bidirectional else 1
    per = 4 if has_biases else 2
    params = list(params)
    if len(params) != num_layers * dirs * per:
        raise ctx.error("recurrent layers with projections (proj_size) are not supported")
    finals = [[] for _ in hx]
    for layer in range(num_layers):
        outs = []
        for dr in range(dirs):
            k = (layer * dirs + dr) * per
            w_ih, w_hh = params[k], params[k + 1]
            b_ih, b_hh = (params[k + 2], params[k + 3]) if has_biases else (None, None)
            seq = x if dr == 0 else ctx.call("reverse", x, axis=0)
            xp = ctx.call("nn.dense", seq, w_ih)
            if b_ih is not None and join_bias:
                # x W_ih^T + b_ih + h W_hh^T + b_hh: both biases once, outside the recurrence
                xp = ctx.call("add", xp, ctx.call("add", b_ih, b_hh))
                b_hh = None
            elif b_ih is not None:
                xp = ctx.call("add", xp, b_ih)
            idx = ctx.const(layer * dirs + dr, "int64")
            init = [ctx.call("take", h, idx, axis=0) for h in hx]
            hidden = ctx.dim_size(w_hh, 1)
            ys, state = _scan(
                ctx, cell, xp, init, w_hh, b_hh, hidden, f"{ctx.node_name}_l{layer}d{dr}"
            )
            if dr == 1:
                ys = ctx.call("reverse", ys, axis=0)
            outs.append(ys)
            for i, s in enumerate(state):
                finals[i].append(s)
        x = outs[0] if dirs == 1 else ctx.call("concatenate", *outs, axis=2)
    if unbatched:
        x = ctx.call("squeeze", x, axis=(1,))
    elif batch_first:
        x = ctx.call("transpose", x, axes=(1, 0, 2))
    states = [ctx.call("stack", *f, axis=0) for f in finals]
    if unbatched:
        states = [ctx.call("squeeze", s, axis=(1,)) for s in states]
    # the time axis is unknown inside the loop: give the output the input's length back
    steps = ctx.dim_size(input, 1 if batch_first and not unbatched else 0)
    if isinstance(steps, int):
        t_axis = 1 if batch_first and not unbatched else 0
        x = ctx.call(
            "reshape", x, newshape=tuple(steps if i == t_axis else 0 for i in range(ctx.ndim(x)))
        )
    return (x, *states)


@aten("lstm.input")
def lstm(
    ctx,
    input,
    hx,
    params,
    has_biases,
    num_layers,
    dropout,
    train,  # noqa: A002
    bidirectional,
    batch_first,
):
    return _rnn(
        ctx, _cell_lstm, 4, input, hx, params, has_biases, num_layers, bidirectional, batch_first
    )


@aten("gru.input")
def gru(
    ctx,
    input,
    hx,
    params,
    has_biases,
    num_layers,
    dropout,
    train,  # noqa: A002
    bidirectional,
    batch_first,
):
    return _rnn(
        ctx,
        _cell_gru,
        3,
        input,
        hx,
        params,
        has_biases,
        num_layers,
        bidirectional,
        batch_first,
        join_bias=False,
    )


@aten("rnn_tanh.input")
def rnn_tanh(
    ctx,
    input,
    hx,
    params,
    has_biases,
    num_layers,
    dropout,
    train,  # noqa: A002
    bidirectional,
    batch_first,
):
    return _rnn(
        ctx,
        _cell_rnn("tanh"),
        1,
        input,
        hx,
        params,
        has_biases,
        num_layers,
        bidirectional,
        batch_first,
    )


@aten("rnn_relu.input")
def rnn_relu(
    ctx,
    input,
    hx,
    params,
    has_biases,
    num_layers,
    dropout,
    train,  # noqa: A002
    bidirectional,
    batch_first,
):
    return _rnn(
        ctx,
        _cell_rnn("relu"),
        1,
        input,
        hx,
        params,
        has_biases,
        num_layers,
        bidirectional,
        batch_first,
    )
