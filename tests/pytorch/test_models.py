"""Architectures built in the test, converted and compared with torch itself: max relative error
<= 1e-4 of the output's magnitude, through the interpreter and compiled (once the backend is
there). Models are in eval mode with random weights; nothing is downloaded."""

from __future__ import annotations

import numpy as np
import pytest

from tests.require import require

torch = require("torch")

import relay_core  # noqa: E402
from converters.pytorch import from_pytorch  # noqa: E402

from .harness import flatten, rel_error, run_relay  # noqa: E402

nn = torch.nn
TOL = 1e-4


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


# -- CNNs -----------------------------------------------------------------------------------------


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNetish(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 16, 3, 1, 1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(3, 2, 1),
        )
        self.layers = nn.Sequential(
            BasicBlock(16, 16, 1), BasicBlock(16, 32, 2), BasicBlock(32, 64, 2)
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.layers(self.stem(x))), 1))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        mid = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.block = nn.Sequential(
            nn.Conv2d(cin, mid, 1, bias=False),
            nn.BatchNorm2d(mid),
            nn.ReLU6(),
            nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False),
            nn.BatchNorm2d(mid),
            nn.Hardswish(),
            nn.Conv2d(mid, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        )

    def forward(self, x):
        y = self.block(x)
        return x + y if self.use_res else y


class MobileNetish(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, 2, 1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU6(),
            InvertedResidual(16, 16, 1, 1),
            InvertedResidual(16, 24, 2, 4),
            InvertedResidual(24, 24, 1, 4),
            InvertedResidual(24, 32, 2, 4),
        )
        self.head = nn.Sequential(nn.Dropout(0.2), nn.Linear(32, classes))

    def forward(self, x):
        x = self.features(x)
        return self.head(x.mean((2, 3)))


