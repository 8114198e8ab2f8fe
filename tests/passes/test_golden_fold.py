"""Golden tests: FoldConstant (and its byte budget), DynamicToStatic, SimplifyInference,
FoldScaleAxis."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
from relay_core import passes
from relay_core.errors import ResourceLimitError

from .golden import check, parse

X23 = np.arange(6, dtype=np.float32).reshape(2, 3) / 7


def test_fold_constant_evaluates_constant_subgraphs():
    check(
        passes.FoldConstant(),
        """
        def @main(%x: Tensor[(2, 3), float32]) {
          let %c = multiply(2f, 3f);
          %0 = add(%x, %c);
          %1 = if (greater(1f, 0f)) { %0 } else { negative(%0) };
          %2 = (%1, shape_of(%x), ndarray_size(%x)).1;
          (%1, %2, ndarray_size(%x), random.uniform(shape=[2]), ones(shape=[2], dtype="float32"))
        }
        """,
        """
        def @main(%x: Tensor[(2, 3), float32]) {
          %0 = add(%x, 6f);
          (%0, meta[Constant][0], 6i64, random.uniform(shape=[2]), meta[Constant][1])
        }
        """,
        consts_after=[np.array([2, 3], np.int64), np.ones(2, np.float32)],
    )


def test_fold_constant_leaves_dynamic_shapes_and_failing_calls():
    # shape_of of a tensor with an unknown dimension is not a constant; an op that fails on
    # its constant inputs (here in a branch never taken) is left for run time.
    src = """
        def @main(%x: Tensor[(?, 3), float32], %c: bool) {
          %0 = shape_of(%x);
          if (%c) { take(%0, 7, mode="fast") } else { 0i64 }
        }
        """
    check(passes.FoldConstant(), src, src)
    check(
        passes.FoldConstant(),
        """
        def @main(%c: bool) {
          if (%c) { take(meta[Constant][0], 7, mode="fast") } else { 0i64 }
        }
        """,
        """
        def @main(%c: bool) {
          if (%c) { take(meta[Constant][0], 7, mode="fast") } else { 0i64 }
        }
        """,
        consts=[np.array([2, 3], np.int64)],
    )


def test_fold_constant_folds_calls_with_a_scalar_result():
    # take(shape, 1) is a 0-d value (numpy hands it back as a scalar, not an array): exporters
    # compute batch sizes this way, and the shapes built from them must become constants.
    check(
        passes.FoldConstant(),
        """
        def @main() {
          %0 = take(meta[Constant][0], 1i64, axis=0, mode="fast");
          concatenate(meta[Constant][1], expand_dims(%0, axis=0))
        }
        """,
        """
        def @main() { meta[Constant][0] }
        """,
        consts=[np.array([32, 4, 64], np.int64), np.array([1], np.int64)],
        consts_after=[np.array([1, 4], np.int64)],
    )


# The ONNX model `ConstantOfShape(shape=[100000, 100000, 100000])` is 84 bytes; as Relay it is
# a fill of a constant shape. Folding it would need 4 PB.
HUGE = [np.array([100000, 100000, 100000], np.int64)]


@pytest.mark.parametrize(
    "src",
    [
        'def @main() { full(0f, shape=[100000, 100000, 100000], dtype="float32") }',
        'def @main() { dyn.full(0f, meta[Constant][0], dtype="float32") }',
        "def @main(%x: Tensor[(2), float32]) { add(%x, sum(dyn.full(1f, meta[Constant][0]))) }",
    ],
)
def test_fold_constant_refuses_a_petabyte_constant_before_allocating(src):
    mod = parse(src, HUGE if "meta" in src else ())
    with pytest.raises(ResourceLimitError) as err:
        passes.FoldConstant()(mod)
    msg = str(err.value)
    assert "(100000, 100000, 100000)" in msg and "4,000,000,000,000,000 bytes" in msg
    assert "max_bytes" in msg  # says how to raise the budget
    # With on_limit="skip" the fill stays in the program, unevaluated.
    out = passes.FoldConstant(on_limit="skip")(mod)
    assert relay_core.structural_equal(out, mod)
    # The whole default pipeline refuses the same way.
    with pytest.raises(ResourceLimitError):
        passes.optimize(mod)


def test_fold_constant_budget_is_an_option():
    src = 'def @main() { ones(shape=[64, 64], dtype="float32") }'
    with pytest.raises(ResourceLimitError):
        passes.FoldConstant(max_bytes=1000)(parse(src))
    out = passes.FoldConstant(max_bytes=64 * 64 * 4)(parse(src))
    assert isinstance(out["main"].body, relay_core.ir.Constant)


def test_dynamic_to_static():
    check(
        passes.DynamicToStatic(),
        """
        def @main(%x: Tensor[(2, 3, 4), float32], %y: Tensor[(6, 4), float32],
                  %z: Tensor[(4), float32]) {
          %0 = dyn.reshape(%x, shape_of(%y));
          %1 = dyn.broadcast_to(%z, meta[Constant][0]);
          %2 = dyn.full(2f, meta[Constant][0]);
          add(add(%0, %1), %2)
        }
        """,
        """
        def @main(%x: Tensor[(2, 3, 4), float32], %y: Tensor[(6, 4), float32],
                  %z: Tensor[(4), float32]) {
          add(add(reshape(%x, newshape=[6, 4]), broadcast_to(%z, shape=[6, 4])), meta[Constant][0])
        }
        """,
        consts=[np.array([6, 4], np.int64)],
        consts_after=[np.full((6, 4), 2, np.float32)],
        inputs=[
            np.arange(24, dtype=np.float32).reshape(2, 3, 4),
            np.zeros((6, 4), np.float32),
            np.arange(4, dtype=np.float32),
        ],
    )
    out = passes.DynamicToStatic()(
        parse("""
        def @main(%x: Tensor[(2, 3, 4), float32], %y: Tensor[(6, 4), float32]) {
          dyn.reshape(%x, shape_of(%y))
        }""")
    )
    assert (
        str(relay_core.infer_type(out)["main"].checked_type.ret_type) == "Tensor[(6, 4), float32]"
    )


def test_dynamic_to_static_follows_a_chain_of_any_length():
    # each dyn.reshape's shape comes from the one before it (ShuffleNet: 16 shuffle blocks,
    # Swin's window partitions: 64): the chain must end static, and in one round (a node is
    # re-typed and folded as soon as its children change; one fold and whole-module typing
    # per link made a Swin export's load take 13 s)
    n = 20
    body = ["%0 = dyn.reshape(%x, shape_of(%x));"]
    body += [f"%{k} = dyn.reshape(%{k - 1}, shape_of(%{k - 1}));" for k in range(1, n)]
    text = "def @main(%x: Tensor[(2, 3), float32]) {\n" + "\n".join(body) + f"\n%{n - 1}\n}}"
    out = relay_core.infer_type(passes.DynamicToStatic()(parse(text)))
    assert "dyn." not in str(out)
    assert str(out["main"].checked_type.ret_type) == "Tensor[(2, 3), float32]"
    one = relay_core.infer_type(passes.DynamicToStatic(max_iterations=1)(parse(text)))
    assert "dyn." not in str(one)


@pytest.mark.parametrize("batch", ["n", "?"])
def test_dynamic_to_static_reads_known_dims_off_shape_of(batch):
    # the legacy ONNX exporter's x.view(x.size(0), 2, c // 2, h, w) with an unknown batch:
    # the shape is a concatenation of x's own dims (read with shape_of / take) and constants.
    # The static dims fold, the batch is copied (0): one static reshape, no specialisation
    text = f"""
