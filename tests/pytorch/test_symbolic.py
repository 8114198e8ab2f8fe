"""Symbolic sizes: size arithmetic converters (operator / math / torch.sym_*) against Python's
own operators, and models whose shapes depend on a Dim, at several sizes."""

from __future__ import annotations

import math
import operator

import numpy as np
import pytest

from tests.require import require

torch = require("torch")

import relay_core  # noqa: E402
from converters.pytorch import TORCH, from_pytorch  # noqa: E402
from converters.pytorch.context import TorchContext  # noqa: E402
from relay_core.ir import Function, TensorType, Var  # noqa: E402

from .harness import assert_close, graph_targets  # noqa: E402

_PY = {
    "operator.add": operator.add,
    "operator.sub": operator.sub,
    "operator.mul": operator.mul,
    "operator.floordiv": operator.floordiv,
    "operator.mod": operator.mod,
    "operator.truediv": operator.truediv,
    "operator.pow": operator.pow,
    "operator.eq": operator.eq,
    "operator.ne": operator.ne,
    "operator.lt": operator.lt,
    "operator.le": operator.le,
    "operator.gt": operator.gt,
    "operator.ge": operator.ge,
    "operator.and_": operator.and_,
    "operator.or_": operator.or_,
    "operator.xor": operator.xor,
    "operator.neg": operator.neg,
    "operator.abs": operator.abs,
    "operator.not_": operator.not_,
    "math.sqrt": math.sqrt,
    "math.ceil": math.ceil,
    "math.floor": math.floor,
    "math.trunc": math.trunc,
    "torch.sym_max": max,
    "torch.sym_min": min,
    "torch.sym_not": operator.not_,
    "torch.sym_float": float,
    "torch.sym_int": int,
    "torch._sym_sqrt": math.sqrt,
    "torch.sym_ite": lambda b, t, f: t if b else f,
}
_BOOL = {"operator.and_", "operator.or_", "operator.xor", "operator.not_", "torch.sym_not"}
_FLOAT_IN = {
    "math.sqrt",
    "math.ceil",
    "math.floor",
    "math.trunc",
    "torch.sym_int",
    "torch._sym_sqrt",
}

SIZE_OPS = sorted(
    n for n in TORCH.names() if n.split(".")[0] in ("operator", "math") or n.startswith("torch.")
)


def _values(name):
    if name in _BOOL:
        return [True, False]
    if name in _FLOAT_IN:
        return [2.25, 7.5, -3.5] if name not in ("math.sqrt", "torch._sym_sqrt") else [2.25, 9.0]
    if name == "operator.pow":
        return [3, 2]
    return [7, -3, 2]


def _run(name, args, symbolic):
    """Apply the converter with the chosen args as Relay scalars; evaluate."""
    ctx = TorchContext()
    params, vals = [], []
    for i, a in enumerate(args):
        if i in symbolic:
            d = "bool" if isinstance(a, bool) else ("int64" if isinstance(a, int) else "float32")
            v = Var(f"a{i}", TensorType((), d))
            params.append(
                (
                    v,
                    np.asarray(
                        a, dtype={"bool": bool, "int64": np.int64, "float32": np.float32}[d]
                    ),
                )
            )
            vals.append(v)
        else:
            vals.append(a)
    out = TORCH.lookup(name)(ctx, *vals)
    if not params:
        return out
    f = Function(tuple(p for p, _ in params), ctx.expr(out))
    return relay_core.evaluate(f, *[x for _, x in params])


# torch.sym_sum takes a list, not the scalar arguments this test feeds
@pytest.mark.parametrize("name", [n for n in SIZE_OPS if n in _PY and n != "torch.sym_sum"])
def test_size_arithmetic_matches_python(name):
    import inspect

    fn = TORCH.lookup(name)
    nparams = len(inspect.signature(fn).parameters) - 1
    vals = _values(name)
    cases = []
    if nparams == 1:
        cases = [(v,) for v in vals]
    elif nparams == 2:
        cases = [
            (a, b)
            for a in vals
            for b in vals
            if not (name in ("operator.floordiv", "operator.mod", "operator.truediv") and b == 0)
        ]
    else:
        cases = [(c, 4, 9) for c in (True, False)]
    for args in cases:
        want = _PY[name](*args)
        for symbolic in [set(range(len(args))), {0}]:
            if name == "torch.sym_ite" and 0 not in symbolic:
                continue
            got = _run(name, args, symbolic)
            np.testing.assert_allclose(
                np.asarray(got, dtype=np.float64),
                np.float64(want),
                rtol=1e-6,
                err_msg=f"{name}{args} symbolic={symbolic}",
            )


def test_sym_sum():
    ctx = TorchContext()
    v = Var("n", TensorType((), "int64"))
    out = TORCH.lookup("torch.sym_sum")(ctx, [v, 3, v])
    assert int(relay_core.evaluate(Function((v,), out), np.int64(5))) == 13


def test_every_size_op_is_checked():
    untested = [
        n for n in SIZE_OPS if n not in _PY and n not in ("operator.getitem", "torch.sym_sum")
    ]
    assert not untested, untested


# -- models with symbolic shapes -------------------------------------------------------------------

Dim = torch.export.Dim


