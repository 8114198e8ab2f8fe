"""Recurrent layers: RNN, GRU, LSTM (forward, reverse, bidirectional; every activation;
layout 0 and 1; sequence_lens; peepholes; clip; linear_before_reset; input_forget).

Each direction is a recursive function over time steps, as a Loop would be:
`let %cell = fn (%t, %h[, %c], %ys) { if (%t < T) { ... %cell(%t + 1, h', c', ys ++ [h']) }
else { (%h, %c, %ys) } }`. The input projections of all steps are one matmul before it.
"""

from __future__ import annotations

import numpy as np

from relay_core.ir import Any, Call, Function, If, Let, TensorType, Tuple, Var
from relay_core.ir.visitor import substitute

from ..common import RNN_UNROLL_MAX_STEPS as UNROLL_MAX_STEPS
from ..common import gate_slices
from .table import converter
from .util import cast, scalar, scalar_like

# name -> (builder(ctx, x, alpha, beta), default alpha, default beta)
_ACT = {
    "relu": (lambda c, x, a, b: c.call("nn.relu", x), None, None),
    "tanh": (lambda c, x, a, b: c.call("tanh", x), None, None),
    "sigmoid": (lambda c, x, a, b: c.call("sigmoid", x), None, None),
    "affine": (
        lambda c, x, a, b: c.call(
            "add", c.call("multiply", x, scalar_like(c, a, x)), scalar_like(c, b, x)
        ),
        1.0,
        0.0,
    ),
    "leakyrelu": (lambda c, x, a, b: c.call("nn.leaky_relu", x, alpha=a), 0.01, None),
    "thresholdedrelu": (lambda c, x, a, b: c.call("nn.thresholded_relu", x, alpha=a), 1.0, None),
    "scaledtanh": (
        lambda c, x, a, b: c.call(
            "multiply",
            scalar_like(c, a, x),
            c.call("tanh", c.call("multiply", x, scalar_like(c, b, x))),
        ),
        1.0,
        1.0,
    ),
    "hardsigmoid": (lambda c, x, a, b: c.call("nn.hard_sigmoid", x, alpha=a, beta=b), 0.2, 0.5),
    "elu": (lambda c, x, a, b: c.call("nn.elu", x, alpha=a), 1.0, None),
    "softsign": (lambda c, x, a, b: c.call("nn.softsign", x), None, None),
    "softplus": (lambda c, x, a, b: c.call("nn.softplus", x), None, None),
}


def _activations(ctx, names, alphas, betas, defaults, num_dir):
    """Per direction, the list of activation builders (x -> expr)."""
    names = list(names) if names else list(defaults) * num_dir
    if len(names) == len(defaults):
        names = names * num_dir
    if len(names) != len(defaults) * num_dir:
        raise ctx.error(f"expected {len(defaults) * num_dir} activations, got {len(names)}")
    alphas, betas = list(alphas or []), list(betas or [])
    out = []
    for i, name in enumerate(names):
        entry = _ACT.get(name.lower())
        if entry is None:
            raise ctx.error(f"unknown activation {name!r}")
        fn, da, db = entry
        a = alphas[i] if i < len(alphas) and da is not None else da
        b = betas[i] if i < len(betas) and db is not None else db
        out.append(lambda x, fn=fn, a=a, b=b: fn(ctx, x, a, b))
    n = len(defaults)
    return [out[d * n : (d + 1) * n] for d in range(num_dir)]


def _zeros(ctx, X, batch, hidden):
    """The default initial state: zeros [batch, hidden]; a run-time batch is read off X
    (time-major [T, B, I])."""
    dtype = ctx.dtype(X)
    if isinstance(batch, int):
        return ctx.const(np.zeros((batch, hidden), dtype=np.dtype(_np(dtype))))
    b = ctx.call("strided_slice", ctx.call("shape_of", X, dtype="int64"), begin=(1,), end=(2,))
    shape = ctx.call("concatenate", b, ctx.const(np.array([hidden], np.int64)), axis=0)
    return ctx.call("dyn.full", scalar(ctx, 0, dtype), shape, dtype=dtype)


def _take0(ctx, x, i):
    return ctx.call("take", x, scalar(ctx, i, "int64"), axis=0)


