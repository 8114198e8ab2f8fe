"""The `.pt2` fast path (converters/pytorch/pt2_graph.py) against torch's own deserializer: the
same archive read both ways converts to the same Relay module, node names and source map; what
the fast reader does not handle goes to torch's deserializer with no error."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from tests.require import require

torch = require("torch")

import relay_core  # noqa: E402
from converters.pytorch import from_pytorch, loader  # noqa: E402
from converters.pytorch.frontend import decompose_unsupported, functionalize  # noqa: E402
from converters.pytorch.importer import TorchImporter  # noqa: E402
from converters.pytorch.pt2_graph import SCHEMA_MAJOR, SCHEMA_MAX_MINOR, FastProgram  # noqa: E402
from relay_core.errors import ModelLoadError  # noqa: E402

from .harness import assert_close  # noqa: E402


class InPlace(torch.nn.Module):
    def forward(self, x):
        y = x * 2.0
        y.relu_()
        y += 1.0
        return y.sigmoid_()


class BuffersAndConstants(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.linspace(-1, 1, 12).reshape(3, 4))
        self.register_buffer("scale", torch.arange(1.0, 5.0))
        self.register_buffer("shift", torch.full((4,), 0.5), persistent=False)
        self.table = torch.tensor([3.0, 1.0, 4.0, 1.0])  # a lifted tensor constant

    def forward(self, x):
        return torch.tanh(x * self.w + self.scale) - self.shift + self.table


class MultiOutput(torch.nn.Module):
    def forward(self, x):
        values, index = torch.max(x, dim=1)
        a, b = torch.split(x, [1, 3], dim=1)
        return {"values": values, "index": index, "parts": (a * 2, b.mean(dim=1))}


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.layer(x)


class _Basic(torch.nn.Module):
    """A ResNet basic block (torchvision's shape), with a strided 1x1 downsample when asked."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = torch.nn.BatchNorm2d(cout)
        self.c2 = torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = torch.nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = torch.nn.Sequential(
                torch.nn.Conv2d(cin, cout, 1, stride, bias=False), torch.nn.BatchNorm2d(cout)
            )

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNetStyle(torch.nn.Module):
    """torchvision's ResNet layout in small: 7x7 stem, max pool, basic blocks, pooled head
    (batch-norm buffers incl. num_batches_tracked, in-place relu as torchvision writes it)."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 7, 2, 3, bias=False)
        self.bn = torch.nn.BatchNorm2d(8)
        self.pool = torch.nn.MaxPool2d(3, 2, 1)
        self.blocks = torch.nn.Sequential(_Basic(8, 8, 1), _Basic(8, 16, 2))
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool(torch.nn.functional.relu(self.bn(self.stem(x)), inplace=True))
        x = torch.nn.functional.adaptive_avg_pool2d(self.blocks(x), 1)
        return self.fc(torch.flatten(x, 1))


def _resnet_style():
    torch.manual_seed(0)
    m = ResNetStyle().eval()
    for mod in m.modules():  # non-trivial batch-norm statistics
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 1.5)
    return m, (torch.randn(1, 3, 64, 64),)


MODELS = {
    "resnet_style": _resnet_style,
    "transformer_block": lambda: (Block().eval(), (torch.randn(2, 5, 16),)),
    "inplace": lambda: (InPlace(), (torch.randn(3, 4),)),
    "buffers_constants": lambda: (BuffersAndConstants(), (torch.randn(3, 4),)),
    "multi_output": lambda: (MultiOutput(), (torch.randn(2, 4),)),
}


def _save(tmp_path, name):
    module, args = MODELS[name]()
    torch.manual_seed(0)
    with torch.no_grad():
        ep = torch.export.export(module.eval(), args)
    path = tmp_path / f"{name}.pt2"
    torch.export.save(ep, str(path))
    return path, module, args


def _convert(ep):
    ep = decompose_unsupported(functionalize(ep, {}), {})
    imp = TorchImporter(ep)
    imp.check_supported()
    return imp.convert()


def _assert_same(fast_mod, slow_mod):
    assert relay_core.structural_equal(fast_mod, slow_mod)
    assert str(fast_mod) == str(slow_mod)
    for key in ("input_names", "output_names", "source_nodes"):
        assert fast_mod.attrs[key] == slow_mod.attrs[key], key
    assert list(fast_mod.attrs["source_outputs"]) == list(slow_mod.attrs["source_outputs"])


@pytest.mark.parametrize("name", sorted(MODELS))
def test_fast_path_matches_torch_deserializer(tmp_path, name):
    path, module, args = _save(tmp_path, name)
    fast = loader.load_pt2(path, fast=True)
    assert isinstance(fast, FastProgram), "the fast path should take this program"
    slow = loader.load_pt2(path)
    assert isinstance(slow, torch.export.ExportedProgram)
    fast_mod = _convert(fast)
    assert fast._ep is None, "conversion should not have needed torch's deserializer"
    _assert_same(fast_mod, _convert(slow))
    # and the numbers are torch's
    from converters.pytorch.outputs import flatten_outputs

    with torch.no_grad():
        want = flatten_outputs(module(*args))
    got = relay_core.evaluate(fast_mod, *[a.numpy() for a in args])
    got = got if isinstance(got, (list, tuple)) else [got]
    got = _flatten(got)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_close(np.asarray(g), w, 1e-4, 1e-4)


def _flatten(v):
    out = []
    stack = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(reversed(x))
        else:
            out.append(x)
    return out


def test_fast_program_builds_torchs_program_on_demand(tmp_path):
    path, module, (x,) = _save(tmp_path, "buffers_constants")
    fast = loader.load_pt2(path, fast=True)
    assert isinstance(fast, FastProgram)
    with torch.no_grad():  # module() needs the real ExportedProgram
        assert_close(fast.module()(x), module(x), 1e-6, 1e-6)
    assert isinstance(fast.exported_program(), torch.export.ExportedProgram)


def _edit_program(path, edit):
    with zipfile.ZipFile(path) as z:
        files = {n: z.read(n) for n in z.namelist()}
    member = next(n for n in files if "/models/" in n and n.endswith(".json"))
    program = json.loads(files[member])
    edit(program)
    files[member] = json.dumps(program).encode()
    with zipfile.ZipFile(path, "w") as z:
        for n, data in files.items():
            z.writestr(n, data)


@pytest.mark.parametrize(
    "version",
    [
        {"major": SCHEMA_MAJOR, "minor": SCHEMA_MAX_MINOR + 1},
        {"major": SCHEMA_MAJOR - 1, "minor": 0},
    ],
)
def test_other_schema_version_falls_back(tmp_path, version):
    path, module, (x,) = _save(tmp_path, "buffers_constants")
    slow_mod = _convert(loader.load_pt2(path))

    def edit(program):
        program["schema_version"] = version

    _edit_program(path, edit)
    if version["major"] != SCHEMA_MAJOR:  # torch itself refuses another major version
        with pytest.raises(ModelLoadError, match="cannot rebuild the exported program"):
            loader.load_pt2(path, fast=True)
        return
    prog = loader.load_pt2(path, fast=True)
    assert isinstance(prog, torch.export.ExportedProgram)  # torch's deserializer read it
    _assert_same(_convert(prog), slow_mod)
    got = relay_core.evaluate(from_pytorch(str(path)), x.numpy())
    assert_close(got, module(x), 1e-6, 1e-6)


def test_unknown_field_falls_back(tmp_path):
    path, _, _ = _save(tmp_path, "inplace")
    slow_mod = _convert(loader.load_pt2(path))

    def edit(program):
        program["graph_module"]["graph"]["nodes"][0]["a_field_from_the_future"] = 1

    _edit_program(path, edit)
    prog = loader.load_pt2(path, fast=True)
    assert isinstance(prog, torch.export.ExportedProgram)  # torch's deserializer read it
    _assert_same(_convert(prog), slow_mod)


def test_dynamic_shapes_take_torchs_path(tmp_path):
    batch = torch.export.Dim("batch", min=1, max=32)
    ep = torch.export.export(InPlace(), (torch.randn(3, 4),), dynamic_shapes=({0: batch},))
    path = tmp_path / "dyn.pt2"
    torch.export.save(ep, str(path))
    prog = loader.load_pt2(path, fast=True)
    assert isinstance(prog, torch.export.ExportedProgram)
    x = torch.randn(5, 4)
    assert_close(relay_core.evaluate(from_pytorch(str(path)), x.numpy()), InPlace()(x), 1e-6, 1e-6)


def test_truncated_pt2_is_a_clear_error(tmp_path):
    path, _, _ = _save(tmp_path, "inplace")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelLoadError, match=r"not a (valid|torch.export) \.pt2 archive"):
        from_pytorch(str(path))


def test_malformed_node_in_fast_path_is_a_clear_error(tmp_path):
    path, _, _ = _save(tmp_path, "inplace")

    def edit(program):
        node = program["graph_module"]["graph"]["nodes"][1]
        node["inputs"][0]["arg"] = {"as_tensor": {"name": "no_such_value"}}

    _edit_program(path, edit)
    with pytest.raises(ModelLoadError):
        from_pytorch(str(path))


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(16, 4, batch_first=True)
        self.norm = torch.nn.LayerNorm(16)

    def forward(self, x):
        y, _ = self.mha(x, x, x)
        return self.norm(x + y).softmax(-1)


def test_core_aten_program_matches_torch_deserializer(tmp_path):
    """A program lowered to core ATen (run_decompositions): multi-output ops with getitems,
    views with size lists, addmm, _softmax."""
    torch.manual_seed(0)
    module, x = Attention().eval(), torch.randn(2, 5, 16)
    ep = torch.export.export(module, (x,)).run_decompositions()
    path = tmp_path / "core.pt2"
    torch.export.save(ep, str(path))
    fast = loader.load_pt2(path, fast=True)
    assert isinstance(fast, FastProgram)
    fast_mod = _convert(fast)
    assert fast._ep is None
    _assert_same(fast_mod, _convert(loader.load_pt2(path)))
    with torch.no_grad():
        want = module(x)
    assert_close(relay_core.evaluate(fast_mod, x.numpy()), want, 1e-4, 1e-4)
