"""Golden tests: SimplifyExpr, one per rule (and the cases each rule must leave alone)."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
from relay_core import passes
from relay_core.passes.pattern import const as cpat
from relay_core.passes.pattern import op, rule, wild
from relay_core.passes.simplify_expr import DEFAULT_RULES

from .golden import check, parse

T23 = "Tensor[(2, 3), float32]"
X23 = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5

# (name, before body, after body) with %x: Tensor[(2, 3), float32], %y: Tensor[(3), float32]
CASES = [
    ("x*1", "multiply(%x, 1f)", "%x"),
    ("1*x", "multiply(1f, %x)", "%x"),
    ("x*ones", "multiply(%x, ones_like(%x))", "multiply(%x, ones_like(%x))"),  # not a constant
    ("x+0", "add(%x, 0f)", "%x"),
    ("0+x", "add(0f, %x)", "%x"),
    ("x-0", "subtract(%x, 0f)", "%x"),
    ("x/1", "divide(%x, 1f)", "%x"),
    ("neg neg", "negative(negative(%x))", "%x"),
    ("0-x", "subtract(0f, %x)", "negative(%x)"),
    ("x+neg y", "add(%x, negative(%y))", "subtract(%x, %y)"),
    (
        "transpose of transpose is identity",
        "transpose(transpose(%x, axes=[1, 0]), axes=[1, 0])",
        "%x",
    ),
    ("identity transpose", "transpose(%x, axes=[0, 1])", "%x"),
    (
        "reshape of reshape",
        "reshape(reshape(%x, newshape=[6]), newshape=[3, 2])",
        "reshape(%x, newshape=[3, 2])",
    ),
    ("reshape to the same shape", "reshape(reshape(%x, newshape=[6]), newshape=[2, 3])", "%x"),
    ("cast to the same dtype", 'cast(%x, dtype="float32")', "%x"),
    ("cast round trip", 'cast(cast(%x, dtype="float64"), dtype="float32")', "%x"),
    (
        "lossy cast round trip stays",
        'cast(cast(%x, dtype="float16"), dtype="float32")',
        'cast(cast(%x, dtype="float16"), dtype="float32")',
    ),
    ("squeeze of expand_dims", "squeeze(expand_dims(%x, axis=1), axis=[1])", "%x"),
    (
        "expand_dims of squeeze",
        "expand_dims(squeeze(expand_dims(%x, axis=0), axis=[0]), axis=0)",
        "expand_dims(%x, axis=0)",
    ),
    ("projection of a tuple", "(%x, negative(%x)).1", "negative(%x)"),
    (
        "consecutive slices",
        "strided_slice(strided_slice(%x, begin=[0, 1], end=[2, 3]), begin=[1, 1], end=[2, 2])",
        "strided_slice(%x, begin=[1, 2], end=[2, 3], strides=[1, 1])",
    ),
]


@pytest.mark.parametrize("name,before,after", CASES, ids=[c[0] for c in CASES])
def test_rule(name, before, after):
    sig = f"%x: {T23}, %y: Tensor[(3), float32]"
    check(
        passes.SimplifyExpr(),
        f"def @main({sig}) {{ {before} }}",
        f"def @main({sig}) {{ {after} }}",
        inputs=[X23, np.array([1.0, -2.0, 0.5], np.float32)],
    )


def test_identities_that_would_change_the_type_stay():
    # multiply by a bigger constant of ones broadcasts; adding an int zero to an int is fine.
    src = """
        def @main(%y: Tensor[(3), float32], %i: int32) {
          (multiply(%y, meta[Constant][0]), add(%i, 0))
        }
        """
    check(
        passes.SimplifyExpr(),
        src,
        """
        def @main(%y: Tensor[(3), float32], %i: int32) {
          (multiply(%y, meta[Constant][0]), %i)
        }
        """,
        consts=[np.ones((2, 3), np.float32)],
    )


def test_zero_bias_add_is_dropped_and_a_nonzero_one_stays():
    sig = "%x: Tensor[(2, 3), float32]"
    body = "nn.bias_add(%x, meta[Constant][0], axis=1)"
    check(
        passes.SimplifyExpr(),
        f"def @main({sig}) {{ {body} }}",
        f"def @main({sig}) {{ %x }}",
        consts=[np.zeros(3, np.float32)],
        inputs=[X23],
    )
    b = np.array([0.0, 1.0, 0.0], np.float32)
    check(
        passes.SimplifyExpr(),
        f"def @main({sig}) {{ {body} }}",
        f"def @main({sig}) {{ {body} }}",
        consts=[b],
        inputs=[X23],
    )


def test_zero_pad_folds_into_the_convolution_padding():
    # NCHW with explicit padding, NHWC with SAME / VALID (tf2onnx's and Keras's Pad + "VALID"
    # stride-2 convolutions); the interpreter computes the same values before and after
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, 2, 6, 7)).astype(np.float32)
    w = rng.normal(size=(3, 2, 3, 3)).astype(np.float32)
    sig = "%x: Tensor[(1, 2, 6, 7), float32]"
    pad = "nn.pad(%x, pad_width=[[0, 0], [0, 0], [0, 1], [1, 2]])"
    check(
        passes.SimplifyExpr(),
        f"def @main({sig}) {{ nn.conv2d({pad}, meta[Constant][0], strides=[2, 2], padding=[1]) }}",
        f"def @main({sig}) {{ nn.conv2d(%x, meta[Constant][0], strides=[2, 2], "
        "padding=[1, 2, 2, 3]) }",
        consts=[w],
        inputs=[x],
    )
    xl = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    dw = rng.normal(size=(3, 3, 1, 2)).astype(np.float32)
    sig = "%x: Tensor[(1, 6, 7, 2), float32]"
    pad = "nn.pad(%x, 0f, pad_width=[[0, 0], [0, 1], [0, 1], [0, 0]])"
    for auto, pads in (("VALID", "[0, 0, 1, 1]"), ("SAME_UPPER", "[1, 0, 2, 2]")):
        attrs = 'groups=2, data_layout="NHWC", kernel_layout="HWIO"'
        check(
            passes.SimplifyExpr(),
            f"def @main({sig}) {{ nn.conv2d({pad}, meta[Constant][0], strides=[2, 2], "
            f'{attrs}, auto_pad="{auto}") }}',
            f"def @main({sig}) {{ nn.conv2d(%x, meta[Constant][0], strides=[2, 2], "
            f"padding={pads}, {attrs}) }}",
            consts=[dw],
            inputs=[xl],
        )


def test_window_taps_that_read_only_padding_are_cut():
    # DeepLabV3's ASPP on a 14 x 14 plane: dilation 24 reads only the centre tap (a 1x1
    # convolution), dilation 6 reads all; a 3 x 5 window with asymmetric pads, stride 2 and
    # dilation (4, 3) on a 4 x 7 plane keeps rows 1-2 and columns 0-3. NHWC / HWIO too. The
    # interpreter computes the same values before and after
    rng = np.random.default_rng(1)
    x = rng.normal(size=(1, 3, 14, 14)).astype(np.float32)
    w = rng.normal(size=(4, 3, 3, 3)).astype(np.float32)
    sig = "%x: Tensor[(1, 3, 14, 14), float32]"
    check(
        passes.SimplifyExpr(),
        f"def @main({sig}) {{ nn.conv2d(%x, meta[Constant][0], padding=[24], dilation=[24]) }}",
        f"def @main({sig}) {{ nn.conv2d(%x, meta[Constant][1], padding=[0, 0, 0, 0], "
        "dilation=[24]) }",
        consts=[w, w[:, :, 1:2, 1:2]],
        inputs=[x],
    )
    body = "nn.conv2d(%x, meta[Constant][0], padding=[6], dilation=[6])"
    check(
        passes.SimplifyExpr(),
        f"def @main({sig}) {{ {body} }}",
        f"def @main({sig}) {{ {body} }}",
        consts=[w],
    )
    x = rng.normal(size=(1, 2, 4, 7)).astype(np.float32)
    w = rng.normal(size=(3, 2, 3, 5)).astype(np.float32)
    sig = "%x: Tensor[(1, 2, 4, 7), float32]"
    check(
        passes.SimplifyExpr(),
        f"def @main({sig}) {{ nn.conv2d(%x, meta[Constant][0], strides=[2, 2], "
        "padding=[5, 4, 3, 6], dilation=[4, 3]) }",
        f"def @main({sig}) {{ nn.conv2d(%x, meta[Constant][1], strides=[2, 2], "
        "padding=[1, 4, 3, 3], dilation=[4, 3]) }",
        consts=[w, w[:, :, 1:3, 0:4]],
        inputs=[x],
    )
    xl = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    wl = np.ascontiguousarray(w.transpose(2, 3, 1, 0))
    sig = "%x: Tensor[(1, 4, 7, 2), float32]"
    attrs = 'data_layout="NHWC", kernel_layout="HWIO"'
    check(
        passes.SimplifyExpr(),
        f"def @main({sig}) {{ nn.conv2d(%x, meta[Constant][0], strides=[2, 2], "
        f"padding=[5, 4, 3, 6], dilation=[4, 3], {attrs}) }}",
        f"def @main({sig}) {{ nn.conv2d(%x, meta[Constant][1], strides=[2, 2], "
        f"padding=[1, 4, 3, 3], dilation=[4, 3], {attrs}) }}",
        consts=[wl, wl[1:3, 0:4]],
        inputs=[xl],
    )


@pytest.mark.parametrize(
    "pad",
    [
        "nn.pad(%x, 1f, pad_width=[[0, 0], [0, 0], [1, 1], [1, 1]])",  # not zero
        'nn.pad(%x, pad_width=[[0, 0], [0, 0], [1, 1], [1, 1]], pad_mode="reflect")',
        "nn.pad(%x, pad_width=[[0, 0], [0, 0], [-1, 1], [1, 1]])",  # a crop
    ],
)
def test_pads_a_convolution_cannot_take_stay(pad):
    sig = "%x: Tensor[(1, 2, 6, 7), float32]"
    w = np.ones((3, 2, 3, 3), np.float32)
    body = f"nn.conv2d({pad}, meta[Constant][0])"
    check(
        passes.SimplifyExpr(),
        f"def @main({sig}) {{ {body} }}",
        f"def @main({sig}) {{ {body} }}",
        consts=[w],
    )


def test_a_pad_on_the_channels_stays():
    sig = "%x: Tensor[(1, 2, 6, 7), float32]"
    w = np.ones((3, 3, 3, 3), np.float32)
    body = "nn.conv2d(nn.pad(%x, pad_width=[[0, 0], [0, 1], [0, 0], [0, 0]]), meta[Constant][0])"
    check(
        passes.SimplifyExpr(),
        f"def @main({sig}) {{ {body} }}",
        f"def @main({sig}) {{ {body} }}",
        consts=[w],
    )


def test_transpose_composition():
    sig = "%x: Tensor[(2, 3, 4), float32]"
    check(
        passes.SimplifyExpr(),
        f"def @main({sig}) {{ transpose(transpose(%x, axes=[1, 2, 0]), axes=[2, 0, 1]) }}",
        f"def @main({sig}) {{ %x }}",
    )
    check(
        passes.SimplifyExpr(),
        f"def @main({sig}) {{ transpose(transpose(%x, axes=[1, 2, 0]), axes=[1, 0, 2]) }}",
        f"def @main({sig}) {{ transpose(%x, axes=[2, 1, 0]) }}",
        inputs=[np.arange(24, dtype=np.float32).reshape(2, 3, 4)],
    )


W = np.linspace(-1, 1, 4 * 3 * 3 * 3, dtype=np.float32).reshape(4, 3, 3, 3)
S = np.array([0.5, 2.0, -1.0, 3.0], np.float32)
XC = np.random.default_rng(0).standard_normal((1, 3, 6, 6)).astype(np.float32)


def test_conv_times_per_channel_constant_folds_into_the_weight():
    check(
        passes.SimplifyExpr(),
        """
        def @main(%x: Tensor[(1, 3, 6, 6), float32]) {
          multiply(nn.conv2d(%x, meta[Constant][0], padding=[1, 1]), meta[Constant][1])
        }
        """,
        """
        def @main(%x: Tensor[(1, 3, 6, 6), float32]) {
          nn.conv2d(%x, meta[Constant][0], padding=[1, 1])
        }
        """,
        consts=[W, S.reshape(1, 4, 1, 1)],
        consts_after=[W * S.reshape(4, 1, 1, 1)],
        inputs=[XC],
    )


def test_conv_batch_norm_folds_into_weight_and_bias():
    gamma, beta = (
        np.array([1.0, 0.5, 2.0, -1.0], np.float32),
        np.array([0.1, 0.2, 0.3, 0.4], np.float32),
    )
    mean, var = (
        np.array([0.0, 1.0, -1.0, 0.5], np.float32),
        np.array([1.0, 4.0, 0.25, 2.0], np.float32),
    )
    scale = gamma / np.sqrt(var + 1e-5)
    check(
        passes.SimplifyExpr(),
        """
        def @main(%x: Tensor[(1, 3, 6, 6), float32]) {
          nn.batch_norm(nn.conv2d(%x, meta[Constant][0]), meta[Constant][1], meta[Constant][2],
                        meta[Constant][3], meta[Constant][4]).0
        }
        """,
        """
        def @main(%x: Tensor[(1, 3, 6, 6), float32]) {
          nn.bias_add(nn.conv2d(%x, meta[Constant][0]), meta[Constant][1], axis=-3)
        }
        """,
        consts=[W, gamma, beta, mean, var],
        consts_after=[W * scale.reshape(4, 1, 1, 1), beta - mean * scale],
        inputs=[XC],
    )


def test_dense_and_conv_plus_constant_become_bias_add():
    wd = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    b = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    check(
        passes.SimplifyExpr(),
        """
        def @main(%x: Tensor[(2, 3), float32], %c: Tensor[(1, 3, 6, 6), float32]) {
          (add(nn.dense(%x, meta[Constant][0]), meta[Constant][1]),
           add(meta[Constant][2], nn.conv2d(%c, meta[Constant][3])),
           multiply(nn.dense(%x, meta[Constant][0]), meta[Constant][1]))
        }
        """,
        """
        def @main(%x: Tensor[(2, 3), float32], %c: Tensor[(1, 3, 6, 6), float32]) {
          (nn.bias_add(nn.dense(%x, meta[Constant][0]), meta[Constant][1], axis=-1),
           nn.bias_add(nn.conv2d(%c, meta[Constant][3]), meta[Constant][1], axis=-3),
           nn.dense(%x, meta[Constant][4]))
        }
        """,
        consts=[wd, b, b.reshape(4, 1, 1), W],
        consts_after=[wd, b, b.reshape(4, 1, 1), W, wd * b.reshape(4, 1)],
        inputs=[X23, XC],
    )


def test_matmul_with_constant_weight_plus_bias_becomes_dense_bias_add():
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    b = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    check(
        passes.SimplifyExpr(),
        """
        def @main(%x: Tensor[(2, 3), float32]) {
          add(nn.matmul(%x, meta[Constant][0]), meta[Constant][1])
        }
        """,
        """
        def @main(%x: Tensor[(2, 3), float32]) {
          nn.bias_add(nn.dense(%x, meta[Constant][0]), meta[Constant][1], axis=-1)
        }
        """,
        consts=[w, b],
        consts_after=[np.ascontiguousarray(w.T), b],
        inputs=[X23],
    )


def test_sink_reshape_below_elementwise_ops():
    # GPT-2's MLP: dense, reshape to (batch, seq, units), the tanh GELU, reshape back; after
    # SinkReshape the GELU reads the dense in its own shape and the reshapes cancel.
    w = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    src = """
        def @main(%x: Tensor[(2, 3), float32]) {
          %0 = reshape(nn.dense(%x, meta[Constant][0]), newshape=[2, 2, 2]);
          %1 = multiply(%0, 0.5f);
          %2 = add(%0, multiply(power(%0, 3f), 0.044715f));
          %3 = add(tanh(multiply(%2, 0.797885f)), 1f);
          reshape(multiply(%1, %3), newshape=[2, 4])
        }
        """
    check(
        passes.SinkReshape(),
        src,
        """
        def @main(%x: Tensor[(2, 3), float32]) {
          %0 = nn.dense(%x, meta[Constant][0]);
          %1 = multiply(%0, 0.5f);
          %2 = add(%0, multiply(power(%0, 3f), 0.044715f));
          %3 = add(tanh(multiply(%2, 0.797885f)), 1f);
          multiply(%1, %3)
        }
        """,
        consts=[w],
        inputs=[X23],
    )
    # the default pipeline keeps one dense (FoldScaleAxis / SimplifyExpr's dense * s -> dense
    # with W*s run before: with the sunk x * 0.5 they would copy the layer) and fuses the GELU
    # into it
    out = passes.optimize(parse(src, [w]))
    assert out.astext().count("nn.dense(") == 1
    fused = passes.FuseOps()(out).astext()
    assert fused.count("Primitive=1") == 1, fused


def test_sink_reshape_leaves_mixed_shapes_alone():
    # a residual in the reshaped shape (not itself a reshape), an axis or shape attribute, two
    # sources of different shapes: nothing moves
    sig = "%x: Tensor[(2, 3), float32], %r: Tensor[(3, 2), float32], %z: Tensor[(6), float32]"
    body = """(add(reshape(%x, newshape=[3, 2]), %r),
           nn.bias_add(reshape(%x, newshape=[3, 2]), meta[Constant][0], axis=1),
           broadcast_to(reshape(%x, newshape=[3, 2]), shape=[3, 2]),
           add(reshape(%x, newshape=[6]), reshape(reshape(%r, newshape=[1, 6]), newshape=[6])),
           add(reshape(%x, newshape=[6]), reshape(%z, newshape=[6])))"""
    after = """(add(reshape(%x, newshape=[3, 2]), %r),
           nn.bias_add(reshape(%x, newshape=[3, 2]), meta[Constant][0], axis=1),
           broadcast_to(reshape(%x, newshape=[3, 2]), shape=[3, 2]),
           add(reshape(%x, newshape=[6]), reshape(%r, newshape=[6])),
           add(reshape(%x, newshape=[6]), %z))"""
    check(
        passes.SinkReshape(),
        f"def @main({sig}) {{ {body} }}",
        f"def @main({sig}) {{ {after} }}",
        consts=[np.ones(2, np.float32)],
    )


def test_rules_are_data_with_a_description():
    assert len(DEFAULT_RULES) >= 20
    assert all(r.doc and "->" in r.doc for r in DEFAULT_RULES)


def test_a_new_rule_is_one_line():
    # The driver runs any rule list: here x*2 -> x+x, written as data.
    from relay_core.ir import call
    from relay_core.passes.pattern import RewriteDriver, all_equal

    X = wild("x")
    rules = [
        rule(
            op("multiply", X, cpat("two", all_equal(2)), commutative=True),
            lambda x, **_: call("add", x, x),
            "x*2 -> x+x",
        )
    ]
    mod = relay_core.infer_type(parse("def @main(%x: Tensor[(2), float32]) { multiply(2f, %x) }"))
    out = RewriteDriver(rules).rewrite_function(mod["main"], mod)
    want = parse("def @main(%x: Tensor[(2), float32]) { add(%x, %x) }")["main"]
    assert relay_core.structural_equal(out, want)