def _recurrence(
    ctx,
    kind,
    X,
    W,
    R,
    B,
    seq_lens,
    h0,
    c0,
    P,
    acts,
    hidden,
    clip,
    linear_before_reset,
    input_forget,
    reverse,
):
    """One direction: (Y [T, B, H], h_T, c_T)."""
    n_gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    dtype = ctx.dtype(X)
    T = ctx.shape_of(X)[0]
    if reverse:
        X = (
            ctx.call("reverse_sequence", X, seq_lens, seq_axis=0, batch_axis=1)
            if seq_lens is not None
            else ctx.call("reverse", X, axis=0)
        )
    # Input projections of every step at once: [T, B, G*H].
    xw = ctx.call("nn.matmul", X, W, transpose_b=True)
    if B is not None:
        wb = ctx.call("strided_slice", B, begin=(0,), end=(n_gates * hidden,), strides=(1,))
        rb = ctx.call(
            "strided_slice", B, begin=(n_gates * hidden,), end=(2 * n_gates * hidden,), strides=(1,)
        )
        if kind == "GRU" and linear_before_reset:
            xw = ctx.call("add", xw, wb)
        else:
            xw = ctx.call("add", xw, ctx.call("add", wb, rb))
            rb = None
    else:
        rb = None
    outer = {}  # values the step function uses, let-bound around it

    def bind(name, value, t=None):
        v = Var(name, t or ctx.type_of(value))
        outer[v] = value
        return v

    xw_v = bind("xw", xw)
    r_v = bind("r", R)
    rb_v = bind("rb", rb) if rb is not None else None
    lens_v = bind("seq_lens", cast(ctx, seq_lens, "int64")) if seq_lens is not None else None
    p_v = bind("p", P) if P is not None else None
    h_t = ctx.tensor_type(h0)
    if h_t.ndim == 2 and not isinstance(h_t.shape[1], int):
        # an initial state of run-time shape (ConstantOfShape of the batch): its width is the
        # hidden size
        h_t = TensorType((h_t.shape[0], hidden), h_t.dtype)
    t_var = Var("t", TensorType((), "int64"))
    h_var = Var("h", h_t)
    c_var = Var("c", h_t) if kind == "LSTM" else None
    ys_var = Var("ys", TensorType((Any, *h_t.shape), dtype))
    n_steps = bind(
        "steps",
        scalar(ctx, T, "int64")
        if isinstance(T, int)
        else ctx.call(
            "take", ctx.call("shape_of", X, dtype="int64"), scalar(ctx, 0, "int64"), axis=0
        ),
    )

    def clipped(e):
        return ctx.call("clip", e, a_min=-clip, a_max=clip) if clip is not None else e

    x_t = ctx.call("take", xw_v, t_var, axis=0)
    hr = ctx.call("nn.matmul", h_var, r_v, transpose_b=True)
    c_new = None
    if kind == "RNN":
        h_new = acts[0](clipped(ctx.call("add", x_t, hr)))
    elif kind == "GRU":
        xz, xr, xh = gate_slices(ctx, x_t, 3, hidden)
        rz, rr, rh = gate_slices(ctx, hr if rb_v is None else ctx.call("add", hr, rb_v), 3, hidden)
        z = acts[0](clipped(ctx.call("add", xz, rz)))
        r = acts[0](clipped(ctx.call("add", xr, rr)))
        if linear_before_reset:
            hh = acts[1](clipped(ctx.call("add", xh, ctx.call("multiply", r, rh))))
        else:
            rh_w = ctx.call(
                "strided_slice",
                r_v,
                begin=(2 * hidden,),
                end=(3 * hidden,),
                strides=(1,),
                axes=(0,),
            )
            hh = acts[1](
                clipped(
                    ctx.call(
                        "add",
                        xh,
                        ctx.call(
                            "nn.matmul", ctx.call("multiply", r, h_var), rh_w, transpose_b=True
                        ),
                    )
                )
            )
        one = scalar(ctx, 1, dtype)
        h_new = ctx.call(
            "add",
            ctx.call("multiply", ctx.call("subtract", one, z), hh),
            ctx.call("multiply", z, h_var),
        )
    else:
        gi, go, gf, gc = gate_slices(ctx, ctx.call("add", x_t, hr), 4, hidden)
        if p_v is not None:
            pi, po, pf = (
                ctx.call(
                    "strided_slice", p_v, begin=(k * hidden,), end=((k + 1) * hidden,), strides=(1,)
                )
                for k in range(3)
            )
            gi = ctx.call("add", gi, ctx.call("multiply", pi, c_var))
            gf = ctx.call("add", gf, ctx.call("multiply", pf, c_var))
        i = acts[0](clipped(gi))
        f = ctx.call("subtract", scalar(ctx, 1, dtype), i) if input_forget else acts[0](clipped(gf))
        g = acts[1](clipped(gc))
        c_new = ctx.call("add", ctx.call("multiply", f, c_var), ctx.call("multiply", i, g))
        if p_v is not None:
            go = ctx.call("add", go, ctx.call("multiply", po, c_new))
        o = acts[0](clipped(go))
        h_new = ctx.call("multiply", o, acts[2](c_new))
    y_t = h_new
    if lens_v is not None:  # past a sequence's end: keep the state, output zeros
        valid = ctx.call("expand_dims", ctx.call("less", t_var, lens_v), axis=1)
        h_new = ctx.call("where", valid, h_new, h_var)
        if c_new is not None:
            c_new = ctx.call("where", valid, c_new, c_var)
        y_t = ctx.call("where", valid, y_t, scalar(ctx, 0, dtype))
    state = [h_var] + ([c_var] if c_var is not None else [])
    nxt = [h_new] + ([c_new] if c_new is not None else [])
    if isinstance(T, int) and 0 < T <= UNROLL_MAX_STEPS:
        # A known, short sequence: unrolled into a static graph (the backend then fuses the
        # steps' elementwise work and needs no run-time loop). Longer or run-time lengths
        # stay a recursive function: a loop.
        vals = [h0] + ([c0] if c0 is not None else [])
        ys_list = []
        body = Tuple((*nxt, y_t), span=ctx.span)
        for t in range(T):
            m = {**outer, t_var: scalar(ctx, t, "int64"), **dict(zip(state, vals))}
            step_vals = substitute(body, m).fields
            vals, y = list(step_vals[:-1]), step_vals[-1]
            ys_list.append(ctx.call("expand_dims", y, axis=0))
        ys = ys_list[0] if T == 1 else ctx.call("concatenate", *ys_list, axis=0)
        expr = ctx.tuple([*vals, ys])
    else:
        if not isinstance(h_t.shape[-1], int):
            raise ctx.error("needs a static hidden size")
        ys_new = ctx.call("concatenate", ys_var, ctx.call("expand_dims", y_t, axis=0), axis=0)
        cell = Var("cell")
        step = Call(
            cell, (ctx.call("add", t_var, scalar(ctx, 1, "int64")), *nxt, ys_new), span=ctx.span
        )
        done = ctx.tuple([*state, ys_var])
        fn = Function(
            (t_var, *state, ys_var),
            If(ctx.call("less", t_var, n_steps), step, done, span=ctx.span),
            span=ctx.span,
        )
        if h_t.is_static:
            ys0 = ctx.const(np.zeros((0, *h_t.shape), dtype=_np(dtype)))
        else:  # a run-time batch: no steps yet, of h0's shape
            ys0 = ctx.call(
                "strided_slice",
                ctx.call("expand_dims", h0, axis=0),
                begin=(0,),
                end=(0,),
                strides=(1,),
                axes=(0,),
            )
        init = [scalar(ctx, 0, "int64"), h0] + ([c0] if c0 is not None else []) + [ys0]
        expr = Let(cell, fn, Call(cell, tuple(init), span=ctx.span), span=ctx.span)
        for v, value in reversed(list(outer.items())):
            expr = Let(v, value, expr, span=ctx.span)
    res = [ctx.item(expr, k) for k in range(len(state) + 1)]
    ys = res[-1]
    if reverse:
        ys = (
            ctx.call("reverse_sequence", ys, seq_lens, seq_axis=0, batch_axis=1)
            if seq_lens is not None
            else ctx.call("reverse", ys, axis=0)
        )
    return ys, res[0], res[1] if c_var is not None else None