class ShapeMath(torch.nn.Module):
    def forward(self, x):
        b, n = x.shape[0], x.shape[1]
        y = x.reshape(b * n // 2, 2)  # mul, floordiv
        z = x[:, : n - 1]  # sub inside a slice
        s = torch.ops.aten.sym_size.int(x, 0)
        return y * 2.0, z.sum(-1) * s, x.flatten() + x.numel()


class StrideMath(torch.nn.Module):
    def forward(self, x):
        return x * x.stride(0) + torch.ops.aten.sym_storage_offset.default(x)


class DynamicViews(torch.nn.Module):
    def forward(self, x, y):
        b = x.shape[0]
        e = y.expand(b, -1, -1)  # expand to a symbolic size
        t = x.transpose(1, 2).reshape(b, -1)
        return e + 1.0, t, torch.zeros(b, 3) + x.shape[1], x.new_ones(b).sum()


def _check_dynamic(model, args, dyn, sizes, make):
    ep = torch.export.export(model, args, dynamic_shapes=dyn)
    mod = from_pytorch(ep)
    for n in sizes:
        inputs = make(n)
        with torch.no_grad():
            want = model(*inputs)
        got = relay_core.evaluate(mod, *[t.numpy() for t in inputs])
        assert_close(got, want, 1e-6, 1e-6, where=f"size {n}")
    return graph_targets(ep)


def test_shape_arithmetic_model():
    b, n = Dim("b", min=1, max=16), Dim("n", min=2, max=32)
    seen = _check_dynamic(
        ShapeMath(),
        (torch.randn(3, 6),),
        ({0: b, 1: 2 * n},),
        [(2, 4), (5, 10)],
        lambda s: (torch.randn(*s),),
    )
    assert "aten.sym_size.int" in seen
    assert {"operator.mul", "operator.floordiv", "operator.sub"} & seen


def test_stride_and_numel_model():
    n = Dim("n", min=2, max=16)
    seen = _check_dynamic(
        StrideMath(), (torch.randn(3, 5),), ({1: n},), [2, 7], lambda k: (torch.randn(3, k),)
    )
    assert "aten.sym_size.int" in seen


def test_dynamic_views_model():
    b = Dim("b", min=2, max=16)
    seen = _check_dynamic(
        DynamicViews(),
        (torch.randn(3, 4, 5), torch.randn(1, 4, 5)),
        ({0: b}, None),
        [2, 6],
        lambda n: (torch.randn(n, 4, 5), torch.randn(1, 4, 5)),
    )
    assert "aten.expand.default" in seen


def test_sym_numel_model():
    class M(torch.nn.Module):
        def forward(self, x):
            return x / torch.ops.aten.sym_numel.default(x)

    b = Dim("b", min=2, max=16)
    seen = _check_dynamic(
        M(), (torch.randn(3, 5),), ({0: b},), [2, 9], lambda n: (torch.randn(n, 5),)
    )
    assert "aten.sym_numel.default" in seen or "aten.sym_size.int" in seen


def test_size_queries_on_a_symbolic_tensor():
    """sym_size / sym_numel / sym_stride / sym_storage_offset / sym_is_contiguous on a tensor
    whose first dim is a ShapeVar, against torch's answers for a real tensor."""
    from relay_core.ir import ShapeVar

    x = Var("x", TensorType((ShapeVar("n"), 5, 3), "float32"))
    real = torch.empty(4, 5, 3)
    checks = [
        ("aten.sym_size.int", (0,), real.size(0)),
        ("aten.sym_size.int", (-1,), real.size(-1)),
        ("aten.sym_numel.default", (), real.numel()),
        ("aten.sym_stride.int", (0,), real.stride(0)),
        ("aten.sym_stride.int", (1,), real.stride(1)),
        ("aten.sym_storage_offset.default", (), real.storage_offset()),
        ("aten.sym_is_contiguous.default", (), real.is_contiguous()),
    ]
    for name, args, want in checks:
        ctx = TorchContext()
        out = TORCH.lookup(name)(ctx, x, *args)
        f = Function((x,), ctx.expr(out))
        got = relay_core.evaluate(f, np.zeros((4, 5, 3), np.float32))
        assert int(got) == int(want), (name, args)


class ViewAfterUnknownBatch(torch.nn.Module):
    """GPT-NeoX's pattern: a tensor whose Relay batch dim is `?` (flattened and back), viewed /
    expanded to [batch, -1, ...] and then split on a dim torch knows is static."""

    def forward(self, x):
        b = x.shape[0]
        y = x.reshape(-1, 24).reshape(b, 4, 24)  # Relay: (?, 4, 24), torch: (b, 4, 24)
        q, k, v = y.view(b, -1, 24).chunk(3, dim=-1)  # the -1 is static for torch
        m = (y[:, :1] > 0).expand(b, 4, 24).chunk(2, dim=-1)[0]
        return q * k + v, m


def test_view_and_expand_keep_static_dims_after_an_unknown_batch():
    b = Dim("b", min=2, max=16)
    seen = _check_dynamic(
        ViewAfterUnknownBatch(),
        (torch.randn(3, 4, 24),),
        ({0: b},),
        [2, 5],
        lambda n: (torch.randn(n, 4, 24),),
    )
    assert "aten.expand.default" in seen