def _randomize_bn(model, seed=0):
    g = _gen(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(torch.rand(m.num_features, generator=g) - 0.5)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.weight.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.bias.copy_(torch.rand(m.num_features, generator=g) - 0.5)
    return model


# -- sequence models ------------------------------------------------------------------------------


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(
            d_model=32, nhead=4, dim_feedforward=64, dropout=0.1, batch_first=True
        )
        self.enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.proj = nn.Linear(32, 8)

    def forward(self, x):
        return self.proj(self.enc(x))


class LSTMNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(input_size=8, hidden_size=16, num_layers=2, batch_first=True)
        self.out = nn.Linear(16, 4)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return self.out(y), h, c


# -- harness --------------------------------------------------------------------------------------


def _parity(model, inputs, dynamic_shapes=None, compiled=False, runs=None):
    model.eval()
    with torch.no_grad():
        mod = from_pytorch(model, inputs, dynamic_shapes=dynamic_shapes)
    worst = 0.0
    for args in runs or [inputs]:
        with torch.no_grad():
            want = model(*args)
        got = run_relay(mod, args, compiled=compiled)
        g, w = flatten(got), flatten(want)
        assert len(g) == len(w)
        for a, b in zip(g, w):
            assert np.asarray(a).shape == tuple(b.shape)
        worst = max(worst, rel_error(got, want))
    assert worst <= TOL, f"max relative error {worst:.3g} > {TOL}"
    return mod, worst


MODES = [pytest.param(False, id="interpreted"), pytest.param(True, id="compiled")]


@pytest.mark.slow
@pytest.mark.parametrize("compiled", MODES)
def test_resnet(compiled):
    torch.manual_seed(0)
    model = _randomize_bn(ResNetish())
    x = torch.randn(2, 3, 32, 32, generator=_gen(1))
    mod, err = _parity(model, (x,), compiled=compiled)
    text_ops = _ops(mod)
    assert {"nn.conv2d", "nn.batch_norm", "nn.max_pool2d", "nn.dense"} <= text_ops


@pytest.mark.slow
@pytest.mark.parametrize("compiled", MODES)
def test_mobilenet(compiled):
    torch.manual_seed(0)
    model = _randomize_bn(MobileNetish())
    x = torch.randn(2, 3, 32, 32, generator=_gen(2))
    mod, _ = _parity(model, (x,), compiled=compiled)
    assert "nn.conv2d" in _ops(mod)


@pytest.mark.slow
@pytest.mark.parametrize("compiled", MODES)
def test_transformer_encoder(compiled):
    torch.manual_seed(0)
    x = torch.randn(2, 7, 32, generator=_gen(3))
    _parity(Encoder(), (x,), compiled=compiled)


@pytest.mark.slow
@pytest.mark.parametrize("compiled", MODES)
def test_lstm(compiled):
    torch.manual_seed(0)
    x = torch.randn(3, 6, 8, generator=_gen(4))
    _parity(LSTMNet(), (x,), compiled=compiled)


@pytest.mark.slow
@pytest.mark.parametrize("compiled", MODES)
def test_dynamic_batch(compiled):
    torch.manual_seed(0)
    model = _randomize_bn(ResNetish())
    batch = torch.export.Dim("batch", min=1, max=16)
    x = torch.randn(2, 3, 32, 32, generator=_gen(5))
    runs = [(torch.randn(n, 3, 32, 32, generator=_gen(6 + n)),) for n in (1, 3)]
    mod, _ = _parity(model, (x,), dynamic_shapes=({0: batch},), compiled=compiled, runs=runs)
    d = mod["main"].params[0].type_annotation.shape[0]
    assert d.name == "batch" and (d.min, d.max) == (1, 16)


class SlidingWindowScores(torch.nn.Module):
    """Attention scores masked outside a causal sliding window of positions (Gemma2's): the
    mask, index arithmetic on positions read per lane, is the matmul's fused epilogue."""

    def forward(self, q, k):
        i = torch.arange(q.shape[1])
        bad = (i[None, :] > i[:, None]) | (i[None, :] <= i[:, None] - 3)
        return (q @ k.transpose(1, 2)).masked_fill(bad, -1e4)


@pytest.mark.parametrize("compiled", MODES)
def test_sliding_window_mask_over_a_dynamic_sequence(compiled):
    seq = torch.export.Dim("seq", min=2, max=512)
    g = _gen(11)
    x = tuple(torch.randn(2, 37, 16, generator=g) for _ in range(2))
    runs = [tuple(torch.randn(2, n, 16, generator=g) for _ in range(2)) for n in (37, 50, 8)]
    _parity(
        SlidingWindowScores(), x, dynamic_shapes=({1: seq}, {1: seq}), compiled=compiled, runs=runs
    )


def _hf():
    return require("transformers")


@pytest.mark.slow
@pytest.mark.parametrize("compiled", MODES)
def test_bert(compiled):
    tf = _hf()
    torch.manual_seed(0)
    cfg = tf.BertConfig(
        vocab_size=120,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    model = tf.BertModel(cfg).eval()
    ids = torch.randint(0, 120, (2, 9), generator=_gen(7))
    mask = torch.ones(2, 9, dtype=torch.int64)
    mask[1, 6:] = 0
    _parity(model, (ids, mask), compiled=compiled)


@pytest.mark.slow
@pytest.mark.parametrize("compiled", MODES)
def test_gpt2(compiled):
    tf = _hf()
    torch.manual_seed(0)
    cfg = tf.GPT2Config(
        vocab_size=100, n_positions=32, n_embd=32, n_layer=2, n_head=4, use_cache=False
    )
    model = tf.GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(0, 100, (2, 10), generator=_gen(8))
    _parity(model, (ids,), compiled=compiled)


@pytest.mark.slow
def test_t5_encoder_inplace():
    """A T5 encoder's exported program still holds `aten.add_.Tensor`: it converts (the
    program is functionalised first) and the compiled module matches torch at two batches."""
    tf = _hf()
    from converters.pytorch.frontend import mutating_targets

    torch.manual_seed(0)
    cfg = tf.T5Config(vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4)
    model = tf.T5EncoderModel(cfg).eval()
    ids = torch.randint(0, 64, (2, 7), generator=_gen(9))
    batch = torch.export.Dim("batch", min=1, max=16)
    with torch.no_grad():
        ep = torch.export.export(model, (ids,), dynamic_shapes=({0: batch},))
    assert "aten.add_.Tensor" in mutating_targets(ep)
    lib = relay_core.build(from_pytorch(ep))
    for n in (1, 3):
        x = torch.randint(0, 64, (n, 7), generator=_gen(10 + n))
        with torch.no_grad():
            want = model(x).last_hidden_state
        got = lib(x.numpy())[0]
        assert got.shape == tuple(want.shape)
        assert rel_error([got], [want]) <= TOL


def _ops(mod) -> set[str]:
    from relay_core.ir import Call, Op, post_order

    return {
        n.op.name
        for n in post_order(mod["main"].body)
        if isinstance(n, Call) and isinstance(n.op, Op)
    }


def test_lstm_structure_small(monkeypatch):
    """A quick (not slow) LSTM check: over a sequence longer than UNROLL_MAX_STEPS (here made
    2) the recurrence is a recursive function over time steps, the batch stays symbolic, and
    the numbers match torch."""
    from converters.pytorch import ops_rnn
    from relay_core.ir import Function, If, post_order

    monkeypatch.setattr(ops_rnn, "UNROLL_MAX_STEPS", 2)
    torch.manual_seed(0)
    m = nn.LSTM(4, 5, batch_first=True).eval()
    batch = torch.export.Dim("batch", min=1, max=8)
    mod = from_pytorch(m, (torch.randn(2, 3, 4, generator=_gen(9)),), dynamic_shapes=({0: batch},))
    nodes = list(post_order(mod["main"].body))
    assert any(isinstance(n, If) for n in nodes)
    assert any(isinstance(n, Function) for n in nodes)
    assert str(mod["main"].checked_type.ret_type.fields[0].shape[0]) == "batch"
    for n in (1, 4):
        x = torch.randn(n, 3, 4, generator=_gen(10 + n))
        with torch.no_grad():
            want = m(x)
        assert rel_error(relay_core.evaluate(mod, x.numpy()), want) <= TOL


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_short_known_sequence_is_unrolled(kind):
    """A known sequence of at most UNROLL_MAX_STEPS steps becomes a static graph, as the ONNX
    converter makes it: no recursive function, one hidden projection per step and layer (the
    LSTM's and RNN's two biases joined outside the steps), and it matches torch compiled."""
    from converters.pytorch.ops_rnn import UNROLL_MAX_STEPS
    from relay_core.ir import Call, Function, If, Op, post_order

    torch.manual_seed(0)
    m = getattr(nn, kind)(6, 5, num_layers=2, batch_first=True).eval()
    steps = 7
    x = torch.randn(3, steps, 6, generator=_gen(11))
    mod = from_pytorch(m, (x,))
    nodes = list(post_order(mod["main"].body))
    assert not any(isinstance(n, (If, Function)) for n in nodes)
    calls = [n.op.name for n in nodes if isinstance(n, Call) and isinstance(n.op, Op)]
    assert calls.count("nn.dense") == 2 * (steps + 1)  # per layer: the input projection + steps
    if kind != "GRU":  # per layer: xW + (b_ih + b_hh), then the cell's adds at each step
        per_step = {"LSTM": 2, "RNN": 1}[kind]  # gates = x_t + hW; c' = f*c + i*g
        assert calls.count("add") == 2 * (2 + per_step * steps)
    with torch.no_grad():
        want = m(x)
    assert rel_error(relay_core.build(mod)(x.numpy()), want) <= TOL
    assert UNROLL_MAX_STEPS >= steps


@pytest.mark.parametrize("pool", ["avg", "max"])
def test_global_adaptive_pool_is_a_reduction(pool):
    """Adaptive pooling to 1x1 (the head of torchvision CNNs, squeeze-excitation blocks) is a
    mean / max over the spatial axes, as the ONNX exporter writes it (the generic adaptive
    pool is several times slower); the numbers match torch compiled."""
    torch.manual_seed(0)
    layer = nn.AdaptiveAvgPool2d(1) if pool == "avg" else nn.AdaptiveMaxPool2d((1, 1))
    m = nn.Sequential(nn.Conv2d(3, 4, 3), layer).eval()
    x = torch.randn(2, 3, 9, 8, generator=_gen(12))
    mod = from_pytorch(m, (x,))
    ops = _ops(mod)
    assert {"mean" if pool == "avg" else "max"} <= ops
    assert not any(o.startswith("nn.adaptive") for o in ops)
    with torch.no_grad():
        want = m(x)
    assert rel_error(relay_core.build(mod)(x.numpy()), want) <= TOL
