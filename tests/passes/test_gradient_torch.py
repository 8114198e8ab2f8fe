"""Gradients of whole models against torch.autograd: an MLP, a small CNN, an LSTM cell unrolled
by a recursive loop, and a function with a data-dependent `if`."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
from relay_core.ir import (
    Call,
    Constant,
    Function,
    GlobalVar,
    If,
    IRModule,
    Tuple,
    TupleGetItem,
    call,
    const,
    var,
)
from tests.require import require

torch = require("torch")
F = torch.nn.functional

F64 = "float64"


def _grads(mod, args, mode):
    g = relay_core.gradient(mod, mode)
    value, grads = relay_core.evaluate(g, *args)
    return value, grads


def _torch_grads(fn, args):
    ts = [torch.tensor(a, requires_grad=True) for a in args]
    out = fn(*ts)
    out.backward()
    return out.detach().numpy(), [t.grad.numpy() for t in ts]


def _check(mod, fn, args, modes=("first_order", "higher_order"), rtol=1e-7):
    want_v, want_g = _torch_grads(fn, args)
    for mode in modes:
        v, gs = _grads(mod, args, mode)
        np.testing.assert_allclose(v, want_v, rtol=rtol, err_msg=mode)
        assert len(gs) == len(want_g)
        for i, (a, b) in enumerate(zip(gs, want_g)):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-10, err_msg=f"{mode} grad {i}")


def _rand(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(F64)


def test_mlp_cross_entropy():
    rng = np.random.default_rng(0)
    x, w1, b1, w2, b2 = (
        var("x", (5, 8), F64),
        var("w1", (16, 8), F64),
        var("b1", (16,), F64),
        var("w2", (3, 16), F64),
        var("b2", (3,), F64),
    )
    labels = np.eye(3)[[0, 2, 1, 1, 0]]
    h = call("nn.relu", call("nn.bias_add", call("nn.dense", x, w1), b1, axis=-1))
    logits = call("add", call("nn.dense", h, w2), b2)
    logp = call("nn.log_softmax", logits, axis=-1)
    loss = call(
        "negative", call("mean", call("sum", call("multiply", logp, Constant(labels)), axis=(1,)))
    )
    mod = IRModule.from_expr(Function((x, w1, b1, w2, b2), loss))
    args = [
        _rand(rng, 5, 8),
        _rand(rng, 16, 8, scale=0.3),
        _rand(rng, 16),
        _rand(rng, 3, 16),
        _rand(rng, 3),
    ]

    def torch_fn(x, w1, b1, w2, b2):
        h = F.relu(x @ w1.T + b1)
        return F.cross_entropy(h @ w2.T + b2, torch.tensor([0, 2, 1, 1, 0]))

    _check(mod, torch_fn, args)


def test_small_cnn():
    rng = np.random.default_rng(1)
    x = var("x", (2, 3, 8, 8), F64)
    w1, b1 = var("w1", (4, 3, 3, 3), F64), var("b1", (4,), F64)
    w2 = var("w2", (6, 2, 3, 3), F64)
    gamma, beta = var("gamma", (6,), F64), var("beta", (6,), F64)
    wd, bd = var("wd", (5, 6), F64), var("bd", (5,), F64)
    mean = Constant(rng.standard_normal(6) * 0.1)
    varc = Constant(rng.uniform(0.5, 2.0, 6))
    y = call("nn.conv2d", x, w1, padding=(1, 1))
    y = call("nn.relu", call("nn.bias_add", y, b1))
    y = call("nn.max_pool2d", y, pool_size=(2, 2), strides=(2, 2))
    y = call("nn.conv2d", y, w2, strides=(2, 2), padding=(1, 1), groups=2)
    y = TupleGetItem(call("nn.batch_norm", y, gamma, beta, mean, varc, epsilon=1e-3), 0)
    y = call("nn.global_avg_pool2d", call("tanh", y))
    y = call("reshape", y, newshape=(2, 6))
    y = call("nn.dense", y, wd) + bd
    loss = call("sum", call("multiply", y, y))
    mod = IRModule.from_expr(Function((x, w1, b1, w2, gamma, beta, wd, bd), loss))
    args = [
        _rand(rng, 2, 3, 8, 8),
        _rand(rng, 4, 3, 3, 3, scale=0.3),
        _rand(rng, 4),
        _rand(rng, 6, 2, 3, 3, scale=0.3),
        _rand(rng, 6),
        _rand(rng, 6),
        _rand(rng, 5, 6),
        _rand(rng, 5),
    ]

    def torch_fn(x, w1, b1, w2, gamma, beta, wd, bd):
        y = F.relu(F.conv2d(x, w1, b1, padding=1))
        y = F.max_pool2d(y, 2)
        y = F.conv2d(y, w2, stride=2, padding=1, groups=2)
        y = F.batch_norm(
            y,
            torch.tensor(mean.data),
            torch.tensor(varc.data),
            gamma,
            beta,
            training=False,
            eps=1e-3,
        )
        y = torch.tanh(y).mean(dim=(2, 3))
        y = y @ wd.T + bd
        return (y * y).sum()

    _check(mod, torch_fn, args)


def _lstm_module(steps: int, batch: int, n_in: int, n_hid: int):
    """@loop(i, h, c, xs, w_ih, w_hh, b) runs one LSTM cell step per call until i == steps."""
    i = var("i", (), "int32")
    h, c = var("h", (batch, n_hid), F64), var("c", (batch, n_hid), F64)
    xs = var("xs", (steps, batch, n_in), F64)
    w_ih, w_hh = var("w_ih", (4 * n_hid, n_in), F64), var("w_hh", (4 * n_hid, n_hid), F64)
    b = var("b", (4 * n_hid,), F64)
    loop = GlobalVar("loop")
    x_t = call("take", xs, i, axis=0)
    gates = call("nn.dense", x_t, w_ih) + call("nn.dense", h, w_hh) + b
    parts = call("split", gates, indices_or_sections=4, axis=1)
    ig, fg, gg, og = (TupleGetItem(parts, k) for k in range(4))
    c2 = call("sigmoid", fg) * c + call("sigmoid", ig) * call("tanh", gg)
    h2 = call("sigmoid", og) * call("tanh", c2)
    body = If(
        call("less", i, const(steps, "int32")),
        Call(loop, (i + const(1, "int32"), h2, c2, xs, w_ih, w_hh, b)),
        Tuple((h, c)),
    )
    p = [
        var("xs", (steps, batch, n_in), F64),
        var("w_ih", (4 * n_hid, n_in), F64),
        var("w_hh", (4 * n_hid, n_hid), F64),
        var("b", (4 * n_hid,), F64),
    ]
    zeros = Constant(np.zeros((batch, n_hid)))
    out = Call(loop, (const(0, "int32"), zeros, zeros, *p))
    loss = call("sum", TupleGetItem(out, 0)) + call("sum", call("square", TupleGetItem(out, 1)))
    return IRModule(
        {
            loop: Function((i, h, c, xs, w_ih, w_hh, b), body),
            GlobalVar("main"): Function(tuple(p), loss),
        }
    )


def test_lstm_unrolled_by_a_recursive_loop():
    rng = np.random.default_rng(2)
    steps, batch, n_in, n_hid = 5, 2, 3, 4
    mod = _lstm_module(steps, batch, n_in, n_hid)
    args = [
        _rand(rng, steps, batch, n_in),
        _rand(rng, 4 * n_hid, n_in, scale=0.5),
        _rand(rng, 4 * n_hid, n_hid, scale=0.5),
        _rand(rng, 4 * n_hid),
    ]

    cell = torch.nn.LSTMCell(n_in, n_hid).double()

    def torch_fn(xs, w_ih, w_hh, b):
        # torch's own LSTM cell with our parameters (one bias; gate order i, f, g, o)
        params = {
            "weight_ih": w_ih,
            "weight_hh": w_hh,
            "bias_ih": b,
            "bias_hh": torch.zeros_like(b),
        }
        h = c = torch.zeros(batch, n_hid, dtype=torch.float64)
        for t in range(steps):
            h, c = torch.func.functional_call(cell, params, (xs[t], (h, c)))
        return h.sum() + (c * c).sum()

    # A recursive loop is control flow: only the higher-order mode applies.
    _check(mod, torch_fn, args, modes=("higher_order",))
    with pytest.raises(relay_core.passes.GradientError, match="higher_order"):
        relay_core.gradient(mod, "first_order")


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_data_dependent_if(sign):
    rng = np.random.default_rng(3)
    x, w = var("x", (3, 4), F64), var("w", (4,), F64)
    xw = x * w
    cond = call("greater", call("sum", xw), const(0.0, F64))
    then = call("multiply", call("tanh", xw), const(2.0, F64))
    other = call("multiply", call("sin", x), w)
    body = call("sum", If(cond, then, other))
    mod = IRModule.from_expr(Function((x, w), body))
    args = [_rand(rng, 3, 4), np.abs(_rand(rng, 4)) * sign]
    if np.sum(args[0] * args[1]) * sign < 0:
        args[0] = -args[0]  # make each case take the branch it is named after

    def torch_fn(x, w):
        xw = x * w
        return (torch.tanh(xw) * 2).sum() if xw.sum() > 0 else (torch.sin(x) * w).sum()

    _check(mod, torch_fn, args, modes=("higher_order",))
