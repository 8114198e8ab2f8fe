"""The benchmark models, defined in PyTorch (exported to ONNX for onnxruntime), and the same
networks written directly in Relay with the PyTorch weights, used until the ONNX frontend can
import the exported files.

    resnet18     ResNet-18, 1x3x224x224
    mobilenetv2  MobileNetV2 (width 1.0), 1x3x224x224
    bert         BERT-like encoder: 4 layers, hidden 256, 4 heads, FFN 1024, sequence 128
    lstm         one-layer LSTM, input 64, hidden 128, 32 steps, batch 1 (unrolled)
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from relay_core.ir import Function, IRModule, call, const, var

# ---------------------------------------------------------------------------------------------
# PyTorch definitions.


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
        s = x if self.down is None else self.down(x)
        return torch.relu(y + s)


class ResNet18(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.pool = nn.MaxPool2d(3, 2, 1)
        layers = []
        cin = 64
        for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn1(self.conv1(x))))
        x = self.layers(x)
        x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        self.use_res = stride == 1 and cin == cout
        layers = []
        if expand != 1:
            layers += [nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6()]
        layers += [
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden),
            nn.ReLU6(),
            nn.Conv2d(hidden, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        ]
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        y = self.body(x)
        return x + y if self.use_res else y


class MobileNetV2(nn.Module):
    CFG = [
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    ]

    def __init__(self, classes=1000):
        super().__init__()
        layers = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6()]
        cin = 32
        for t, c, n, s in self.CFG:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers += [nn.Conv2d(cin, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.ReLU6()]
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(1280, classes)

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


class EncoderLayer(nn.Module):
    def __init__(self, d, heads, ffn):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d)
        self.ff1 = nn.Linear(d, ffn)
        self.ff2 = nn.Linear(ffn, d)
        self.ln2 = nn.LayerNorm(d)

    def forward(self, x):
        b, s, d = x.shape
        h = self.heads
        q, k, v = self.qkv(x).split(d, dim=-1)
        q = q.reshape(b, s, h, d // h).transpose(1, 2)
        k = k.reshape(b, s, h, d // h).transpose(1, 2)
        v = v.reshape(b, s, h, d // h).transpose(1, 2)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // h), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = self.ln1(x + self.out(y))
        return self.ln2(x + self.ff2(nn.functional.gelu(self.ff1(x))))


class BertLike(nn.Module):
    def __init__(self, d=256, heads=4, ffn=1024, layers=4):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d, heads, ffn) for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class LSTMModel(nn.Module):
    def __init__(self, inp=64, hidden=128):
        super().__init__()
        self.lstm = nn.LSTM(inp, hidden, batch_first=False)

    def forward(self, x):
        return self.lstm(x)[0]


def torch_models() -> dict:
    """name -> (module in eval mode, example input)."""
    torch.manual_seed(0)
    out = {
        "resnet18": (ResNet18(), torch.randn(1, 3, 224, 224)),
        "mobilenetv2": (MobileNetV2(), torch.randn(1, 3, 224, 224)),
        "bert": (BertLike(), torch.randn(1, 128, 256)),
        "lstm": (LSTMModel(), torch.randn(32, 1, 64)),
    }
    for m, _ in out.values():
        m.eval()
        for mod in m.modules():  # non-trivial batch-norm statistics
            if isinstance(mod, nn.BatchNorm2d):
                with torch.no_grad():
                    mod.running_mean.uniform_(-0.1, 0.1)
                    mod.running_var.uniform_(0.5, 1.5)
                    mod.weight.uniform_(0.5, 1.5)
                    mod.bias.uniform_(-0.1, 0.1)
    return out


# ---------------------------------------------------------------------------------------------
# The same networks in Relay (batch norm folded into the convolution, as exporters do).


def _np(t) -> np.ndarray:
    return t.detach().cpu().numpy().astype(np.float32)


def _conv_bn(x, conv: nn.Conv2d, bn: nn.BatchNorm2d | None):
    w = _np(conv.weight)
    b = _np(conv.bias) if conv.bias is not None else np.zeros(w.shape[0], np.float32)
    if bn is not None:
        s = _np(bn.weight) / np.sqrt(_np(bn.running_var) + bn.eps)
        w = w * s[:, None, None, None]
        b = (b - _np(bn.running_mean)) * s + _np(bn.bias)
    y = call(
        "nn.conv2d",
        x,
        const(w),
        strides=conv.stride,
        padding=conv.padding,
        groups=conv.groups,
        channels=w.shape[0],
        kernel_size=w.shape[2:],
    )
    return call("nn.bias_add", y, const(b))


def _dense(x, lin: nn.Linear):
    y = call("nn.dense", x, const(_np(lin.weight)))
    return call("nn.bias_add", y, const(_np(lin.bias)), axis=-1)


def _relu6(x):
    return call("clip", x, a_min=0.0, a_max=6.0)


def relay_resnet18(m: ResNet18, shape):
    x = var("input", shape)
    h = call("nn.relu", _conv_bn(x, m.conv1, m.bn1))
    h = call("nn.max_pool2d", h, pool_size=(3, 3), strides=(2, 2), padding=(1, 1))
    for blk in m.layers:
        y = call("nn.relu", _conv_bn(h, blk.conv1, blk.bn1))
        y = _conv_bn(y, blk.conv2, blk.bn2)
        s = h if blk.down is None else _conv_bn(h, blk.down[0], blk.down[1])
        h = call("nn.relu", call("add", y, s))
    h = call("nn.global_avg_pool2d", h)
    h = call("reshape", h, newshape=(shape[0], -1))
    return Function((x,), _dense(h, m.fc))


def relay_mobilenetv2(m: MobileNetV2, shape):
    x = var("input", shape)
    feats = list(m.features)
    h = _relu6(_conv_bn(x, feats[0], feats[1]))
    for blk in feats[3:-3]:
        mods = list(blk.body)
        y = h
        k = 0
        while k < len(mods):
            conv, bn = mods[k], mods[k + 1]
            y = _conv_bn(y, conv, bn)
            if k + 2 < len(mods) and isinstance(mods[k + 2], nn.ReLU6):
                y = _relu6(y)
                k += 3
            else:
                k += 2
        h = call("add", h, y) if blk.use_res else y
    h = _relu6(_conv_bn(h, feats[-3], feats[-2]))
    h = call("nn.global_avg_pool2d", h)
    h = call("reshape", h, newshape=(shape[0], -1))
    return Function((x,), _dense(h, m.fc))


def _layer_norm(x, ln: nn.LayerNorm):
    return call("nn.layer_norm", x, const(_np(ln.weight)), const(_np(ln.bias)), epsilon=ln.eps)


def relay_bert(m: BertLike, shape):
    b, s, d = shape
    x = var("input", shape)
    h = x
    for layer in m.layers:
        heads = layer.heads
        dh = d // heads
        qkv = _dense(call("reshape", h, newshape=(b * s, d)), layer.qkv)
        parts = call("split", qkv, indices_or_sections=3, axis=-1)

        def heads_of(t, heads=heads, dh=dh):
            t = call("reshape", t, newshape=(b, s, heads, dh))
            return call("transpose", t, axes=(0, 2, 1, 3))

        q, k, v = (heads_of(parts[i]) for i in range(3))
        scores = call(
            "nn.batch_matmul",
            call("reshape", q, newshape=(b * heads, s, dh)),
            call("reshape", k, newshape=(b * heads, s, dh)),
            transpose_b=True,
        )
        scores = call("multiply", scores, const(np.float32(1 / math.sqrt(dh))))
        att = call("nn.softmax", scores, axis=-1)
        y = call(
            "nn.batch_matmul",
            att,
            call("reshape", v, newshape=(b * heads, s, dh)),
            transpose_b=False,
        )
        y = call("reshape", y, newshape=(b, heads, s, dh))
        y = call("reshape", call("transpose", y, axes=(0, 2, 1, 3)), newshape=(b * s, d))
        y = _dense(y, layer.out)
        h = _layer_norm(call("add", call("reshape", h, newshape=(b * s, d)), y), layer.ln1)
        f = call("nn.gelu", _dense(h, layer.ff1))
        h = _layer_norm(call("add", h, _dense(f, layer.ff2)), layer.ln2)
        h = call("reshape", h, newshape=(b, s, d))
    return Function((x,), h)


def relay_lstm(m: LSTMModel, shape):
    steps, b, inp = shape
    lstm = m.lstm
    hdim = lstm.hidden_size
    x = var("input", shape)
    w_ih, w_hh = const(_np(lstm.weight_ih_l0)), const(_np(lstm.weight_hh_l0))
    bias = const(_np(lstm.bias_ih_l0) + _np(lstm.bias_hh_l0))
    h = const(np.zeros((b, hdim), np.float32))
    c = const(np.zeros((b, hdim), np.float32))
    # input projections of every step in one product
    xs = call("reshape", x, newshape=(steps * b, inp))
    xp = call(
        "reshape",
        call("nn.bias_add", call("nn.dense", xs, w_ih), bias, axis=-1),
        newshape=(steps, b, 4 * hdim),
    )
    outs = []
    for t in range(steps):
        g = call(
            "add",
            call("squeeze", call("strided_slice", xp, begin=(t,), end=(t + 1,)), axis=(0,)),
            call("nn.dense", h, w_hh),
        )
        i, f, gg, o = (
            call("strided_slice", g, begin=(k * hdim,), end=((k + 1) * hdim,), axes=(1,))
            for k in range(4)
        )
        c = call(
            "add",
            call("multiply", call("sigmoid", f), c),
            call("multiply", call("sigmoid", i), call("tanh", gg)),
        )
        h = call("multiply", call("sigmoid", o), call("tanh", c))
        outs.append(call("expand_dims", h, axis=0))
    return Function((x,), call("concatenate", *outs, axis=0))


RELAY_BUILDERS = {
    "resnet18": relay_resnet18,
    "mobilenetv2": relay_mobilenetv2,
    "bert": relay_bert,
    "lstm": relay_lstm,
}


def relay_module(name: str, model, example) -> IRModule:
    from relay_core import infer_type

    fn = RELAY_BUILDERS[name](model, tuple(example.shape))
    return infer_type(IRModule.from_expr(fn))
