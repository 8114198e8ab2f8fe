"""The from_pytorch API: inputs, parameters, output structure, spans, symbolic sizes,
unsupported-op reporting and custom converters."""

from __future__ import annotations

import numpy as np
import pytest

from tests.require import require

torch = require("torch")

import relay_core  # noqa: E402
from converters.pytorch import from_pytorch  # noqa: E402
from relay_core.errors import ModelLoadError, UnsupportedOpsError  # noqa: E402
from relay_core.ir import Call, Constant, ShapeVar, TensorType, TupleType, post_order  # noqa: E402

from .harness import assert_close  # noqa: E402


class Affine(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.linspace(0.5, 2.0, 4))
        self.register_buffer("shift", torch.arange(4.0))

    def forward(self, x, y):
        z = x * self.scale + self.shift
        return (z, [z - y, {"a": y * 2.0}]), torch.sigmoid(y)


def _inputs():
    g = torch.Generator().manual_seed(0)
    return torch.randn(2, 4, generator=g), torch.randn(4, generator=g)


def test_inputs_in_order_with_signature_names():
    mod = from_pytorch(Affine(), _inputs())
    params = mod["main"].params
    assert [p.name_hint for p in params] == ["x", "y"]
    assert params[0].type_annotation == TensorType((2, 4), "float32")
    assert mod.attrs["input_names"] == ["x", "y"]


def test_params_become_constants_by_default():
    mod = from_pytorch(Affine(), _inputs())
    consts = [n for n in post_order(mod["main"].body) if isinstance(n, Constant)]
    datas = [c.data for c in consts]
    assert any(np.array_equal(d, np.linspace(0.5, 2.0, 4, dtype=np.float32)) for d in datas)


def test_output_structure_kept():
    m = Affine().eval()
    x, y = _inputs()
    mod = from_pytorch(m, (x, y))
    t = mod["main"].checked_type.ret_type
    # ((z, [z - y, {"a": y * 2}]), sigmoid(y))
    assert isinstance(t, TupleType) and len(t.fields) == 2
    inner = t.fields[0]
    assert isinstance(inner, TupleType) and len(inner.fields) == 2
    assert isinstance(inner.fields[1], TupleType) and len(inner.fields[1].fields) == 2
    assert isinstance(inner.fields[1].fields[1], TupleType)  # the dict
    got = relay_core.evaluate(mod, x.numpy(), y.numpy())
    assert_close(got, m(x, y), 1e-6, 1e-6)
    assert isinstance(got[0][1][1], tuple)


def test_single_tensor_output_is_not_wrapped():
    mod = from_pytorch(torch.nn.Tanh(), (torch.randn(3),))
    assert isinstance(mod["main"].checked_type.ret_type, TensorType)


def test_keep_params_as_inputs():
    m = Affine().eval()
    x, y = _inputs()
    mod = from_pytorch(m, (x, y), keep_params_as_inputs=True)
    names = [p.name_hint for p in mod["main"].params]
    assert names[:2] == ["x", "y"] and len(names) == 4
    params = mod.attrs["params"]
    assert sorted(params) == sorted(names[2:])
    got = relay_core.evaluate(mod, x.numpy(), y.numpy(), **params)
    assert_close(got, m(x, y), 1e-6, 1e-6)
    # other parameter values give other results: they really are inputs
    zeros = {k: np.zeros_like(v) for k, v in params.items()}
    got0 = relay_core.evaluate(mod, x.numpy(), y.numpy(), **zeros)
    np.testing.assert_allclose(got0[0][0], np.zeros((2, 4), np.float32))


def test_specialised_scalar_inputs_are_not_parameters():
    class M(torch.nn.Module):
        def forward(self, x, n: int):
            return x * n

    mod = from_pytorch(M(), (torch.ones(3), 4))
    assert [p.name_hint for p in mod["main"].params] == ["x"]
    np.testing.assert_array_equal(relay_core.evaluate(mod, np.ones(3, np.float32)), 4.0)


def test_spans_name_fx_nodes():
    mod = from_pytorch(Affine(), _inputs())
    ep = torch.export.export(Affine(), _inputs())
    fx_names = {n.name for n in ep.graph.nodes}
    calls = [n for n in post_order(mod["main"].body) if isinstance(n, Call)]
    assert calls
    for c in calls:
        assert c.span is not None and c.span.node in fx_names, c.span
        assert c.span.op.startswith("aten.")