def @main(%x: Tensor[({batch}, 8, 3, 5), float32]) {{
  %0 = shape_of(%x);
  %1 = expand_dims(take(%0, 0i64, axis=0));
  %2 = expand_dims(divide(take(%0, 1i64, axis=0), 2i64));
  %3 = expand_dims(take(%0, 2i64, axis=0));
  %4 = expand_dims(take(%0, 3i64, axis=0));
  %5 = concatenate((%1, meta_two, %2, %3, %4));
  %6 = dyn.reshape(%x, %5);
  %7 = transpose(%6, axes=[0, 2, 1, 3, 4]);
  %8 = concatenate((%1, expand_dims(take(%0, 1i64, axis=0)), %3, %4));
  dyn.reshape(%7, %8)
}}""".replace("meta_two", "expand_dims(2i64)")
    mod = parse(text)
    out = relay_core.infer_type(passes.DynamicToStatic()(mod))
    txt = str(out)
    assert "dyn." not in txt, txt
    assert "newshape=[0, 2, 4, 3, 5]" in txt, txt
    assert str(out["main"].checked_type.ret_type) == f"Tensor[({batch}, 8, 3, 5), float32]"
    x = np.random.default_rng(0).standard_normal((3, 8, 3, 5)).astype("float32")
    want = x.reshape(3, 2, 4, 3, 5).transpose(0, 2, 1, 3, 4).reshape(3, 8, 3, 5)
    got = relay_core.build(out, cache=False)(x)[0]
    np.testing.assert_array_equal(got, want)
    # an entry computed from the batch (MobileViT's x.size(0) * 8) is the one inferred (-1)
    flat = f"""
