"""Converter behaviour beyond the conformance cases: dynamic dims, loops whose carried shapes
change, spans and the source map, the text format, and models compared with onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from tests.require import require

onnx = require("onnx")
ort = require("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

import relay_core  # noqa: E402
from converters.onnx import from_onnx  # noqa: E402
from converters.onnx.values import run  # noqa: E402
from relay_core.ir import Any, Call, ShapeVar, post_order, scaled  # noqa: E402


def _vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def _int64_init(name, v):
    from onnx import numpy_helper

    return numpy_helper.from_array(np.asarray(v, np.int64), name)


def _ort(model, inputs):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, dict(zip(names, inputs)))


def _check_vs_ort(model, inputs, rtol=1e-4, atol=1e-5):
    mod = from_onnx(model)
    ours = run(mod, inputs)
    theirs = _ort(model, inputs)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    return mod


def test_dim_params_become_shape_vars_and_any_size_runs():
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Relu", ["h"], ["y"]),
    ]
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3], np.linspace(-1, 1, 12))
    m = helper.make_model(
        helper.make_graph(nodes, "g", [_vi("x", ["batch", 4])], [_vi("y", ["batch", 3])], [w]),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    mod = from_onnx(m)
    assert mod["main"].params[0].type_annotation.shape == (ShapeVar("batch"), 4)
    assert mod["main"].body.checked_type.shape[0] == ShapeVar("batch")
    for n in (1, 5):
        x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
        np.testing.assert_allclose(run(mod, [x])[0], _ort(m, [x])[0], rtol=1e-5, atol=1e-6)


def test_loop_with_growing_carried_value_gets_any_dims():
    # y = [x]; repeat trip_count times: y = concat(y, y + 1)  -> the length doubles.
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Add", ["y_in", "one"], ["y1"]),
            helper.make_node("Concat", ["y_in", "y1"], ["y_out"], axis=0),
        ],
        "body",
        [
            _vi("i", [], TensorProto.INT64),
            _vi("cond_in", [], TensorProto.BOOL),
            _vi("y_in", [None]),
        ],
        [_vi("cond_out", [], TensorProto.BOOL), _vi("y_out", [None])],
        [helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])],
    )
    loop = helper.make_node("Loop", ["n", "", "x"], ["y"], body=body)
    m = helper.make_model(
        helper.make_graph(
            [loop], "g", [_vi("n", [], TensorProto.INT64), _vi("x", [2])], [_vi("y", [None])]
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    mod = _check_vs_ort(m, [np.array(3, np.int64), np.array([1.0, 5.0], np.float32)])
    assert mod["main"].body.checked_type.shape == (Any,)


def test_spans_and_source_map_name_the_onnx_nodes():
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], name="relu1"),
    ]
    w = helper.make_tensor("w", TensorProto.FLOAT, [2, 1, 3, 3], np.ones(18))
    m = helper.make_model(
        helper.make_graph(nodes, "g", [_vi("x", [1, 1, 4, 4])], [_vi("y", [1, 2, 4, 4])], [w]),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    mod = from_onnx(m, cleanup=False)
    calls = [n for n in post_order(mod["main"]) if isinstance(n, Call)]
    assert {c.span.node for c in calls} == {"conv1", "relu1"}
    assert mod.attrs["input_names"] == ["x"] and mod.attrs["output_names"] == ["y"]
    assert [n[0] for n in mod.attrs["source_nodes"]] == ["conv1", "relu1"]
    assert set(mod.attrs["source_outputs"]) == {"c", "y"}


def test_converted_module_roundtrips_through_the_text_format():
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Mul", ["s_in", "s_in"], ["s_out"]),
            helper.make_node("Identity", ["s_out"], ["scan"]),
        ],
        "body",
        [_vi("i", [], TensorProto.INT64), _vi("cond_in", [], TensorProto.BOOL), _vi("s_in", [2])],
        [_vi("cond_out", [], TensorProto.BOOL), _vi("s_out", [2]), _vi("scan", [2])],
    )
    m = helper.make_model(
        helper.make_graph(
            [helper.make_node("Loop", ["n", "", "x"], ["s", "all"], body=body)],
            "g",
            [_vi("n", [], TensorProto.INT64), _vi("x", [2])],
            [_vi("s", [2]), _vi("all", [None, 2])],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    mod = from_onnx(m)
    text = str(mod)
    assert "fn (" in text and "if (" in text  # the loop is a recursive function
    back = relay_core.parse(text)
    assert str(back) == text
    args = [np.array(3, np.int64), np.array([1.5, -2.0], np.float32)]
    for a, b in zip(relay_core.evaluate(back, *args), _ort(m, args)):
        np.testing.assert_allclose(a, b, rtol=1e-5)


def test_small_cnn_matches_onnxruntime():
    rng = np.random.default_rng(0)

    def init(name, shape):
        return helper.make_tensor(name, TensorProto.FLOAT, shape, rng.standard_normal(shape) * 0.3)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c1", "g", "be", "mu", "var"], ["bn"]),
        helper.make_node("Relu", ["bn"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "w2", "b2"], ["z"], transB=1),
        helper.make_node("Softmax", ["z"], ["y"], axis=-1),
    ]
    inits = [
        init("w1", [4, 3, 3, 3]),
        init("b1", [4]),
        init("g", [4]),
        init("be", [4]),
        init("mu", [4]),
        helper.make_tensor("var", TensorProto.FLOAT, [4], [1.0, 0.5, 2.0, 1.5]),
        init("w2", [5, 16]),
        init("b2", [5]),
    ]
    m = helper.make_model(
        helper.make_graph(nodes, "cnn", [_vi("x", [2, 3, 8, 8])], [_vi("y", [2, 5])], inits),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    _check_vs_ort(m, [rng.standard_normal((2, 3, 8, 8)).astype(np.float32)])


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_lstm_with_sequence_lengths_matches_onnxruntime(direction):
    rng = np.random.default_rng(1)
    nd = 2 if direction == "bidirectional" else 1
    hidden, inp, seq, batch = 3, 2, 5, 2
    shapes = {"W": [nd, 4 * hidden, inp], "R": [nd, 4 * hidden, hidden], "B": [nd, 8 * hidden]}
    inits = [
        helper.make_tensor(k, TensorProto.FLOAT, s, rng.standard_normal(s) * 0.5)
        for k, s in shapes.items()
    ]
    inits.append(helper.make_tensor("lens", TensorProto.INT32, [batch], [5, 3]))
    node = helper.make_node(
        "LSTM",
        ["x", "W", "R", "B", "lens"],
        ["y", "yh", "yc"],
        hidden_size=hidden,
        direction=direction,
    )
    m = helper.make_model(
        helper.make_graph(
            [node],
            "g",
            [_vi("x", [seq, batch, inp])],
            [
                _vi("y", [seq, nd, batch, hidden]),
                _vi("yh", [nd, batch, hidden]),
                _vi("yc", [nd, batch, hidden]),
            ],
            inits,
        ),
        opset_imports=[helper.make_opsetid("", 14)],
    )
    _check_vs_ort(m, [rng.standard_normal((seq, batch, inp)).astype(np.float32)])


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("seq", [6, 70, "T"])
def test_recurrent_ops_unroll_short_static_sequences_and_loop_otherwise(kind, seq):
    # A known length up to UNROLL_MAX_STEPS (64) becomes a static graph; a longer or run-time
    # length stays a recursive function. Both match onnxruntime, interpreted and compiled.
    import relay_core
    from converters.onnx.rnn import UNROLL_MAX_STEPS

    rng = np.random.default_rng(4)
    hidden, inp, batch = 4, 3, 2
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind]
    shapes = {"W": [1, gates * hidden, inp], "R": [1, gates * hidden, hidden]}
    shapes["B"] = [1, 2 * gates * hidden]
    inits = [
        helper.make_tensor(k, TensorProto.FLOAT, s, rng.standard_normal(s) * 0.5)
        for k, s in shapes.items()
    ]
    outs = ["y", "yh"] + (["yc"] if kind == "LSTM" else [])
    node = helper.make_node(kind, ["x", "W", "R", "B"], outs, hidden_size=hidden)
    m = helper.make_model(
        helper.make_graph(
            [node],
            "g",
            [_vi("x", [seq, batch, inp])],
            [_vi("y", [seq, 1, batch, hidden])] + [_vi(o, [1, batch, hidden]) for o in outs[1:]],
            inits,
        ),
        opset_imports=[helper.make_opsetid("", 14)],
    )
    n = 70 if seq == "T" else seq
    x = rng.standard_normal((n, batch, inp)).astype(np.float32)
    mod = _check_vs_ort(m, [x])
    looped = "fn (" in mod.astext()
    assert looped == (seq == "T" or seq > UNROLL_MAX_STEPS)
    got = relay_core.build(mod)(x)
    for a, b in zip(got, _ort(m, [x])):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_function_bodied_op_without_a_converter_uses_its_body():
    # CenterCropPad has no converter of its own: it converts through its function body.
    node = helper.make_node("CenterCropPad", ["x", "shape"], ["y"], axes=[0, 1])
    m = helper.make_model(
        helper.make_graph(
            [node],
            "g",
            [_vi("x", [5, 3, 2])],
            [_vi("y", [3, 4, 2])],
            [helper.make_tensor("shape", TensorProto.INT64, [2], [3, 4])],
        ),
        opset_imports=[helper.make_opsetid("", 18)],
    )
    from converters.onnx.table import TABLES

    assert "CenterCropPad" not in TABLES["ai.onnx"]
    _check_vs_ort(m, [np.arange(30, dtype=np.float32).reshape(5, 3, 2)])


def test_model_local_functions_are_inlined():
    f = helper.make_function(
        "my.fn",
        "AddTwice",
        ["a", "b"],
        ["c"],
        [helper.make_node("Add", ["a", "b"], ["t"]), helper.make_node("Add", ["t", "b"], ["c"])],
        [helper.make_opsetid("", 17)],
    )
    m = helper.make_model(
        helper.make_graph(
            [helper.make_node("AddTwice", ["x", "y"], ["z"], domain="my.fn")],
            "g",
            [_vi("x", [3]), _vi("y", [3])],
            [_vi("z", [3])],
        ),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("my.fn", 1)],
        functions=[f],
    )
    x, y = np.ones(3, np.float32), np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(run(from_onnx(m), [x, y])[0], x + 2 * y)


def _ml_model(node, inputs, outputs):
    return helper.make_model(
        helper.make_graph([node], "g", inputs, outputs),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)],
    )


@pytest.mark.parametrize(
    "node,x",
    [
        (
            helper.make_node(
                "Scaler",
                ["x"],
                ["y"],
                domain="ai.onnx.ml",
                offset=[1.0, -2.0, 0.5],
                scale=[2.0, 0.5, 3.0],
            ),
            np.arange(6, dtype=np.float32).reshape(2, 3),
        ),
        (
            helper.make_node("Normalizer", ["x"], ["y"], domain="ai.onnx.ml", norm="L2"),
            np.arange(1, 7, dtype=np.float32).reshape(2, 3),
        ),
        (
            helper.make_node("Normalizer", ["x"], ["y"], domain="ai.onnx.ml", norm="MAX"),
            np.arange(1, 7, dtype=np.float32).reshape(2, 3),
        ),
        (
            helper.make_node(
                "LinearRegressor",
                ["x"],
                ["y"],
                domain="ai.onnx.ml",
                coefficients=[0.5, -1.0, 2.0, 1.0, 0.0, 3.0],
                intercepts=[0.1, -0.2],
                targets=2,
            ),
            np.arange(6, dtype=np.float32).reshape(2, 3),
        ),
        (
            helper.make_node(
                "Imputer",
                ["x"],
                ["y"],
                domain="ai.onnx.ml",
                imputed_value_floats=[9.0, 8.0, 7.0],
                replaced_value_float=float("nan"),
            ),
            np.array([[1, np.nan, 3], [np.nan, 5, np.nan]], np.float32),
        ),
    ],
)
def test_ml_ops_match_onnxruntime(node, x):
    m = _ml_model(node, [_vi("x", list(x.shape))], [_vi("y", ["n", "k"])])
    _check_vs_ort(m, [x])


def test_category_mapper_matches_onnxruntime():
    node = helper.make_node(
        "CategoryMapper",
        ["x"],
        ["y"],
        domain="ai.onnx.ml",
        cats_strings=["a", "b", "c"],
        cats_int64s=[1, 2, 3],
        default_int64=-7,
    )
    m = _ml_model(node, [_vi("x", [4], TensorProto.STRING)], [_vi("y", [4], TensorProto.INT64)])
    x = np.array(["b", "z", "a", "c"], dtype=object)
    np.testing.assert_array_equal(run(from_onnx(m), [x])[0], _ort(m, [x])[0])


@pytest.mark.parametrize("op", ["AveragePool", "MaxPool"])
def test_ceil_mode_window_longer_than_the_input(op):
    """HF EfficientNet's pooler as torch.onnx exports it: a 2560x2560 window with ceil_mode on a
    7x7 map and a dynamic batch; onnxruntime takes it as a global pool, and so must we (the
    type relation refused it; the interpreter must not materialise the window)."""
    extra = {"count_include_pad": 1} if op == "AveragePool" else {}
    node = helper.make_node(
        op,
        ["x"],
        ["y"],
        kernel_shape=[2560, 2560],
        strides=[2560, 2560],
        pads=[0, 0, 0, 0],
        ceil_mode=1,
        **extra,
    )
    graph = helper.make_graph(
        [node], "g", [_vi("x", ["batch", 8, 7, 7])], [_vi("y", ["batch", 8, 1, 1])]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.random.default_rng(0).standard_normal((3, 8, 7, 7)).astype(np.float32)
    mod = _check_vs_ort(model, [x])
    from relay_import import compile as compile_

    got = compile_(mod)(x)[0]
    np.testing.assert_allclose(got, _ort(model, [x])[0], rtol=1e-5, atol=1e-6)


def test_group_norm_export_with_a_dynamic_batch_builds_shape_generic():
    """torch.onnx's GroupNorm (HF PoolFormer): Reshape(x, [0, G, -1]), InstanceNormalization,
    Reshape(_, Shape(x)); with a dynamic batch the second reshape's shape is only known at run
    time, and it lost every dim: the pool after it could not build shape-generic and the module
    compiled once per input shape. The default load + compile must give one shape-generic
    module, equal to onnxruntime at two batch sizes."""
    from onnx import numpy_helper

    from relay_import import compile as compile_

    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(np.array([0, 2, -1], np.int64), "g"),
        numpy_helper.from_array(np.ones(2, np.float32), "s"),
        numpy_helper.from_array(np.zeros(2, np.float32), "b"),
        numpy_helper.from_array(rng.standard_normal((8, 1, 1)).astype(np.float32), "gamma"),
    ]
    nodes = [
        helper.make_node("Reshape", ["x", "g"], ["r"]),
        helper.make_node("InstanceNormalization", ["r", "s", "b"], ["n"]),
        helper.make_node("Shape", ["x"], ["sh"]),
        helper.make_node("Reshape", ["n", "sh"], ["back"]),
        helper.make_node("Mul", ["back", "gamma"], ["m"]),
        helper.make_node(
            "AveragePool",
            ["m"],
            ["y"],
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
            count_include_pad=0,
        ),
    ]
    graph = helper.make_graph(
        nodes, "gn", [_vi("x", ["batch", 8, 6, 5])], [_vi("y", ["batch", 8, 6, 5])], inits
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    lib = compile_(from_onnx(model))
    assert type(lib).__name__ == "CompiledModule"
    for n in (1, 3):
        x = rng.standard_normal((n, 8, 6, 5)).astype(np.float32)
        np.testing.assert_allclose(lib(x)[0], _ort(model, [x])[0], rtol=1e-4, atol=1e-5)


def test_eca_gate_export_with_a_dynamic_batch_builds_shape_generic():
    """timm's ECA attention (ecaresnet*) as its onnx_export writes it with a dynamic batch:
    y = mean(x).view(x.shape[0], 1, -1), a conv1d over channels, a sigmoid, a view back and
    `y.expand_as(x)`, Expand(_, Shape(x)). The Expand lost every dim (`?` batch from there on)
    and the module compiled once per input shape; the flatten before the classifier,
    x.reshape(-1, C), lost the batch's name. One shape-generic module, equal to onnxruntime at
    two batch sizes."""
    from onnx import numpy_helper

    from relay_import import compile as compile_

    rng = np.random.default_rng(0)
    c = 8
    inits = [
        numpy_helper.from_array(np.array([2, 3], np.int64), "hw"),
        numpy_helper.from_array(np.array([0], np.int64), "i0"),
        numpy_helper.from_array(np.array([1, -1], np.int64), "one_rest"),
        numpy_helper.from_array(np.array([-1, 1, 1], np.int64), "rest11"),
        numpy_helper.from_array(np.array([-1, c], np.int64), "flat"),
        numpy_helper.from_array(rng.standard_normal((1, 1, 3)).astype(np.float32), "w1d"),
    ]
    nodes = [
        helper.make_node("ReduceMean", ["x", "hw"], ["m"], keepdims=0),
        helper.make_node("Shape", ["x"], ["sh"]),
        helper.make_node("Gather", ["sh", "i0"], ["n"], axis=0),
        helper.make_node("Concat", ["n", "one_rest"], ["s1"], axis=0),
        helper.make_node("Reshape", ["m", "s1"], ["m1"]),
        helper.make_node("Conv", ["m1", "w1d"], ["cv"], kernel_shape=[3], pads=[1, 1]),
        helper.make_node("Sigmoid", ["cv"], ["g"]),
        helper.make_node("Concat", ["n", "rest11"], ["s2"], axis=0),
        helper.make_node("Reshape", ["g", "s2"], ["g4"]),
        helper.make_node("Expand", ["g4", "sh"], ["ge"]),
        helper.make_node("Mul", ["x", "ge"], ["xg"]),
        helper.make_node("GlobalAveragePool", ["xg"], ["p"]),
        helper.make_node("Reshape", ["p", "flat"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "eca", [_vi("x", ["batch", c, 6, 5])], [_vi("y", ["batch", c])], inits
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    mod = from_onnx(model)
    assert str(mod["main"].checked_type.ret_type) == "Tensor[(batch, 8), float32]"
    lib = compile_(mod)
    assert type(lib).__name__ == "CompiledModule"
    for n in (1, 3):
        x = rng.standard_normal((n, c, 6, 5)).astype(np.float32)
        np.testing.assert_allclose(lib(x)[0], _ort(model, [x])[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_by_constant_scales_with_a_dynamic_batch_builds_shape_generic(mode):
    """timm's HRNet fuse layers exported with a dynamic batch: Resize(x, scales=[1, 1, 2, 2])
    on (batch, C, 7, 6). The static sizes were taken only when every dim was static, so this
    became dyn.image.resize, whose result dims are all run-time, and the module compiled once
    per input shape. One shape-generic module, equal to onnxruntime at two batch sizes."""
    from onnx import numpy_helper

    from relay_import import compile as compile_

    inits = [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc")]
    nodes = [
        helper.make_node(
            "Resize", ["x", "", "sc"], ["r"], mode=mode, coordinate_transformation_mode="asymmetric"
        ),
        helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    ]
    graph = helper.make_graph(
        nodes, "up", [_vi("x", ["batch", 4, 7, 6])], [_vi("y", ["batch", 4, 14, 12])], inits
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    mod = from_onnx(model)
    assert "dyn." not in str(mod), str(mod)
    lib = compile_(mod)
    assert type(lib).__name__ == "CompiledModule"
    rng = np.random.default_rng(4)
    for n in (1, 3):
        x = rng.standard_normal((n, 4, 7, 6)).astype(np.float32)
        np.testing.assert_allclose(lib(x)[0], _ort(model, [x])[0], rtol=1e-5, atol=1e-6)


def test_lstm_after_a_reshape_by_run_time_shape_pieces():
    """timm's Sequencer2D exported with a dynamic batch: x.reshape(-1, x.size(1), x.size(2))
    (Reshape(x, Concat(-1, Gather(Shape(x), 1), Gather(Shape(x), 2)))), a transpose to
    time-major and a bidirectional LSTM whose initial states are ConstantOfShape of the
    run-time batch. The Gathers pick static dims, but the driver folded only nodes with
    constant inputs, so the shape stayed a run-time value while the converters ran and the
    LSTM saw (?, ?, ?): refused ("needs a static batch size"). Equal to onnxruntime at two
    batch sizes."""
    from onnx import numpy_helper

    from relay_import import compile as compile_

    rng = np.random.default_rng(5)
    t, c, h = 5, 8, 16
    inits = [
        numpy_helper.from_array(np.array(1, np.int64), "i1"),
        numpy_helper.from_array(np.array(2, np.int64), "i2"),
        numpy_helper.from_array(np.array([0], np.int64), "ax"),
        numpy_helper.from_array(np.array([-1], np.int64), "m1"),
        numpy_helper.from_array(np.array([2], np.int64), "two"),
        numpy_helper.from_array(np.array([h], np.int64), "hid"),
        numpy_helper.from_array(rng.standard_normal((2, 4 * h, c)).astype(np.float32) * 0.3, "W"),
        numpy_helper.from_array(rng.standard_normal((2, 4 * h, h)).astype(np.float32) * 0.3, "R"),
        numpy_helper.from_array(rng.standard_normal((2, 8 * h)).astype(np.float32) * 0.1, "B"),
    ]
    nodes = [
        helper.make_node("Shape", ["x"], ["sh"]),
        helper.make_node("Gather", ["sh", "i1"], ["g1"], axis=0),
        helper.make_node("Gather", ["sh", "i2"], ["g2"], axis=0),
        helper.make_node("Unsqueeze", ["g1", "ax"], ["u1"]),
        helper.make_node("Unsqueeze", ["g2", "ax"], ["u2"]),
        helper.make_node("Concat", ["m1", "u1", "u2"], ["ns"], axis=0),
        helper.make_node("Reshape", ["x", "ns"], ["r"]),
        helper.make_node("Transpose", ["r"], ["tm"], perm=[1, 0, 2]),
        helper.make_node("Shape", ["tm"], ["sh2"]),
        helper.make_node("Gather", ["sh2", "i1"], ["b"], axis=0),
        helper.make_node("Unsqueeze", ["b", "ax"], ["ub"]),
        helper.make_node("Concat", ["two", "ub", "hid"], ["h0s"], axis=0),
        helper.make_node("ConstantOfShape", ["h0s"], ["h0"]),
        helper.make_node(
            "LSTM",
            ["tm", "W", "R", "B", "", "h0", "h0"],
            ["y"],
            direction="bidirectional",
            hidden_size=h,
        ),
    ]
    graph = helper.make_graph(
        nodes, "seq", [_vi("x", ["batch", t, c])], [_vi("y", [t, 2, "batch", h])], inits
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    lib = compile_(from_onnx(model))
    for n in (1, 3):
        x = rng.standard_normal((n, t, c)).astype(np.float32)
        np.testing.assert_allclose(lib(x)[0], _ort(model, [x])[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind,gates", [("LSTM", 4), ("GRU", 3), ("RNN", 1)])
@pytest.mark.parametrize("init", ["zeros", "constant_of_shape"])
def test_recurrent_layer_with_run_time_batch_and_length(kind, gates, init):
    """A text model's LSTM / GRU exported with dynamic batch and sequence axes (torch.onnx,
    dynamic_axes={0: "batch", 1: "seq"}): the length is a run-time loop count and the batch
    a run-time dim, the initial states either absent (zeros) or ConstantOfShape of
    (directions, batch, hidden) as torch's exporter writes them. Refused before ("needs a
    static batch size"); equal to onnxruntime at two (length, batch) pairs, one past the
    unrolling limit."""
    from onnx import numpy_helper

    from relay_import import compile as compile_

    rng = np.random.default_rng(6)
    c, h = 6, 8
    inits = [
        numpy_helper.from_array(
            0.4 * rng.standard_normal((2, gates * h, c)).astype(np.float32), "W"
        ),
        numpy_helper.from_array(
            0.4 * rng.standard_normal((2, gates * h, h)).astype(np.float32), "R"
        ),
        numpy_helper.from_array(
            0.1 * rng.standard_normal((2, 2 * gates * h)).astype(np.float32), "B"
        ),
        numpy_helper.from_array(np.array([1], np.int64), "i1"),
        numpy_helper.from_array(np.array([2], np.int64), "two"),
        numpy_helper.from_array(np.array([h], np.int64), "hid"),
    ]
    nodes = []
    states = []
    if init == "constant_of_shape":
        nodes += [
            helper.make_node("Shape", ["x"], ["sh"]),
            helper.make_node("Gather", ["sh", "i1"], ["b"], axis=0),
            helper.make_node("Concat", ["two", "b", "hid"], ["h0s"], axis=0),
            helper.make_node("ConstantOfShape", ["h0s"], ["h0"]),
        ]
        states = ["", "h0"] + (["h0"] if kind == "LSTM" else [])
    nodes.append(
        helper.make_node(
            kind, ["x", "W", "R", "B", *states], ["y"], direction="bidirectional", hidden_size=h
        )
    )
    graph = helper.make_graph(
        nodes, "rnn", [_vi("x", ["seq", "batch", c])], [_vi("y", ["seq", 2, "batch", h])], inits
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    lib = compile_(from_onnx(model))
    for t, n in ((3, 1), (70, 3)):
        x = (0.5 * rng.standard_normal((t, n, c))).astype(np.float32)
        np.testing.assert_allclose(lib(x)[0], _ort(model, [x])[0], rtol=1e-4, atol=1e-5)


def test_shape_of_a_static_shape_folds():
    """The shape of SigLIP's pooling head as torch.onnx exports it: Expand(probe,
    ConstantOfShape(Shape(c))) where c concatenates the run-time batch with constants. c's
    length is static, so Shape(c) is a constant (the Shape converter returns static shapes as
    constants) and every op after it static; equal to onnxruntime. (The exported SigLIP model
    itself was refused, "a shape of unknown length"; this small graph converted before too:
    the model is in the zoo, tests/zoo/catalog.py.)"""
    from onnx import numpy_helper

    inits = [
        numpy_helper.from_array(np.array(0, np.int64), "zero"),
        numpy_helper.from_array(np.array([0], np.int64), "ax"),
        numpy_helper.from_array(np.array([1], np.int64), "one"),
        numpy_helper.from_array(
            np.random.default_rng(0).standard_normal((1, 4)).astype(np.float32), "probe"
        ),
    ]
    nodes = [
        helper.make_node("Shape", ["x"], ["sx"]),
        helper.make_node("Gather", ["sx", "zero"], ["b"], axis=0),
        helper.make_node("Unsqueeze", ["b", "ax"], ["b1"]),
        helper.make_node("Concat", ["b1", "one"], ["c"], axis=0),
        helper.make_node("Shape", ["c"], ["sc"]),
        helper.make_node(
            "ConstantOfShape",
            ["sc"],
            ["ones"],
            value=helper.make_tensor("v", TensorProto.INT64, [1], [1]),
        ),
        helper.make_node("Expand", ["probe", "ones"], ["p"]),
        helper.make_node("Add", ["x", "p"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "g", [_vi("x", ["batch", 4])], [_vi("y", ["batch", 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    mod = _check_vs_ort(model, [x])
    assert "dyn." not in str(mod)


def test_repeat_by_batch_and_chunk_of_a_dynamic_batch_build_shape_generic():
    """RAFT (torchvision) exported with a dynamic batch: both images go through one encoder
    (concatenated on axis 0), `torch.chunk(fmaps, 2, dim=0)` splits them at a run-time point
    (Slice with run-time ends on a constant axis), and the coordinate grid is
    `grid.repeat(batch, 1, 1, 1)` (Tile by `[Shape(x)[0], 1, 1, 1]`). Each lost every dim of
    its result: the chunk now keeps the unsliced axes, the Tile is a broadcast to x's batch;
    one shape-generic module equal to onnxruntime at two batch sizes."""
    from onnx import numpy_helper

    from relay_import import compile as compile_

    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(np.array([0], np.int64), "i0"),
        numpy_helper.from_array(np.array([1, 1, 1], np.int64), "ones3"),
        numpy_helper.from_array(rng.standard_normal((1, 2, 4, 5)).astype(np.float32), "grid"),
        numpy_helper.from_array(np.array([1], np.int64), "one"),
        numpy_helper.from_array(np.array([2], np.int64), "two"),
        numpy_helper.from_array(rng.standard_normal((2, 3, 1, 1)).astype(np.float32), "w"),
    ]
    nodes = [
        helper.make_node("Concat", ["a", "b"], ["ab"], axis=0),
        helper.make_node("Conv", ["ab", "w"], ["f"]),
        helper.make_node("Shape", ["f"], ["fs"]),
        helper.make_node("Gather", ["fs", "i0"], ["n2"], axis=0),
        helper.make_node("Add", ["n2", "one"], ["n2p"]),
        helper.make_node("Div", ["n2p", "two"], ["half"]),
        helper.make_node("Slice", ["f", "i0", "half", "i0"], ["f1"]),
        helper.make_node("Slice", ["f", "half", "n2", "i0"], ["f2"]),
        helper.make_node("Shape", ["a"], ["as"]),
        helper.make_node("Gather", ["as", "i0"], ["n"], axis=0),
        helper.make_node("Concat", ["n", "ones3"], ["reps"], axis=0),
        helper.make_node("Tile", ["grid", "reps"], ["g"]),
        helper.make_node("Mul", ["f1", "f2"], ["p"]),
        helper.make_node("Conv", ["p", "w2"], ["y1"]),
        helper.make_node("Conv", ["g", "w2"], ["y2"]),
    ]
    inits.append(
        numpy_helper.from_array(rng.standard_normal((3, 2, 3, 3)).astype(np.float32), "w2")
    )
    graph = helper.make_graph(
        nodes,
        "raft",
        [_vi("a", ["batch", 3, 4, 5]), _vi("b", ["batch", 3, 4, 5])],
        [_vi("y1", ["batch", 3, 2, 3]), _vi("y2", ["batch", 3, 2, 3])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    mod = from_onnx(model)
    ret = str(mod["main"].checked_type.ret_type)
    assert ret == "(Tensor[(?, 3, 2, 3), float32], Tensor[(batch, 3, 2, 3), float32])", ret
    lib = compile_(mod)
    assert type(lib).__name__ == "CompiledModule"
    for n in (1, 3):
        a, b = (rng.standard_normal((n, 3, 4, 5)).astype(np.float32) for _ in range(2))
        for got, want in zip(lib(a, b), _ort(model, [a, b])):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_constant_of_shape_of_the_batch_builds_shape_generic():
    """EdgeNeXt's positional encoding (timm) with a dynamic batch: `zeros(B, H, W)` with B =
    x.shape[0] is ConstantOfShape(Concat(Shape(x)[0], [H, W])). It was a dyn.full of all-`?`
    dims and the module compiled once per input shape; now a full of the static dims broadcast
    to x's batch (named: `batch`)."""
    from onnx import numpy_helper

    from relay_import import compile as compile_

    rng = np.random.default_rng(1)
    inits = [
        numpy_helper.from_array(np.array([0], np.int64), "i0"),
        numpy_helper.from_array(np.array([4, 5], np.int64), "hw"),
        numpy_helper.from_array(rng.standard_normal((6, 1, 3, 3)).astype(np.float32), "w"),
    ]
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i0"], ["n"], axis=0),
        helper.make_node("Concat", ["n", "hw"], ["shape"], axis=0),
        helper.make_node(
            "ConstantOfShape",
            ["shape"],
            ["z"],
            value=numpy_helper.from_array(np.array([0.5], np.float32)),
        ),
        helper.make_node("Unsqueeze", ["z", "one"], ["z1"]),
        helper.make_node("Add", ["x", "z1"], ["xz"]),
        helper.make_node("Conv", ["xz", "w"], ["y"], pads=[1, 1, 1, 1]),
    ]
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "one"))
    graph = helper.make_graph(
        nodes, "posenc", [_vi("x", ["batch", 1, 4, 5])], [_vi("y", ["batch", 6, 4, 5])], inits
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    mod = from_onnx(model)
    assert str(mod["main"].checked_type.ret_type) == "Tensor[(batch, 6, 4, 5), float32]"
    lib = compile_(mod)
    assert type(lib).__name__ == "CompiledModule"
    for n in (1, 2):
        x = rng.standard_normal((n, 1, 4, 5)).astype(np.float32)
        np.testing.assert_allclose(lib(x)[0], _ort(model, [x])[0], rtol=1e-4, atol=1e-5)


def test_detector_tail_with_run_time_box_counts_compiles():
    """The tail of a two-stage detector (torchvision's Faster R-CNN as torch.onnx exports it):
    boxes over a score threshold (NonZero, a run-time count), TopK of them, NMS of those, and
    RoiAlign of the kept boxes on a feature map. Every count is known at run time only; sort,
    NMS and RoiAlign needed static extents and the model did not compile. Compiled, against
    onnxruntime, for inputs keeping different numbers of boxes."""
    from onnx import numpy_helper

    from relay_import import compile as compile_

    inits = [
        numpy_helper.from_array(np.array(0.3, np.float32), "thr"),
        numpy_helper.from_array(np.array([1], np.int64), "ax1"),
        numpy_helper.from_array(np.array([0], np.int64), "ax0"),
        numpy_helper.from_array(np.array([2], np.int64), "i2"),
        numpy_helper.from_array(np.array([6], np.int64), "k6"),
        numpy_helper.from_array(np.array([10], np.int64), "maxout"),
        numpy_helper.from_array(np.array([0.5], np.float32), "iou"),
    ]
    nodes = [
        helper.make_node("Greater", ["scores", "thr"], ["keep"]),
        helper.make_node("NonZero", ["keep"], ["nz"]),
        helper.make_node("Squeeze", ["nz", "ax0"], ["idx"]),
        helper.make_node("Gather", ["boxes", "idx"], ["b1"], axis=0),
        helper.make_node("Gather", ["scores", "idx"], ["s1"], axis=0),
        helper.make_node("Shape", ["s1"], ["ns"]),
        helper.make_node("Min", ["ns", "k6"], ["k"]),
        helper.make_node("TopK", ["s1", "k"], ["s2", "i2k"], axis=0),
        helper.make_node("Gather", ["b1", "i2k"], ["b2"], axis=0),
        helper.make_node("Unsqueeze", ["b2", "ax0"], ["b3"]),
        helper.make_node("Unsqueeze", ["s2", "ax0"], ["s3a"]),
        helper.make_node("Unsqueeze", ["s3a", "ax0"], ["s3"]),
        helper.make_node("NonMaxSuppression", ["b3", "s3", "maxout", "iou"], ["sel"]),
        helper.make_node("Gather", ["sel", "i2"], ["bi"], axis=1),
        helper.make_node("Squeeze", ["bi", "ax1"], ["bis"]),
        helper.make_node("Gather", ["b2", "bis"], ["rois"], axis=0),
        helper.make_node("Shape", ["bis"], ["nk"]),
        helper.make_node(
            "ConstantOfShape",
            ["nk"],
            ["bidx"],
            value=numpy_helper.from_array(np.array([0], np.int64)),
        ),
        helper.make_node(
            "RoiAlign",
            ["feat", "rois", "bidx"],
            ["y"],
            output_height=2,
            output_width=2,
            sampling_ratio=2,
            spatial_scale=0.5,
        ),
    ]
    graph = helper.make_graph(
        nodes,
        "tail",
        [_vi("boxes", [12, 4]), _vi("scores", [12]), _vi("feat", [1, 3, 8, 8])],
        [_vi("y", [None, 3, 2, 2])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    lib = compile_(from_onnx(model))
    counts = set()
    for seed in range(4):
        r = np.random.default_rng(seed)
        xy = r.uniform(0, 4, (12, 2)).astype(np.float32)  # overlapping: NMS drops some
        boxes = np.concatenate([xy, xy + r.uniform(1, 6, (12, 2)).astype(np.float32)], 1)
        scores = r.uniform(0, 1, 12).astype(np.float32)
        feat = r.standard_normal((1, 3, 8, 8)).astype(np.float32)
        got, want = lib(boxes, scores, feat)[0], _ort(model, [boxes, scores, feat])[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        counts.add(want.shape[0])
    assert len(counts) > 1  # the run-time counts differ between the inputs


@pytest.mark.parametrize("trips", ["constant", "input"])
def test_slice_by_a_loop_counter_with_scalar_bounds(trips):
    """torchvision's MViT through the TorchScript exporter slices inside a Loop by the loop
    counter, which it declares of shape (1,) where ONNX has a scalar (onnxruntime feeds what
    is declared; we take the scalar): Slice by scalar starts / ends failed with an
    IndexError. A constant trip count unrolls the loop; one given at run time keeps it."""
    from onnx import numpy_helper

    seq_t = helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None)
    body = helper.make_graph(
        [
            helper.make_node("Add", ["it", "one_b"], ["end"]),
            helper.make_node("Slice", ["x", "it", "end", "ax"], ["piece"]),
            helper.make_node("SequenceInsert", ["s", "piece"], ["s_out"]),
            helper.make_node("Identity", ["c"], ["c_out"]),
        ],
        "body",
        [_vi("it", [1], TensorProto.INT64), _vi("c", [], TensorProto.BOOL), seq_t],
        [
            _vi("c_out", [], TensorProto.BOOL),
            helper.make_tensor_sequence_value_info("s_out", TensorProto.FLOAT, None),
        ],
        [
            numpy_helper.from_array(np.array(1, np.int64), "one_b"),
            numpy_helper.from_array(np.array([0], np.int64), "ax"),
        ],
    )
    graph = helper.make_graph(
        [
            helper.make_node("SequenceEmpty", [], ["s0"], dtype=TensorProto.FLOAT),
            helper.make_node("Loop", ["n", "cond", "s0"], ["pieces"], body=body),
            helper.make_node("ConcatFromSequence", ["pieces"], ["y"], axis=0),
        ],
        "loop_slice",
        [_vi("x", [3, 4])] + ([_vi("n", [], TensorProto.INT64)] if trips == "input" else []),
        [_vi("y", [None, 4])],
        [numpy_helper.from_array(np.array(True), "cond")]
        + ([numpy_helper.from_array(np.array(3, np.int64), "n")] if trips == "constant" else []),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)
    feeds = [x] + ([np.array(3, np.int64)] if trips == "input" else [])
    mod = _check_vs_ort(model, feeds)
    assert _has_loop(mod) == (trips == "input")
    if trips == "constant":  # unrolled: the pieces keep their shapes
        assert mod["main"].body.checked_type.shape == (3, 4)


def _has_loop(mod):
    from relay_core.ir import Function

    return any(type(n) is Function for n in post_order(mod["main"].body))


def _seq_out(name):
    return helper.make_tensor_sequence_value_info(name, TensorProto.FLOAT, None)


def test_list_built_in_a_one_trip_loop_keeps_shapes_for_a_rank_changing_if():
    """torchvision's MViTv2 through the TorchScript exporter: a list built by a Loop of one
    iteration (SequenceEmpty, SequenceInsert of a slice), a piece appended, its items read back
    and concatenated, then `squeeze(1)` exported as If(shape[1] == 1, Squeeze, Identity), whose
    branches differ in rank. A list forgets its items' dims, so the If was refused; the loop
    is unrolled and the list's items known at conversion time: the If's condition folds."""
    from onnx import numpy_helper

    body = helper.make_graph(
        [
            helper.make_node("Gather", ["bounds", "it"], ["lo"], axis=0),
            helper.make_node("Add", ["it", "one"], ["it1"]),
            helper.make_node("Gather", ["bounds", "it1"], ["hi"], axis=0),
            helper.make_node("Slice", ["u", "lo", "hi", "ax2"], ["piece"]),
            helper.make_node("SequenceInsert", ["s", "piece"], ["s_out"]),
            helper.make_node("Identity", ["c"], ["c_out"]),
        ],
        "body",
        [_vi("it", [1], TensorProto.INT64), _vi("c", [], TensorProto.BOOL), _seq_out("s")],
        [_vi("c_out", [], TensorProto.BOOL), _seq_out("s_out")],
        [numpy_helper.from_array(np.array([1], np.int64), "one")],
    )
    then_g = helper.make_graph(
        [helper.make_node("Squeeze", ["cat", "ax1"], ["sq"])], "then", [], [_vi("sq", ["b", 6, 4])]
    )
    else_g = helper.make_graph(
        [helper.make_node("Identity", ["cat"], ["id"])], "else", [], [_vi("id", ["b", 1, 6, 4])]
    )
    nodes = [
        helper.make_node("Unsqueeze", ["x", "ax1"], ["u"]),
        helper.make_node("SequenceEmpty", [], ["s0"], dtype=TensorProto.FLOAT),
        helper.make_node("Loop", ["n", "true", "s0"], ["s1"], body=body),
        helper.make_node("Shape", ["u"], ["us"]),
        helper.make_node("Gather", ["us", "two"], ["len"], axis=0),
        helper.make_node("Slice", ["u", "one", "len", "ax2"], ["rest"]),
        helper.make_node("SequenceInsert", ["s1", "rest"], ["s2"]),
        helper.make_node("SequenceAt", ["s2", "zero"], ["a"]),
        helper.make_node("SequenceAt", ["s2", "neg1"], ["b"]),
        helper.make_node("Concat", ["a", "b"], ["cat"], axis=2),
        helper.make_node("Shape", ["cat"], ["cs"]),
        helper.make_node("Gather", ["cs", "one"], ["d1"], axis=0),
        helper.make_node("Equal", ["d1", "one"], ["is1"]),
        helper.make_node("If", ["is1"], ["y"], then_branch=then_g, else_branch=else_g),
    ]
    inits = [
        numpy_helper.from_array(np.array(1, np.int64), "n"),
        numpy_helper.from_array(np.array(True), "true"),
        numpy_helper.from_array(np.array([0, 1], np.int64), "bounds"),
        numpy_helper.from_array(np.array([1], np.int64), "ax1"),
        numpy_helper.from_array(np.array([2], np.int64), "ax2"),
        numpy_helper.from_array(np.array([1], np.int64), "one"),
        numpy_helper.from_array(np.array([2], np.int64), "two"),
        numpy_helper.from_array(np.array(0, np.int64), "zero"),
        numpy_helper.from_array(np.array(-1, np.int64), "neg1"),
    ]
    graph = helper.make_graph(
        nodes, "mvit_pool", [_vi("x", ["b", 6, 4])], [_vi("y", ["b", 6, 4])], inits
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    rng = np.random.default_rng(5)
    for batch in (1, 3):
        x = rng.standard_normal((batch, 6, 4)).astype(np.float32)
        mod = _check_vs_ort(model, [x])
        got = relay_core.build(mod)(x)
        np.testing.assert_allclose(np.asarray(got[0] if isinstance(got, list) else got), x)
    assert mod["main"].body.checked_type.shape[1:] == (6, 4)


def test_unrolled_loop_scan_outputs_and_a_loop_that_stops_on_data():
    """A constant trip count unrolls; scan outputs stack the iterations' values. A condition
    computed from the data keeps the loop (it stops when the running sum passes 3)."""
    from onnx import numpy_helper

    def model(stop_on_data):
        cond = ["Less", ["total", "three"], ["c_out"]] if stop_on_data else None
        nodes = [
            helper.make_node("Add", ["acc", "x"], ["acc_out"]),
            helper.make_node("Mul", ["acc_out", "two"], ["scan"]),
            helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
        ]
        nodes.append(
            helper.make_node(*cond) if cond else helper.make_node("Identity", ["c"], ["c_out"])
        )
        body = helper.make_graph(
            nodes,
            "body",
            [_vi("it", [], TensorProto.INT64), _vi("c", [], TensorProto.BOOL), _vi("acc", [2])],
            [_vi("c_out", [], TensorProto.BOOL), _vi("acc_out", [2]), _vi("scan", [2])],
            [
                numpy_helper.from_array(np.array(2.0, np.float32), "two"),
                numpy_helper.from_array(np.array(3.0, np.float32), "three"),
            ],
        )
        g = helper.make_graph(
            [helper.make_node("Loop", ["n", "", "x"], ["acc_f", "scans"], body=body)],
            "g",
            [_vi("x", [2])],
            [_vi("acc_f", [2]), _vi("scans", [None, 2])],
            [numpy_helper.from_array(np.array(4, np.int64), "n")],
        )
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])

    x = np.array([0.5, 1.25], np.float32)
    unrolled = _check_vs_ort(model(False), [x])
    assert not _has_loop(unrolled)
    assert unrolled["main"].body.checked_type.fields[1].shape == (4, 2)
    looped = _check_vs_ort(model(True), [x])
    assert _has_loop(looped)


@pytest.mark.parametrize("source", ["self", "other"])
def test_expand_to_a_run_time_count_and_constants_keeps_static_dims(source):
    """torchvision's multi-scale RoI pooling: `index.view(-1, 1, 1, 1).expand(n, C, h, w)`, n a
    run-time count, which torch's exporter writes as Expand(x, Where(Equal(s, -1), 1, s)) with
    s = Concat(Gather(Shape(.), 0), C, h, w): the expanded index then feeds ScatterElements.
    It stayed a dyn.broadcast_to with every dim unknown (generic index arithmetic per element);
    it is a static broadcast now, with n read at run time (from the index itself or another
    tensor)."""
    c = _int64_init
    src = "r" if source == "self" else "u"
    one = helper.make_tensor("v", TensorProto.INT64, [1], [1])
    nodes = [
        helper.make_node("Reshape", ["i", "m1111"], ["r"]),
        helper.make_node("Shape", [src], ["rs"]),
        helper.make_node("Gather", ["rs", "z"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "ax0"], ["n1"]),
        helper.make_node("Concat", ["n1", "c4", "c3", "c3"], ["cat"], axis=0),
        helper.make_node("Reshape", ["cat", "m1"], ["s"]),
        helper.make_node("Shape", ["s"], ["ss"]),
        helper.make_node("ConstantOfShape", ["ss"], ["ones"], value=one),
        helper.make_node("Mul", ["ones", "neg"], ["negs"]),
        helper.make_node("Equal", ["s", "negs"], ["eq"]),
        helper.make_node("Where", ["eq", "ones", "s"], ["sz"]),
        helper.make_node("Expand", ["r", "sz"], ["e"]),
        helper.make_node("ScatterElements", ["base", "e", "u"], ["y"], axis=0),
    ]
    inits = [
        c("m1111", [-1, 1, 1, 1]),
        c("z", 0),
        c("ax0", [0]),
        c("c4", [4]),
        c("c3", [3]),
        c("m1", [-1]),
        c("neg", -1),
    ]
    graph = helper.make_graph(
        nodes,
        "expand_index",
        [_vi("i", [None], TensorProto.INT64), _vi("u", [None, 4, 3, 3]), _vi("base", [6, 4, 3, 3])],
        [_vi("y", [6, 4, 3, 3])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    rng = np.random.default_rng(8)
    base = rng.standard_normal((6, 4, 3, 3)).astype(np.float32)
    for n in (1, 4):
        i = rng.permutation(6)[:n].astype(np.int64)
        u = rng.standard_normal((n, 4, 3, 3)).astype(np.float32)
        mod = _check_vs_ort(model, [i, u, base])
        lib = relay_core.build(mod)
        (want,) = _ort(model, [i, u, base])
        got = lib(i, u, base)
        np.testing.assert_array_equal(np.asarray(got[0] if isinstance(got, list) else got), want)
    ops = {
        n.op.name for n in post_order(mod["main"]) if isinstance(n, Call) and hasattr(n.op, "name")
    }
    assert "dyn.broadcast_to" not in ops
    expanded = [
        n for n in post_order(mod["main"]) if isinstance(n, Call) and n.op.name.startswith("broad")
    ]
    assert expanded and all(n.checked_type.shape[1:] == (4, 3, 3) for n in expanded)


def test_multiples_of_a_named_batch_stay_static():
    """MViTv2's attention pools fold the heads into the batch, `x.reshape(-1, 96, 8, h, w)` of a
    (batch, 2, 96, h * w) tensor, and unfold them with `x.reshape(B, 2, 96, -1)`, B read off
    another tensor; RAFT concatenates its two images along the batch and splits the features
    back. The folded batch is `2*batch` (it was `?`, and every op after it ran with run-time
    extents); the reshape back is static and gives `batch` again, as does the split; a Range
    to the batch (the exporter's index grids) is `batch` long, not `?`."""
    c = _int64_init
    nodes = [
        helper.make_node("Reshape", ["x", "fold"], ["f"]),
        helper.make_node("Relu", ["f"], ["r"]),
        helper.make_node("Shape", ["x"], ["xs"]),
        helper.make_node("Gather", ["xs", "z"], ["b"], axis=0),
        helper.make_node("Unsqueeze", ["b", "ax0"], ["b1"]),
        helper.make_node("Concat", ["b1", "c2", "c96", "m1"], ["back"], axis=0),
        helper.make_node("Reshape", ["r", "back"], ["u"]),
        helper.make_node("Concat", ["u", "y"], ["cat"], axis=0),
        helper.make_node("Split", ["cat"], ["s0", "s1"], axis=0, num_outputs=2),
        helper.make_node("Sub", ["s0", "s1"], ["out"]),
        helper.make_node("Range", ["z", "b", "one"], ["idx"]),  # an index grid: arange(B)
    ]
    inits = [
        c("fold", [-1, 96, 8, 8]),
        c("z", 0),
        c("ax0", [0]),
        c("c2", [2]),
        c("c96", [96]),
        c("m1", [-1]),
        c("one", 1),
    ]
    graph = helper.make_graph(
        nodes,
        "fold_heads",
        [_vi("x", ["batch", 2, 96, 64]), _vi("y", ["batch", 2, 96, 64])],
        [
            _vi("out", ["batch", 2, 96, 64]),
            _vi("f", [None, 96, 8, 8]),
            _vi("idx", [None], TensorProto.INT64),
        ],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    rng = np.random.default_rng(3)
    lib = None
    for n in (1, 3):
        x, y = (rng.standard_normal((n, 2, 96, 64)).astype(np.float32) for _ in range(2))
        mod = _check_vs_ort(model, [x, y])
        lib = lib or relay_core.build(mod)
        for got, want in zip(lib(x, y), _ort(model, [x, y])):
            np.testing.assert_array_equal(np.asarray(got), want)
    ops = {
        n.op.name for n in post_order(mod["main"]) if isinstance(n, Call) and hasattr(n.op, "name")
    }
    assert not any(o.startswith("dyn.") for o in ops), ops
    out_t, f_t, idx_t = mod["main"].checked_type.ret_type.fields
    batch = ShapeVar("batch")
    assert out_t.shape == (batch, 2, 96, 64)
    assert f_t.shape == (scaled(batch, 2), 96, 8, 8)
    assert idx_t.shape == (batch,)