def _run(
    ctx,
    kind,
    X,
    W,
    R,
    B,
    sequence_lens,
    initial_h,
    initial_c,
    P,
    *,
    activations,
    activation_alpha,
    activation_beta,
    clip,
    direction,
    hidden_size,
    layout,
    linear_before_reset=0,
    input_forget=0,
    defaults,
):
    if direction not in ("forward", "reverse", "bidirectional"):
        raise ctx.error(f"unknown direction {direction!r}")
    num_dir = 2 if direction == "bidirectional" else 1
    if layout:
        X = ctx.call("transpose", X, axes=(1, 0, 2))
        if initial_h is not None:
            initial_h = ctx.call("transpose", initial_h, axes=(1, 0, 2))
        if initial_c is not None:
            initial_c = ctx.call("transpose", initial_c, axes=(1, 0, 2))
    batch = ctx.shape_of(X)[1]
    hidden = hidden_size if hidden_size is not None else ctx.shape_of(R)[-1]
    acts = _activations(ctx, activations, activation_alpha, activation_beta, defaults, num_dir)
    ys, hs, cs = [], [], []
    for d in range(num_dir):
        h0 = _take0(ctx, initial_h, d) if initial_h is not None else _zeros(ctx, X, batch, hidden)
        c0 = None
        if kind == "LSTM":
            c0 = (
                _take0(ctx, initial_c, d)
                if initial_c is not None
                else _zeros(ctx, X, batch, hidden)
            )
        y, h, c = _recurrence(
            ctx,
            kind,
            X,
            _take0(ctx, W, d),
            _take0(ctx, R, d),
            _take0(ctx, B, d) if B is not None else None,
            sequence_lens,
            h0,
            c0,
            _take0(ctx, P, d) if P is not None else None,
            acts[d],
            hidden,
            clip,
            linear_before_reset,
            input_forget,
            reverse=(direction == "reverse" or d == 1),
        )
        ys.append(y)
        hs.append(h)
        cs.append(c)
    Y = ctx.call("stack", *ys, axis=1)  # [T, num_dir, B, H]
    Y_h = ctx.call("stack", *hs, axis=0)  # [num_dir, B, H]
    Y_c = ctx.call("stack", *cs, axis=0) if kind == "LSTM" else None
    if layout:
        Y = ctx.call("transpose", Y, axes=(2, 0, 1, 3))
        Y_h = ctx.call("transpose", Y_h, axes=(1, 0, 2))
        if Y_c is not None:
            Y_c = ctx.call("transpose", Y_c, axes=(1, 0, 2))
    return [Y, Y_h] + ([Y_c] if kind == "LSTM" else [])


