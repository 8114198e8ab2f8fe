"""Build the demo model shipped in examples/: a small CNN (conv-bn-relu blocks, a residual
connection, global pooling, a classifier) exported to ONNX with its weights.

    python examples/make_demo_model.py   # rewrites examples/demo_cnn.onnx

The weights come from a fixed seed, so the file is reproducible; it is committed so that
`make demo` needs no torch at run time.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.skip = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout
            else nn.Identity()
        )

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + self.skip(x))


class DemoCNN(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()
        )
        self.layer1 = Block(16, 16, 1)
        self.layer2 = Block(16, 32, 2)
        self.layer3 = Block(32, 64, 2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.layer3(self.layer2(self.layer1(self.stem(x))))
        return torch.softmax(self.fc(torch.flatten(self.pool(x), 1)), dim=1)


def build() -> nn.Module:
    torch.manual_seed(0)
    m = DemoCNN()
    with torch.no_grad():  # non-trivial batch-norm statistics, as in a trained model
        for mod in m.modules():
            if isinstance(mod, nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.2, 0.2)
                mod.running_var.uniform_(0.5, 1.5)
                mod.weight.uniform_(0.8, 1.2)
                mod.bias.uniform_(-0.1, 0.1)
    return m.eval()


def main(out: Path | None = None) -> Path:
    out = out or Path(__file__).resolve().parent / "demo_cnn.onnx"
    m = build()
    x = torch.randn(1, 3, 32, 32)
    torch.onnx.export(
        m,
        (x,),
        str(out),
        input_names=["image"],
        output_names=["probs"],
        opset_version=17,
        dynamo=False,
    )
    print(f"wrote {out} ({out.stat().st_size:,} bytes)")
    return out


if __name__ == "__main__":
    main()