def @main(%x: Tensor[({batch}, 8, 3, 5), float32]) {{
  %0 = expand_dims(multiply(take(shape_of(%x), 0i64, axis=0), 8i64));
  dyn.reshape(%x, concatenate((%0, expand_dims(15i64))))
}}"""
    out = relay_core.infer_type(passes.DynamicToStatic()(parse(flat)))
    assert "newshape=[-1, 15]" in str(out), str(out)
    np.testing.assert_array_equal(relay_core.build(out, cache=False)(x)[0], x.reshape(24, 15))


def test_dynamic_to_static_reshape_back_to_another_tensors_shape():
    # torch.onnx's GroupNorm with a dynamic batch (HF PoolFormer, any GroupNorm model): reshape
    # to (0, groups, -1), instance_norm, then Reshape(_, Shape(x)) back: the shape is a bare
    # shape_of of another tensor; its static dims fold and the batch is copied, so the spatial
    # dims stay known downstream (they were all `?`, and the pools after them could not build
    # shape-generic: the module compiled per input shape)
    text = """
def @main(%x: Tensor[(n, 4, 3, 5), float32]) {
  %0 = reshape(%x, newshape=[0, 2, -1]);
  %1 = nn.instance_norm(%0, ones(shape=[2], dtype="float32"), zeros(shape=[2], dtype="float32"));
  %2 = dyn.reshape(%1, shape_of(%x));
  nn.avg_pool2d(%2, pool_size=[3, 3], padding=[1, 1, 1, 1])
}"""
    out = relay_core.infer_type(passes.DynamicToStatic()(parse(text)))
    txt = str(out)
    assert "dyn." not in txt and "newshape=[0, 4, 3, 5]" in txt, txt
    assert str(out["main"].checked_type.ret_type) == "Tensor[(n, 4, 3, 5), float32]"
    lib = relay_core.build(parse(text))
    assert type(lib).__name__ == "CompiledModule"  # shape-generic, not per input shape
    x = np.random.default_rng(2).standard_normal((3, 4, 3, 5)).astype("float32")
    want = relay_core.evaluate(parse(text), x)  # the interpreter, on the module as written
    np.testing.assert_allclose(lib(x)[0], want, rtol=1e-5, atol=1e-6)


def test_dynamic_to_static_expand_as_another_tensor():
    # `y.expand_as(x)` as torch.onnx exports it (timm's ECA / CBAM gates): Expand(y, Shape(x))
    # becomes broadcast_to_like(y, x), whose type keeps x's dims (the named batch included);
    # they were all `?` from there on. A bidirectional broadcast like Expand's: a dim of y
    # larger than x's 1 wins.
    text = """