def test_dynamic_batch_dim_is_a_shape_var_with_range():
    batch = torch.export.Dim("batch", min=2, max=64)
    m = Affine().eval()
    x, y = torch.randn(3, 4), torch.randn(4)
    mod = from_pytorch(m, (x, y), dynamic_shapes={"x": {0: batch}, "y": None})
    d = mod["main"].params[0].type_annotation.shape[0]
    assert isinstance(d, ShapeVar) and d.name == "batch" and (d.min, d.max) == (2, 64)
    for n in (2, 7):
        xs = torch.randn(n, 4)
        assert_close(relay_core.evaluate(mod, xs.numpy(), y.numpy()), m(xs, y), 1e-6, 1e-6)


def test_module_needs_example_inputs():
    with pytest.raises(ModelLoadError, match="example_inputs"):
        from_pytorch(Affine())


def test_wrong_object_is_refused():
    with pytest.raises(ModelLoadError, match="ExportedProgram"):
        from_pytorch(42)


# -- unsupported ops and custom converters -----------------------------------------------------


@torch.library.custom_op("relaytest::twice", mutates_args=())
def _twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@_twice.register_fake
def _(x):
    return torch.empty_like(x)


@torch.library.custom_op("relaytest::plus_one", mutates_args=())
def _plus_one(x: torch.Tensor) -> torch.Tensor:
    return x + 1


@_plus_one.register_fake
def _(x):
    return torch.empty_like(x)


class UsesCustom(torch.nn.Module):
    def forward(self, x):
        a = torch.ops.relaytest.twice(x)
        b = torch.ops.relaytest.plus_one(a)
        return torch.ops.relaytest.twice(b)


def test_unsupported_ops_listed_all_at_once():
    with pytest.raises(UnsupportedOpsError) as info:
        from_pytorch(UsesCustom(), (torch.randn(3),))
    msg = str(info.value)
    assert "relaytest.twice.default" in msg and "relaytest.plus_one.default" in msg
    assert msg.count("relaytest.twice.default") == 1  # deduplicated
    assert "custom_convert_map" in msg and torch.__version__ in msg


def test_custom_convert_map():
    def twice(ctx, x):
        return ctx.call("multiply", x, ctx.expr(2.0, ctx.dtype(x)))

    def plus_one(ctx, x):
        return ctx.call("add", x, ctx.expr(1.0, ctx.dtype(x)))

    x = torch.randn(5)
    mod = from_pytorch(
        UsesCustom(),
        (x,),
        custom_convert_map={
            "relaytest.twice.default": twice,
            torch.ops.relaytest.plus_one.default: plus_one,  # OpOverloads work as keys
        },
    )
    assert_close(relay_core.evaluate(mod, x.numpy()), UsesCustom()(x), 1e-6, 1e-6)


def test_custom_convert_map_overrides_builtin():
    def my_tanh(ctx, x):
        return ctx.call("sigmoid", x)

    x = torch.randn(5)
    mod = from_pytorch(torch.nn.Tanh(), (x,), custom_convert_map={"aten.tanh.default": my_tanh})
    np.testing.assert_allclose(
        relay_core.evaluate(mod, x.numpy()), torch.sigmoid(x).numpy(), rtol=1e-6
    )


def test_converter_errors_name_the_node():
    def broken(ctx, x):
        raise ValueError("boom")

    with pytest.raises(relay_core.RelayError, match=r"tanh.*boom"):
        from_pytorch(
            torch.nn.Tanh(), (torch.randn(2),), custom_convert_map={"aten.tanh.default": broken}
        )


def test_text_round_trip():
    """The converted program prints, parses back, and is structurally the same."""
    m = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3),
        torch.nn.BatchNorm2d(4),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(4 * 6 * 6, 5),
    ).eval()
    batch = torch.export.Dim("batch", min=1, max=8)
    mod = from_pytorch(m, (torch.randn(2, 3, 8, 8),), dynamic_shapes=({0: batch},))
    text = mod.astext()
    assert "Tensor[(batch, 3, 8, 8), float32]" in text and "nn.conv2d" in text
    back = relay_core.parse(text)
    assert relay_core.structural_equal(back, mod)
    x = np.random.default_rng(0).standard_normal((3, 3, 8, 8)).astype(np.float32)
    np.testing.assert_array_equal(relay_core.evaluate(back, x), relay_core.evaluate(mod, x))