def _np(dtype):
    from relay_core.ir import dtype as dt

    return dt.to_numpy(dtype)


@converter("RNN", 7)
def RNN(
    ctx,
    X,
    W,
    R,
    B=None,
    sequence_lens=None,
    initial_h=None,
    *,
    activation_alpha=None,
    activation_beta=None,
    activations=None,
    clip=None,
    direction="forward",
    hidden_size=None,
    layout=0,
):
    return _run(
        ctx,
        "RNN",
        X,
        W,
        R,
        B,
        sequence_lens,
        initial_h,
        None,
        None,
        activations=activations,
        activation_alpha=activation_alpha,
        activation_beta=activation_beta,
        clip=clip,
        direction=direction,
        hidden_size=hidden_size,
        layout=layout,
        defaults=["Tanh"],
    )


@converter("GRU", 7)
def GRU(
    ctx,
    X,
    W,
    R,
    B=None,
    sequence_lens=None,
    initial_h=None,
    *,
    activation_alpha=None,
    activation_beta=None,
    activations=None,
    clip=None,
    direction="forward",
    hidden_size=None,
    layout=0,
    linear_before_reset=0,
):
    return _run(
        ctx,
        "GRU",
        X,
        W,
        R,
        B,
        sequence_lens,
        initial_h,
        None,
        None,
        activations=activations,
        activation_alpha=activation_alpha,
        activation_beta=activation_beta,
        clip=clip,
        direction=direction,
        hidden_size=hidden_size,
        layout=layout,
        linear_before_reset=linear_before_reset,
        defaults=["Sigmoid", "Tanh"],
    )


@converter("LSTM", 7)
def LSTM(
    ctx,
    X,
    W,
    R,
    B=None,
    sequence_lens=None,
    initial_h=None,
    initial_c=None,
    P=None,
    *,
    activation_alpha=None,
    activation_beta=None,
    activations=None,
    clip=None,
    direction="forward",
    hidden_size=None,
    input_forget=0,
    layout=0,
):
    return _run(
        ctx,
        "LSTM",
        X,
        W,
        R,
        B,
        sequence_lens,
        initial_h,
        initial_c,
        P,
        activations=activations,
        activation_alpha=activation_alpha,
        activation_beta=activation_beta,
        clip=clip,
        direction=direction,
        hidden_size=hidden_size,
        layout=layout,
        input_forget=input_forget,
        defaults=["Sigmoid", "Tanh", "Tanh"],
    )