def @main(%x: Tensor[(n, 4, 3, 1), float32], %y: Tensor[(n, 4, 1, 5), float32]) {
  %0 = dyn.broadcast_to(%y, cast(shape_of(%x), dtype="int64"));
  add(%0, 1f)
}"""
    out = relay_core.infer_type(passes.DynamicToStatic()(parse(text)))
    txt = str(out)
    assert "dyn." not in txt and "broadcast_to_like(%y, %x)" in txt, txt
    assert str(out["main"].checked_type.ret_type) == "Tensor[(n, 4, 3, 5), float32]"
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 3, 1)).astype("float32")
    y = rng.standard_normal((2, 4, 1, 5)).astype("float32")
    lib = relay_core.build(parse(text))
    assert type(lib).__name__ == "CompiledModule"
    np.testing.assert_array_equal(lib(x, y)[0], np.broadcast_to(y, (2, 4, 3, 5)) + 1)


LEADING = """
def @main(%x: Tensor[({n}, 2, 4, 6), float32], %y: Tensor[(?, 2, 6), float32]) {{
  %0 = reshape(%x, newshape=[-1, 4, 6]);
  %1 = strided_slice(nn.relu(%0), begin=[0], end=[2], strides=[1], axes=[1]);
  %2 = {mid};
  %3 = expand_dims(take(shape_of(%0), 0i64, axis=0), axis=0);
  dyn.reshape(%2, concatenate((%3, expand_dims(-1i64, axis=0))))
}}"""


@pytest.mark.parametrize(
    "mid,static",
    [
        ("add(%1, %1)", True),  # every operand keeps %0's axis 0
        ('multiply(%1, ones(shape=[1, 2, 6], dtype="float32"))', True),  # a static 1
        ('nn.matmul(%1, ones(shape=[6, 6], dtype="float32"))', True),
        ("add(%1, %y)", False),  # %y's axis 0 may differ (a batch of 1 broadcasts)
        ("transpose(%1, axes=[1, 0, 2])", False),
    ],
)
def test_dynamic_to_static_proves_a_run_time_leading_dim(mid, static):
    # EfficientViT's attention: `B, C, H, W = x.shape`, then conv(x).view(B, -1, H, W) where B
    # is a run-time product (4 x batch: `?`), not a named dim. The reshape is static (B copied
    # from the data's own axis 0) when the data provably keeps x's axis 0; it was always left
    # dynamic (two unknown entries), and every dim after it was `?`: the model compiled once
    # per input shape.
    text = LEADING.format(mid=mid, n="?")
    out = relay_core.infer_type(passes.DynamicToStatic()(parse(text)))
    assert ("dyn.reshape" not in str(out)) == static, str(out)
    if static:
        assert str(out["main"].checked_type.ret_type) == "Tensor[(?, 12), float32]"
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 2, 4, 6)).astype("float32")
    y = rng.standard_normal((6, 2, 6)).astype("float32")
    want = relay_core.evaluate(parse(text), x, y)
    np.testing.assert_allclose(relay_core.build(parse(text))(x, y)[0], want, rtol=1e-6)


@pytest.mark.parametrize("mid", ["add(%1, %1)", "transpose(%1, axes=[1, 0, 2])"])
def test_dynamic_to_static_with_a_multiple_of_a_named_dim(mid):
    # with x's batch named, %0 is (2*n, 4, 6) and the view to (B, -1) is static whatever path
    # leads there: the data's size over 2*n is a constant (12)
    text = LEADING.format(mid=mid, n="n")
    out = relay_core.infer_type(passes.DynamicToStatic()(parse(text)))
    assert "dyn.reshape" not in str(out), str(out)
    assert str(out["main"].checked_type.ret_type) == "Tensor[(2*n, 12), float32]"
    x = np.random.default_rng(7).standard_normal((3, 2, 4, 6)).astype("float32")
    y = np.zeros((6, 2, 6), "float32")
    want = relay_core.evaluate(parse(text), x, y)
    np.testing.assert_allclose(relay_core.build(parse(text))(x, y)[0], want, rtol=1e-6)


def test_reshape_infers_a_named_dim():
    # x.reshape(-1, C) of a (batch, C, 1, 1) tensor (timm's flatten before the classifier):
    # the -1 is `batch` itself when the other dims cancel, a multiple of it when they leave a
    # factor (heads folded into the batch); otherwise it stays unknown
    from relay_core.ir.types import Any, ShapeVar, scaled
    from relay_core.ops.transform_reshape import reshape_shape

    n = ShapeVar("n")
    assert reshape_shape((n, 16, 1, 1), (-1, 16)) == (n, 16)
    assert reshape_shape((n, 6), (2, -1, 3)) == (2, n, 3)
    assert reshape_shape((n, 16, 1, 1), (-1, 8)) == (scaled(n, 2), 8)
    assert reshape_shape((scaled(n, 2), 8), (-1, 16)) == (n, 16)
    assert reshape_shape((n, 16, 1, 1), (-1, 32)) == (Any, 32)  # n / 2: not a dim we can say
    assert reshape_shape((n, Any, 4), (-1, 4)) == (Any, 4)
    assert reshape_shape((n, ShapeVar("m"), 4), (-1, 4)) == (Any, 4)


def test_dynamic_to_static_resize_to_constant_sizes_with_an_unknown_batch():
    # ONNX Resize with sizes (*x.shape[:2], 8, 6) (timm's MobileViT): static spatial sizes, the
    # batch and channels read off the input; it becomes image.resize2d for any batch
    text = """