def test_ops_without_converter_are_decomposed_alone():
    """addcmul / nan_to_num / frac have no converter: torch's decompositions replace only them,
    and linear stays nn.dense."""
    from converters.pytorch import decompose_unsupported

    from .harness import graph_targets

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x, y, z):
            return (
                torch.addcmul(self.lin(x), y, z, value=0.5),
                torch.nan_to_num(x / y),
                torch.frac(z),
            )

    g = torch.Generator().manual_seed(3)
    args = tuple(torch.randn(2, 4, generator=g) for _ in range(3))
    args[1][0, 0] = 0.0  # a division by zero for nan_to_num
    m = M().eval()
    ep = torch.export.export(m, args)
    before = graph_targets(ep)
    assert {"aten.addcmul.default", "aten.nan_to_num.default"} <= before
    after = graph_targets(decompose_unsupported(ep))
    assert "aten.linear.default" in after and "aten.addcmul.default" not in after
    mod = from_pytorch(ep)
    assert any(
        isinstance(n, Call) and n.op.name == "nn.dense" for n in post_order(mod["main"].body)
    )
    with torch.no_grad():
        want = m(*args)
    assert_close(relay_core.evaluate(mod, *[a.numpy() for a in args]), want, 1e-6, 1e-6)


def test_repeat_by_the_run_time_batch():
    """SigLIP's pooling head: probe.repeat(x.shape[0], 1, 1) with a dynamic batch (the counts
    were refused: 'repeat counts must be static'); compiled and interpreted equal torch."""

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.probe = torch.nn.Parameter(torch.randn(1, 1, 4))

        def forward(self, x):
            return x + self.probe.repeat(x.shape[0], 1, 1)

    m = M().eval()
    batch = torch.export.Dim("batch", min=1, max=8)
    mod = from_pytorch(m, (torch.randn(2, 3, 4),), dynamic_shapes=({0: batch},))
    lib = relay_core.build(mod)
    for n in (1, 3):
        x = torch.randn(n, 3, 4)
        want = m(x).detach().numpy()
        np.testing.assert_allclose(relay_core.evaluate(mod, x.numpy()), want, rtol=1e-6)
        np.testing.assert_allclose(lib(x.numpy())[0], want, rtol=1e-6)


def test_view_with_a_run_time_product_and_minus_one():
    """MaxViT's window attention through torch.export with a dynamic batch: the windows are
    `x.view(B * nw, -1, heads, 3 * dh)` with B * nw a run-time product, and `chunk(3, -1)`
    of it. Two unknown entries (the product and the -1) made a dyn.reshape whose every dim was
    unknown, and the attention after it refused a symbolic head size; torch's metadata knows
    the -1's size. Compiled and interpreted equal torch at two batch sizes."""

    class M(torch.nn.Module):
        def forward(self, x):
            b, c, h, w = x.shape
            win = x.reshape(b, c, h // 2, 2, w // 2, 2).permute(0, 2, 4, 3, 5, 1)
            win = win.reshape(-1, 4, c)  # (b * h/2 * w/2, 4, c)
            qkv = win.view(win.shape[0], -1, 2, 6).transpose(1, 2)  # -1: 4 * c / 12
            q, k, v = qkv.chunk(3, dim=-1)
            att = torch.nn.functional.scaled_dot_product_attention(q, k, v)
            return att

    m = M().eval()
    batch = torch.export.Dim("batch", min=1, max=8)
    mod = from_pytorch(m, (torch.randn(2, 6, 4, 4),), dynamic_shapes=({0: batch},))
    lib = relay_core.build(mod)
    for n in (1, 3):
        x = torch.randn(n, 6, 4, 4)
        with torch.no_grad():
            want = m(x).numpy()
        np.testing.assert_allclose(relay_core.evaluate(mod, x.numpy()), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(lib(x.numpy())[0], want, rtol=1e-5, atol=1e-6)
