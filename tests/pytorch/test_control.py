"""torch.cond -> Relay If; while_loop -> a tail-recursive local function."""

from __future__ import annotations

import pytest

from tests.require import require

torch = require("torch")

import relay_core  # noqa: E402
from converters.pytorch import from_pytorch  # noqa: E402
from relay_core.ir import Function, If, Let, post_order  # noqa: E402

from .harness import assert_close  # noqa: E402

while_loop = require("torch._higher_order_ops.while_loop").while_loop


class Cond(torch.nn.Module):
    def forward(self, p, x, y):
        def t(x, y):
            return x.sin() + y, x.cos()

        def f(x, y):
            return x.cos() - y, x * 2.0

        return torch.cond(p, t, f, (x, y))


class CondOnData(torch.nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x * 2.0, lambda x: x - 1.0, (x,))


class Loop(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor([0.5, 1.0, 1.5]))

    def forward(self, i, x):
        def cond(i, x):
            return i < 5

        def body(i, x):
            return i + 1, x * self.w + 1.0

        return while_loop(cond, body, (i, x))


def _has(mod, kind):
    return any(isinstance(n, kind) for n in post_order(mod["main"].body))


@pytest.mark.parametrize("flag", [True, False])
def test_cond_to_if(flag):
    m = Cond()
    x, y = torch.randn(4), torch.randn(4)
    mod = from_pytorch(m, (torch.tensor(True), x, y))
    assert _has(mod, If)
    for p in (True, False):  # one program, both branches at run time
        pt = torch.tensor(p if flag else not p)
        got = relay_core.evaluate(mod, pt.numpy(), x.numpy(), y.numpy())
        assert_close(got, m(pt, x, y), 1e-6, 1e-6)


def test_cond_on_computed_predicate():
    m = CondOnData()
    mod = from_pytorch(m, (torch.randn(5),))
    assert _has(mod, If)
    for x in (torch.ones(5), -torch.ones(5)):
        assert_close(relay_core.evaluate(mod, x.numpy()), m(x), 1e-6, 1e-6)


def test_while_loop_to_recursion():
    m = Loop()
    i, x = torch.tensor(0), torch.randn(3)
    mod = from_pytorch(m, (i, x))
    body = mod["main"].body
    assert _has(mod, Let) and any(
        isinstance(n, Function) for n in post_order(body) if n is not mod["main"]
    )
    for start in (0, 3, 7):
        it = torch.tensor(start)
        got = relay_core.evaluate(mod, it.numpy(), x.numpy())
        assert_close(got, m(it, x), 1e-5, 1e-5)


def test_long_while_loop_runs_in_constant_stack():
    class Count(torch.nn.Module):
        def forward(self, i, x):
            return while_loop(lambda i, x: i < 3000, lambda i, x: (i + 1, x + 0.5), (i, x))

    m = Count()
    i, x = torch.tensor(0), torch.zeros(2)
    mod = from_pytorch(m, (i, x))
    assert_close(relay_core.evaluate(mod, i.numpy(), x.numpy()), m(i, x), 1e-6, 1e-6)


class NoGrad(torch.nn.Module):
    def forward(self, x):
        with torch.no_grad():
            y = x.sin() * 2
        return y + 1


class NoAutocast(torch.nn.Module):
    def forward(self, x):
        with torch.autocast("cpu", enabled=False):
            y = x.cos() * 2
        return y - 1


@pytest.mark.parametrize(
    "model, target",
    [
        (NoGrad(), "higher_order.wrap_with_set_grad_enabled"),
        (NoAutocast(), "higher_order.wrap_with_autocast"),
    ],
)
def test_wrapped_regions_are_inlined(model, target):
    from .harness import graph_targets

    x = torch.randn(4)
    ep = torch.export.export(model, (x,))
    assert target in graph_targets(ep)
    mod = from_pytorch(ep)
    assert_close(relay_core.evaluate(mod, x.numpy()), model(x), 1e-6, 1e-6)


def test_enabled_autocast_is_refused():
    class Auto(torch.nn.Module):
        def forward(self, x):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                y = x.cos()
            return y

    with pytest.raises(relay_core.RelayError, match="autocast"):
        from_pytorch(Auto(), (torch.randn(4),))
