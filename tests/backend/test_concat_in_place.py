"""A concatenation whose parts are contiguous ranges of its result (only size-1 axes before the
axis: channels at batch 1) costs no copy in the static graph: the steps that produce the parts
write them into the result (graph.GraphCompiler._elide_concats). Compiled against numpy: parts
computed far apart, nested concatenations, a part read by other steps too, a value in two
concatenations; and the cases that keep the copy (a batch of 2 of parts no convolution writes,
an input, a repeated part, a part not 64-byte aligned, a part or the result as an output).
At batch > 1 the convolution kernels write their parts strided into the result (each path,
with epilogues reading residuals), other parts are copied image by image; fused nested
concatenations; torch blocks (fire modules, an Inception block) exported to ONNX against
onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from relay_core.ir import Tuple, call, const, var
from tests.backend.support import build_function

RNG = np.random.default_rng(11)


def _concat_steps(lib) -> int:
    return sum("concatenate" in s["ops"] for s in lib.manifest["steps"])


def _cat(*parts, axis=1):
    return call("concatenate", *parts, axis=axis)


class _Affine:
    """relu(dense(x, w) + b) over the last axis: a kernel of its own (a product does not fuse
    with the concatenation after it) whose output is a workspace value."""

    def __init__(self, shape):
        self.w = RNG.standard_normal((shape[-1], shape[-1])).astype("float32")
        self.b = RNG.standard_normal(shape[-1]).astype("float32")

    def __call__(self, x):
        return call("nn.relu", call("add", call("nn.dense", x, const(self.w)), const(self.b)))

    def want(self, x):
        return np.maximum(x @ self.w.T + self.b, 0)


def _x(shape):
    return var("x", shape), RNG.standard_normal(shape).astype("float32")


def _double(v):
    return call("multiply", v, const(np.float32(2.0)))


# A reader of the concatenation that does not fuse with it (an elementwise one would, and the
# group would compute more than the concatenation).
READ = _Affine((1, 4))


@pytest.mark.parametrize("axis", [1, 2])
def test_parts_written_in_place(axis):
    """Three parts, the second computed after a chain of other values (its lifetime overlaps
    theirs), concatenated and read by a consumer: no copy."""
    shape = (1, 16, 8, 4) if axis == 1 else (1, 1, 16, 4)
    x, xs = _x(shape)
    f, g, h, k = (_Affine(shape) for _ in range(4))
    a = f(x)
    mid = g(h(_double(x)))  # values alive while `a` waits for its concatenation
    c = k(mid)
    y = READ(_cat(a, mid, c, axis=axis))
    lib = build_function([x], y)
    m = g.want(h.want(2 * xs))
    want = READ.want(np.concatenate([f.want(xs), m, k.want(m)], axis=axis))
    np.testing.assert_allclose(lib(xs)[0], want, rtol=1e-5, atol=1e-5)
    assert _concat_steps(lib) == 0


def test_nested_and_shared():
    """concat(concat(a, b), c): both in place (the inner result a view of the outer, its parts
    views of views), the inner one also read by a step of its own; `a` also a part of a later
    concatenation, which copies it."""
    shape = (1, 16, 4, 4)
    x, xs = _x(shape)
    f, g, k, m = (_Affine(shape) for _ in range(4))
    a, b = f(x), g(x)
    inner = _cat(a, b)
    outer = _cat(inner, k(b))
    again = _cat(a, m(b))
    lib = build_function([x], Tuple((READ(outer), READ(inner), READ(again))))
    av, bv = f.want(xs), g.want(xs)
    wants = [
        np.concatenate([av, bv, k.want(bv)], axis=1),
        np.concatenate([av, bv], axis=1),
        np.concatenate([av, m.want(bv)], axis=1),
    ]
    for got, want in zip(lib(xs), wants):
        np.testing.assert_allclose(got, READ.want(want), rtol=1e-5, atol=1e-5)
    assert _concat_steps(lib) == 1  # `again`: its part `a` is already a part of `inner`


@pytest.mark.parametrize(
    "case",
    ["batch2", "input_part", "repeated", "unaligned", "part_is_output", "result_is_output"],
)
def test_copies_kept(case):
    shape = {"batch2": (2, 16, 4, 4), "unaligned": (1, 3, 3, 4)}.get(case, (1, 16, 4, 4))
    x, xs = _x(shape)
    f, g = _Affine(shape), _Affine(shape)
    a, b = f(x), g(x)
    av, bv = f.want(xs), g.want(xs)
    parts, want_parts = (a, b), [av, bv]
    if case == "input_part":
        parts, want_parts = (a, x), [av, xs]
    elif case == "repeated":
        parts, want_parts = (a, a), [av, av]
    cat = _cat(*parts)
    want = np.concatenate(want_parts, axis=1)
    if case == "part_is_output":
        lib = build_function([x], Tuple((READ(cat), a)))
        got = lib(xs)
        np.testing.assert_allclose(got[1], av, rtol=1e-6)
        got = got[0]
        want = READ.want(want)
    elif case == "result_is_output":
        lib = build_function([x], cat)
        got = lib(xs)[0]
    else:
        lib = build_function([x], READ(cat))
        got = lib(xs)[0]
        want = READ.want(want)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert _concat_steps(lib) == 1


# -- batch > 1: the parts' kernels write their images into the result (strided) ----------------


class _Conv:
    """relu(conv2d(x, w) + b [+ residual]): a convolution kernel with its epilogue."""

    def __init__(self, cin, cout, k):
        self.w = (RNG.standard_normal((cout, cin, k, k)) / (cin * k * k) ** 0.5).astype("float32")
        self.b = RNG.standard_normal((1, cout, 1, 1)).astype("float32")
        self.pad = k // 2

    def __call__(self, x, residual=None):
        p = self.pad
        y = call("add", call("nn.conv2d", x, const(self.w), padding=(p, p)), const(self.b))
        if residual is not None:
            y = call("add", y, residual)
        return call("nn.relu", y)

    def want(self, x, residual=None):
        import torch

        y = torch.nn.functional.conv2d(
            torch.from_numpy(x).double(), torch.from_numpy(self.w).double(), padding=self.pad
        ).numpy()
        y = y + self.b
        if residual is not None:
            y = y + residual
        return np.maximum(y, 0)


@pytest.mark.parametrize("force", [None, "strips", "pointwise", "winograd", "im2col"])
@pytest.mark.parametrize("plane", [(20, 20), (8, 8)])
def test_parts_strided_at_batch(monkeypatch, force, plane):
    """A channel concatenation at batch 3 of a 1x1 and a 3x3 convolution (each with its bias
    and relu; the 3x3 one with a residual input too, which its epilogue reads at logical
    indices) and a max pool: the convolutions write their images into the result (strided),
    the pool's output is copied image by image, and no concatenation kernel runs. Planes of
    400 and 64 positions take the pointwise / strips / Winograd paths by default; each path
    forced; im2col (which writes contiguously) keeps the concatenation."""
    import relay_core.backend.kernels.conv as conv_mod

    monkeypatch.setattr(conv_mod, "FORCE", force)
    shape = (3, 16, *plane)
    x, xs = _x(shape)
    r, rs = var("r", (3, 32, *plane)), RNG.standard_normal((3, 32, *plane)).astype("float32")
    f, g, read = _Conv(16, 32, 1), _Conv(16, 32, 3), _Conv(80, 8, 1)
    pool = call("nn.max_pool2d", x, pool_size=(3, 3), strides=(1, 1), padding=(1, 1))
    y = read(_cat(f(x), g(x, r), pool))
    lib = build_function([x, r], y)
    import torch

    pv = torch.nn.functional.max_pool2d(torch.from_numpy(xs), 3, 1, 1).numpy()
    want = read.want(np.concatenate([f.want(xs), g.want(xs, rs), pv], axis=1))
    np.testing.assert_allclose(lib(xs, rs)[0], want, rtol=1e-4, atol=1e-4)
    kernels = [s["kernel"] for s in lib.manifest["steps"] if "concatenate" in s["ops"]]
    if force == "im2col":
        assert len(kernels) == 1 and kernels[0] != "copy"  # every part contiguous: the kernel
    else:
        assert kernels == ["copy"]  # only the pool's part is copied


def test_strided_part_read_twice_is_copied():
    """A convolution whose value is also read elsewhere is not written strided (the other
    reader needs it contiguous): the concatenation copies it."""
    shape = (2, 16, 8, 8)
    x, xs = _x(shape)
    f, g, read = _Conv(16, 16, 1), _Conv(16, 16, 1), _Conv(32, 4, 1)
    a, b = f(x), g(x)
    lib = build_function([x], Tuple((read(_cat(a, b)), call("negative", a))))
    av, bv = f.want(xs), g.want(xs)
    got = lib(xs)
    want = read.want(np.concatenate([av, bv], axis=1))
    np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[1], -av, rtol=1e-4, atol=1e-4)
    kernels = [s["kernel"] for s in lib.manifest["steps"] if "concatenate" in s["ops"]]
    assert kernels == ["copy"]  # b in place, a copied


@pytest.mark.parametrize("batch", [1, 2])
def test_fused_nested_concatenations(batch):
    """concat(a, concat(b, c), concat(d, e)) whose inner concatenations only feed the outer
    one: FuseOps makes them one group (Inception-v3's last blocks), whose parameters are not in
    the order of the parts; all five convolutions write into the result."""
    shape = (batch, 16, 8, 8)
    x, xs = _x(shape)
    convs = [_Conv(16, 16, k) for k in (1, 3, 1, 3, 1)]
    read = _Conv(80, 4, 1)
    a, b, c, d, e = (f(x) for f in convs)
    lib = build_function([x], read(_cat(a, _cat(b, c), _cat(d, e))))
    want = read.want(np.concatenate([f.want(xs) for f in convs], axis=1))
    np.testing.assert_allclose(lib(xs)[0], want, rtol=1e-4, atol=1e-4)
    assert _concat_steps(lib) == 0


def _torch_blocks():
    """A SqueezeNet fire module and an Inception-v3-like block (a max-pool branch, and two
    branches that concatenate a 1x3 and a 3x1 convolution), in torch."""
    import torch
    from torch import nn

    def cbr(cin, cout, k, **kw):
        return nn.Sequential(nn.Conv2d(cin, cout, k, **kw), nn.BatchNorm2d(cout), nn.ReLU())

    class Fire(nn.Module):
        def __init__(self, cin, sq, ex):
            super().__init__()
            self.sq, self.e1, self.e3 = cbr(cin, sq, 1), cbr(sq, ex, 1), cbr(sq, ex, 3, padding=1)

        def forward(self, x):
            s = self.sq(x)
            return torch.cat([self.e1(s), self.e3(s)], 1)

    class Mixed(nn.Module):
        def __init__(self, cin):
            super().__init__()
            self.b1, self.b3 = cbr(cin, 32, 1), cbr(cin, 32, 1)
            self.b3a, self.b3b = (
                cbr(32, 32, (1, 3), padding=(0, 1)),
                cbr(32, 32, (3, 1), padding=(1, 0)),
            )
            self.d = cbr(cin, 32, 3, padding=1)
            self.da, self.db = (
                cbr(32, 16, (1, 3), padding=(0, 1)),
                cbr(32, 16, (3, 1), padding=(1, 0)),
            )
            self.pool = nn.MaxPool2d(3, 1, 1)

        def forward(self, x):
            b3, d = self.b3(x), self.d(x)
            parts = [self.b1(x), torch.cat([self.b3a(b3), self.b3b(b3)], 1)]
            parts += [torch.cat([self.da(d), self.db(d)], 1), self.pool(x)]
            return torch.cat(parts, 1)

    net = nn.Sequential(cbr(3, 32, 3, stride=2), Fire(32, 16, 32), Fire(64, 16, 32), Mixed(64))
    net = nn.Sequential(*net, nn.Conv2d(192, 8, 1))
    torch.manual_seed(0)
    net.train()
    with torch.no_grad():  # batch statistics as training leaves them: activations of O(1)
        for m in net.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.momentum = None
        net(torch.randn(4, 3, 40, 40))
    return net.eval()


@pytest.mark.slow
@pytest.mark.parametrize("batch", [1, 3])
def test_torch_blocks_static_batch(tmp_path, batch):
    """Fire modules and an Inception block exported from torch with a static batch
    (torch.onnx.export), loaded and compiled with no options, against onnxruntime on the same
    file: every concatenation is written in place, but for the max-pool part at batch 3,
    copied image by image."""
    import onnxruntime as ort
    import torch

    import relay_import as ri

    net = _torch_blocks()
    x = torch.randn(batch, 3, 40, 40)
    path = str(tmp_path / "blocks.onnx")
    with torch.no_grad():
        torch.onnx.export(net, (x,), path, input_names=["x"], output_names=["y"])
    lib = ri.compile(ri.load(path))
    xs = x.numpy()
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": xs})[0]
    assert float(np.abs(want).std()) > 0.1  # activations of O(1): parity is not vacuous
    np.testing.assert_allclose(lib(xs)[0], want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
    kernels = [s["kernel"] for s in lib.manifest["steps"] if "concatenate" in s["ops"]]
    assert kernels == ([] if batch == 1 else ["copy"])