def @main(%x: Tensor[(?, 3, 4, 5), float32]) {
  %0 = strided_slice(shape_of(%x), begin=[0], end=[2], strides=[1]);
  %1 = concatenate((%0, expand_dims(8i64), expand_dims(6i64)));
  %2 = zeros(shape=[0], dtype="float32");
  dyn.image.resize(%x, %2, %2, %1, method="linear")
}"""
    out = relay_core.infer_type(passes.DynamicToStatic()(parse(text)))
    txt = str(out)
    assert "dyn." not in txt and "image.resize2d" in txt, txt
    assert str(out["main"].checked_type.ret_type) == "Tensor[(?, 3, 8, 6), float32]"
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 5)).astype("float32")
    want = relay_core.build(parse(text.replace("?", "2")), cache=False)(x)[0]
    np.testing.assert_allclose(relay_core.build(out, cache=False)(x)[0], want, rtol=1e-6)


BN_ARGS = (
    "%x: Tensor[(2, 3, 4, 4), float32], %g: Tensor[(3), float32], %b: Tensor[(3), float32], "
    "%m: Tensor[(3), float32], %v: Tensor[(3), float32]"
)


def test_simplify_inference_batch_norm_and_dropout():
    rng = np.random.default_rng(0)
    check(
        passes.SimplifyInference(),
        f"""
        def @main({BN_ARGS}) {{
          nn.dropout(nn.batch_norm(%x, %g, %b, %m, %v, epsilon=1e-3f).0, rate=0.5f).0
        }}
        """,
        f"""
        def @main({BN_ARGS}) {{
          %0 = multiply(%g, rsqrt(add(%v, 0.001f)));
          %1 = add(%b, negative(multiply(%m, %0)));
          add(multiply(%x, expand_dims(%0, axis=1, num_newaxis=2)),
              expand_dims(%1, axis=1, num_newaxis=2))
        }}
        """,
        inputs=[
            rng.standard_normal((2, 3, 4, 4)).astype(np.float32),
            *(rng.standard_normal(3).astype(np.float32) for _ in range(3)),
            rng.uniform(0.5, 2, 3).astype(np.float32),
        ],
    )


def test_simplify_inference_layer_norm():
    rng = np.random.default_rng(1)
    check(
        passes.SimplifyInference(),
        """
        def @main(%x: Tensor[(2, 8), float32], %g: Tensor[(8), float32], %b: Tensor[(8), float32]) {
          nn.layer_norm(%x, %g, %b)
        }
        """,
        """
        def @main(%x: Tensor[(2, 8), float32], %g: Tensor[(8), float32], %b: Tensor[(8), float32]) {
          %0 = subtract(%x, mean(%x, axis=[1], keepdims=True));
          %1 = mean(multiply(%0, %0), axis=[1], keepdims=True);
          add(multiply(multiply(%0, rsqrt(add(%1, 1e-05f))), %g), %b)
        }
        """,
        inputs=[rng.standard_normal((2, 8)).astype(np.float32)]
        + [rng.standard_normal(8).astype(np.float32) for _ in range(2)],
    )


@pytest.mark.parametrize(
    "op,args,attrs",
    [
        ("nn.instance_norm", "%g, %b", ""),
        ("nn.group_norm", "%g, %b", ", num_groups=2"),
        ("nn.group_norm", "%g, %b", ", num_groups=3, axis=-1"),
        ("nn.rms_norm", "%g", ", axis=-2"),
        ("nn.l2_normalize", "", ", axis=[1, 2]"),
        ("nn.mean_variance_normalization", "", ", axes=[0, 2]"),
        ("nn.lrn", "", ", size=3"),
    ],
)
def test_simplify_inference_leaves_only_primitives(op, args, attrs):
    # Every normalisation becomes elementwise ops, reductions and reshapes, same values.
    rng = np.random.default_rng(2)
    c = 6
    g_shape = "(4, 6)" if op == "nn.rms_norm" else f"({c})"
    sep = ", " if args else ""
    src = f"""
        def @main(%x: Tensor[(2, {c}, 4, {c}), float32], %g: Tensor[{g_shape}, float32],
                  %b: Tensor[({c}), float32]) {{
          {op}(%x{sep}{args}{attrs})
        }}"""
    mod = parse(src)
    out = passes.SimplifyInference()(mod)
    names = {
        n.op.name
        for n in relay_core.ir.visitor.post_order(out["main"])
        if isinstance(n, relay_core.ir.Call)
    }
    assert not any(n.startswith("nn.") and n != "nn.pad" for n in names), names
    xs = [
        rng.standard_normal((2, c, 4, c)).astype(np.float32),
        rng.standard_normal((4, 6) if op == "nn.rms_norm" else c).astype(np.float32),
        rng.standard_normal(c).astype(np.float32),
    ]
    relay_core.infer_type(out)
    np.testing.assert_allclose(
        relay_core.evaluate(out, *xs), relay_core.evaluate(mod, *xs), rtol=2e-5, atol=2e-5
    )


W = np.linspace(-1, 1, 4 * 3 * 3 * 3, dtype=np.float32).reshape(4, 3, 3, 3)
S = np.array([0.5, 2.0, -1.0, 3.0], np.float32)
SIN = np.array([2.0, 0.5, 4.0], np.float32)


def test_fold_scale_axis_backward_through_bias_and_forward():
    x = np.random.default_rng(3).standard_normal((1, 3, 5, 5)).astype(np.float32)
    check(
        passes.FoldScaleAxis(),
        """
        def @main(%x: Tensor[(1, 3, 5, 5), float32]) {
          %0 = nn.conv2d(%x, meta[Constant][0], padding=[1, 1]);
          %1 = nn.bias_add(%0, meta[Constant][1]);
          multiply(%1, meta[Constant][2])
        }
        """,
        """
        def @main(%x: Tensor[(1, 3, 5, 5), float32]) {
          %0 = nn.conv2d(%x, meta[Constant][0], padding=[1, 1]);
          nn.bias_add(%0, meta[Constant][1])
        }
        """,
        consts=[W, np.ones(4, np.float32), S.reshape(4, 1, 1)],
        consts_after=[W * S.reshape(4, 1, 1, 1), S],
        inputs=[x],
    )
    pos = np.abs(SIN)
    check(
        passes.FoldScaleAxis(),
        """
        def @main(%x: Tensor[(1, 3, 5, 5), float32]) {
          nn.conv2d(nn.relu(multiply(%x, meta[Constant][1])), meta[Constant][0])
        }
        """,
        """
        def @main(%x: Tensor[(1, 3, 5, 5), float32]) {
          nn.conv2d(nn.relu(%x), meta[Constant][0])
        }
        """,
        consts=[W, pos.reshape(3, 1, 1)],
        consts_after=[W * pos.reshape(1, 3, 1, 1)],
        inputs=[x],
    )


def test_fold_scale_axis_leaves_shared_or_negative_cases():
    # The conv result is used twice: scaling its weight would change the other use.
    src = """
        def @main(%x: Tensor[(1, 3, 5, 5), float32]) {
          %0 = nn.conv2d(%x, meta[Constant][0]);
          (multiply(%0, meta[Constant][1]), %0)
        }
        """
    check(passes.FoldScaleAxis(), src, src, consts=[W, S.reshape(4, 1, 1)])
    # A negative scale does not commute with relu.
    src = """
        def @main(%x: Tensor[(1, 3, 5, 5), float32]) {
          nn.conv2d(nn.relu(multiply(%x, meta[Constant][1])), meta[Constant][0])
        }
        """
    check(passes.FoldScaleAxis(), src, src, consts=[W, SIN.reshape(3, 1, 1) * -1])


def test_fold_constant_leaves_large_broadcasts_for_run_time():
    # a value much larger than its constant arguments (an index grid, a broadcast) is not
    # worth storing: MViTv2's slice assignments folded to 1.4 GB of grids beside 139 MB of
    # weights. Small expansions and large values that are not expansions still fold.
    from relay_core.ir import Constant, const
    from relay_core.ir.expr import Call, Op
    from relay_core.ops.registry import lookup

    def fold(name, arg, **attrs):
        call = Call(Op.get(name), (const(arg),), lookup(name).make_attrs(**attrs))
        mod = relay_core.ir.IRModule.from_expr(call)
        return passes.FoldConstant()(mod)["main"].body

    col = np.arange(1024, dtype=np.float32).reshape(1, 1, 1024, 1)
    big = fold("broadcast_to", col, shape=(1, 1, 1024, 2048))  # 8 MB from 4 KB
    assert type(big) is Call and big.op.name == "broadcast_to"
    small = fold("broadcast_to", col, shape=(1, 1, 1024, 64))  # 256 KB: folds
    assert type(small) is Constant and small.data.shape == (1, 1, 1024, 64)
    dense = np.ones((2048, 1024), np.float32)  # 8 MB in, 8 MB out: folds
    neg = fold("negative", dense)
    assert type(neg) is Constant
    np.testing.assert_array_equal(neg.data, -dense)
    lib = relay_core.build(relay_core.ir.IRModule.from_expr(big))
    np.testing.assert_array_equal(lib()[0], np.broadcast_to(col, (1, 1, 1024, 2048)))
