"""In-place ops on fresh intermediates (torchvision's `ReLU(inplace=True)`, `out += identity`)
become their functional twins without re-tracing the program; mutations of inputs, buffers or
storage a view shares still go through torch's functionalisation. Answers against torch."""

from __future__ import annotations

import pytest

from tests.require import require

torch = require("torch")

from converters.pytorch import from_pytorch  # noqa: E402
from converters.pytorch.frontend import _rewrite_inplace, functionalize  # noqa: E402

from .harness import assert_close, run_relay  # noqa: E402


class Block(torch.nn.Module):
    """A ResNet basic block as torchvision writes it."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(4)
        self.relu = torch.nn.ReLU(inplace=True)
        self.conv2 = torch.nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(4)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += x
        out.relu_()
        out.mul_(0.5)
        return self.relu(out)


class ReadsBetween(torch.nn.Module):
    """Reads of the mutated tensor before and after each mutation."""

    def forward(self, x):
        y = x * 2.0
        a = y + 1.0  # before
        y.add_(x)
        b = y * 3.0  # between
        y.sigmoid_()
        return a, b, y


class MutatesInput(torch.nn.Module):
    def forward(self, x):
        x.add_(1.0)
        return x * 2.0


class MutatesUnderAView(torch.nn.Module):
    def forward(self, x):
        y = x * 1.0
        v = y.view(-1)
        y.add_(1.0)
        return v * 2.0


class PromotesOnMutation(torch.nn.Module):
    def forward(self, x, h):
        y = x * 1.0  # float32
        y.add_(h)  # float16 operand: stays float32 in place
        return y


def _export(m, *args):
    m.eval()
    with torch.no_grad():
        for p in m.parameters():
            p.normal_()
    return torch.export.export(m, args)


def _check(m, *args):
    mod = from_pytorch(_export(m, *args))
    with torch.no_grad():
        want = m(*[a.clone() for a in args])
    assert_close(run_relay(mod, args), want, rtol=1e-5, atol=1e-5)
    return mod


@pytest.mark.parametrize("cls", [Block, ReadsBetween])
def test_inplace_on_fresh_storage_is_rewritten_without_retracing(cls, monkeypatch):
    x = torch.randn(1, 4, 6, 6)
    ep = _export(cls(), x)
    assert _rewrite_inplace(ep, {}) is not None

    def no_retrace(*a, **k):
        raise AssertionError("re-traced")

    monkeypatch.setattr(torch.export.ExportedProgram, "run_decompositions", no_retrace)
    torch.manual_seed(0)
    m = cls()
    _check(m, x)


@pytest.mark.parametrize("cls", [MutatesInput, MutatesUnderAView])
def test_other_mutation_is_functionalised_by_torch(cls):
    x = torch.randn(2, 3)
    ep = _export(cls(), x)
    assert _rewrite_inplace(ep, {}) is None
    _check(cls(), x)


def test_mixed_dtype_operand_is_left_to_torch():
    x, h = torch.randn(2, 3), torch.randn(2, 3).half()
    ep = _export(PromotesOnMutation(), x, h)
    assert _rewrite_inplace(ep, {}) is None
    _check(PromotesOnMutation(), x, h)


def test_user_program_is_left_unchanged():
    x = torch.randn(1, 4, 6, 6)
    ep = _export(Block(), x)
    before = [str(n.target) for n in ep.graph.nodes]
    out = functionalize(ep)
    assert [str(n.target) for n in ep.graph.nodes] == before
    assert any("relu_" in t for t in before)
    assert not any(str(n.target).endswith("_.default") for n in out.graph.nodes)
