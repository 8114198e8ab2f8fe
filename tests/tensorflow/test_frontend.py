"""What from_tensorflow accepts, what it refuses, and how: loaders, safety, unsupported ops,
custom converters, spans, names and dynamic dims."""

from __future__ import annotations

import numpy as np
import pytest

from converters.tensorflow import from_tensorflow, supported_ops  # noqa: E402
from relay_core.errors import InputError, ModelLoadError, UnsupportedOpsError  # noqa: E402
from relay_core.ir import Call, ShapeVar, TensorType, post_order  # noqa: E402
from tests.require import require

from .helpers import assert_close, rand, relay_outputs, tf

keras = require("keras")


def _small_model():
    keras.utils.set_random_seed(0)
    inp = keras.Input((6,), name="x")
    out = keras.layers.Dense(3, activation="tanh")(keras.layers.Dense(5, activation="relu")(inp))
    return keras.Model(inp, out)


# -- what it accepts ------------------------------------------------------------------------------
def test_keras_file_roundtrip(tmp_path):
    model = _small_model()
    path = str(tmp_path / "m.keras")
    model.save(path)
    mod = from_tensorflow(path)
    x = rand(4, 6)
    assert_close(relay_outputs(mod, [x]), [model(x).numpy()])


def test_keras_file_with_lambda_is_refused_by_safe_mode(tmp_path):
    inp = keras.Input((3,))
    out = keras.layers.Lambda(lambda t: t * 2.0)(inp)
    path = str(tmp_path / "lam.keras")
    keras.Model(inp, out).save(path)
    with pytest.raises(ModelLoadError, match="lam.keras"):
        from_tensorflow(path)


def test_frozen_graph_def_object_and_pb_file(tmp_path):
    @tf.function(input_signature=[tf.TensorSpec([2, 3], name="inp")])
    def f(x):
        return tf.nn.softmax(x * 2.0), tf.reduce_max(x)

    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    gd = convert_variables_to_constants_v2(f.get_concrete_function()).graph.as_graph_def()
    x = rand(2, 3)
    want = [t.numpy() for t in f(x)]
    outs = [n.name for n in gd.node if n.op == "Identity"]
    mod = from_tensorflow(gd, outputs=outs)
    assert_close(relay_outputs(mod, [x]), want)
    path = tmp_path / "frozen.pb"
    path.write_bytes(gd.SerializeToString())
    mod = from_tensorflow(str(path), outputs=outs)
    assert_close(relay_outputs(mod, [x]), want)
    # placeholder shapes can be overridden: a dynamic batch (a named dim: one input)
    mod = from_tensorflow(gd, input_signature={"inp": (None, 3)}, outputs=outs)
    assert mod["main"].params[0].type_annotation == TensorType((ShapeVar("batch"), 3), "float32")


def test_concrete_function_and_input_signature():
    def f(x):
        return tf.square(x) - 1.0

    with pytest.raises(InputError, match="input_signature"):
        from_tensorflow(tf.function(f))
    mod = from_tensorflow(tf.function(f), [tf.TensorSpec([None, 2])])
    assert mod["main"].params[0].type_annotation.shape == (ShapeVar("batch"), 2)
    cf = tf.function(f).get_concrete_function(tf.TensorSpec([3, 2]))
    x = rand(3, 2)
    assert_close(relay_outputs(from_tensorflow(cf), [x]), [cf(x).numpy()])


def test_sequential_without_input_needs_a_signature():
    model = keras.Sequential([keras.layers.Dense(2)])
    with pytest.raises(InputError, match="input_signature"):
        from_tensorflow(model)
    mod = from_tensorflow(model, [tf.TensorSpec([None, 4])])
    x = rand(3, 4)
    assert_close(relay_outputs(mod, [x]), [model(x).numpy()])


@keras.saving.register_keras_serializable(package="relay_tests")
class SubclassedNet(keras.Model):
    """A subclassed model: no symbolic inputs, only the shapes it was built with."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.d1 = keras.layers.Dense(5, activation="swish")
        self.d2 = keras.layers.Dense(2)

    def call(self, xs):
        if isinstance(xs, (list, tuple)):
            return self.d2(self.d1(xs[0]) * xs[1])
        return self.d2(self.d1(xs))


@pytest.mark.parametrize("two_inputs", [False, True])
def test_subclassed_model_saved_after_a_call_loads_with_its_batch_unknown(tmp_path, two_inputs):
    model = SubclassedNet()
    build = [rand(1, 4), rand(1, 5)] if two_inputs else [rand(1, 4)]
    model(build if two_inputs else build[0])
    path = str(tmp_path / "sub.keras")
    model.save(path)
    mod = from_tensorflow(path)
    for p in mod["main"].params:
        assert isinstance(p.checked_type.shape[0], ShapeVar)
    ref = keras.models.load_model(path)
    for n in (1, 3):
        xs = [rand(n, 4, seed=n), rand(n, 5, seed=n + 1)][: 2 if two_inputs else 1]
        want = ref(xs if two_inputs else xs[0]).numpy()
        assert_close(relay_outputs(mod, xs), [want])


def test_input_and_output_names():
    inp_a, inp_b = keras.Input((3,), name="left"), keras.Input((3,), name="right")
    out = keras.layers.Concatenate()([inp_a, inp_b])
    model = keras.Model([inp_a, inp_b], {"joined": out, "diff": inp_a - inp_b})
    mod = from_tensorflow(model)
    assert [p.name_hint for p in mod["main"].params] == ["left", "right"]
    assert mod.attrs["output_names"] == ["diff", "joined"]
    a, b = rand(2, 3), rand(2, 3, seed=1)
    got = relay_outputs(mod, [a, b])
    want = model([a, b])
    assert_close(got, [want["diff"].numpy(), want["joined"].numpy()])


def test_saved_model_input_signature_fixes_the_batch(tmp_path):
    path = str(tmp_path / "sm")
    model = _small_model()
    model.export(path, verbose=False)
    assert from_tensorflow(path)["main"].params[0].type_annotation.shape == (ShapeVar("batch"), 6)
    mod = from_tensorflow(path, input_signature=[tf.TensorSpec([4, 6])])
    assert mod["main"].params[0].type_annotation.shape == (4, 6)
    x = rand(4, 6)
    assert_close(relay_outputs(mod, [x]), [model(x).numpy()])
    with pytest.raises(InputError, match="does not fit"):
        from_tensorflow(path, input_signature=[(4, 7)])


def test_saved_module_with_variables_inside_loop_and_cond(tmp_path):
    class Stepper(tf.Module):
        def __init__(self):
            self.w = tf.Variable(rand(3, 3) * 0.5)
            self.b = tf.Variable(np.ones(3, "f4"))

        @tf.function(input_signature=[tf.TensorSpec([None, 3]), tf.TensorSpec([], tf.int32)])
        def __call__(self, x, n):
            def body(i, x):
                x = tf.cond(
                    tf.reduce_mean(x) > 0,
                    lambda: tf.tanh(x @ self.w + self.b),
                    lambda: x * 2.0 - self.b,
                )
                return i + 1, x

            return {"y": tf.while_loop(lambda i, x: i < n, body, [0, x])[1]}

    m = Stepper()
    path = str(tmp_path / "stepper")
    tf.saved_model.save(m, path, signatures={"serving_default": m.__call__})
    mod = from_tensorflow(path)
    # A signature's inputs come in the order of their (sorted) names.
    assert mod.attrs["input_names"] == ["n", "x"] and mod.attrs["output_names"] == ["y"]
    x = rand(2, 3)
    for n in (0, 1, 4):
        got = relay_outputs(mod, [np.int32(n), x])
        assert_close(got, [m(x, np.int32(n))["y"].numpy()], what=f"n={n}")


def test_saved_model_signature_errors(tmp_path):
    path = str(tmp_path / "sm")
    _small_model().export(path, verbose=False)
    with pytest.raises(ModelLoadError, match="serving_default"):
        from_tensorflow(path, signature="nope")
    with pytest.raises(ModelLoadError, match="no such file"):
        from_tensorflow(str(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelLoadError, match="not a SavedModel"):
        from_tensorflow(str(tmp_path / "empty"))
    bad = tmp_path / "bad.pb"
    bad.write_bytes(b"\x00\xffnot a graph at all\x17" * 7)
    with pytest.raises(ModelLoadError):
        from_tensorflow(str(bad))
    with pytest.raises(InputError, match="cannot convert"):
        from_tensorflow(42)


# -- safety ---------------------------------------------------------------------------------------
def _graph(fn, *specs):
    return fn.get_concrete_function(*specs).graph.as_graph_def()


def test_file_ops_are_refused_all_at_once():
    @tf.function(input_signature=[tf.TensorSpec([], tf.string)])
    def f(name):
        data = tf.io.read_file(name)
        tf.io.write_file(name + ".copy", data)
        return tf.strings.length(data)

    with pytest.raises(ModelLoadError) as e:
        from_tensorflow(_graph(f))
    assert "ReadFile" in str(e.value) and "WriteFile" in str(e.value)


def test_python_ops_are_refused_even_with_a_custom_converter():
    @tf.function(input_signature=[tf.TensorSpec([3])])
    def f(x):
        return tf.py_function(lambda t: t * 2, [x], tf.float32) + 1.0

    with pytest.raises(ModelLoadError, match="EagerPyFunc"):
        from_tensorflow(f, custom_convert_map={"EagerPyFunc": lambda ctx, *a, **k: a[0]})


def test_denied_op_inside_a_loop_body_is_refused():
    @tf.function(input_signature=[tf.TensorSpec([], tf.string)])
    def f(name):
        def body(i, n):
            return i + 1, n + tf.strings.length(tf.io.read_file(name))

        return tf.while_loop(lambda i, n: i < 3, body, [0, 0])[1]

    with pytest.raises(ModelLoadError, match="ReadFile"):
        from_tensorflow(_graph(f))


def test_saved_model_with_file_ops_is_refused_before_loading(tmp_path, monkeypatch):
    class Reader(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([], tf.string)])
        def read(self, name):
            return {"n": tf.strings.length(tf.io.read_file(name))}

    m = Reader()
    path = str(tmp_path / "reader")
    tf.saved_model.save(m, path, signatures={"serving_default": m.read})

    def no_load(*a, **k):
        raise AssertionError("the SavedModel was loaded before the scan refused it")

    monkeypatch.setattr(tf.saved_model, "load", no_load)
    with pytest.raises(ModelLoadError, match="ReadFile"):
        from_tensorflow(path)


def _node(gd, name, op, inputs=(), dtype=1):
    n = gd.node.add()
    n.name, n.op = name, op
    n.input.extend(inputs)
    n.attr["T" if op != "Const" else "dtype"].type = dtype
    return n


def test_huge_declared_constant_is_refused_before_allocating():
    from converters.common import ConversionError

    gd = tf.compat.v1.GraphDef()
    big = _node(gd, "big", "Const")
    t = big.attr["value"].tensor
    t.dtype = 1
    for _ in range(3):
        t.tensor_shape.dim.add().size = 2**20
    t.float_val.append(1.0)
    _node(gd, "out", "Identity", ["big"])
    with pytest.raises(ConversionError, match="byte budget"):
        from_tensorflow(gd, outputs=["out"])


def test_cyclic_graph_is_refused_clearly():
    from converters.common import ConversionError

    gd = tf.compat.v1.GraphDef()
    _node(gd, "a", "Identity", ["b"])
    _node(gd, "b", "Identity", ["a"])
    with pytest.raises(ConversionError, match="cycle"):
        from_tensorflow(gd, outputs=["a"])


# -- unsupported ops and custom converters --------------------------------------------------------
def test_every_unsupported_op_is_listed_at_once():
    @tf.function(input_signature=[tf.TensorSpec([4])])
    def f(x):
        return tf.math.lgamma(x) + tf.math.digamma(x) + tf.math.bessel_i0e(x) + tf.math.lgamma(x)

    with pytest.raises(UnsupportedOpsError) as e:
        from_tensorflow(f)
    msg = str(e.value)
    assert {"Lgamma", "Digamma", "BesselI0e"} <= {op[0] for op in e.value.ops}
    assert "3 unsupported" in msg and "2 nodes" in msg and "custom_convert_map" in msg


def test_custom_convert_map_adds_and_overrides():
    @tf.function(input_signature=[tf.TensorSpec([4])])
    def f(x):
        return tf.math.lgamma(x) + tf.nn.relu(x)

    seen = {}

    def lgamma(ctx, x, T=None):
        seen["T"] = T
        return ctx.call("log", ctx.call("abs", x))  # a stand-in, not lgamma

    def relu(ctx, x):
        return ctx.call("sigmoid", x)

    mod = from_tensorflow(f, custom_convert_map={"Lgamma": lgamma, "Relu": relu})
    x = np.array([0.5, 1.5, -2.0, 3.0], np.float32)
    want = np.log(np.abs(x)) + 1 / (1 + np.exp(-x))
    assert_close(relay_outputs(mod, [x]), [want.astype(np.float32)])
    assert seen["T"] == "float32"


def test_spans_name_the_tf_nodes():
    @tf.function(input_signature=[tf.TensorSpec([2, 3])])
    def f(x):
        return tf.matmul(x, tf.ones([3, 4]), name="proj") + 1.0

    mod = from_tensorflow(f)
    calls = [n for n in post_order(mod["main"].body) if isinstance(n, Call)]
    spans = {(c.op.name, c.span.node, c.span.op) for c in calls if c.span is not None}
    assert ("nn.matmul", "proj", "MatMul") in spans
    assert all(c.span is not None and c.span.source == "tensorflow" for c in calls)


def test_source_nodes_and_outputs_for_verify():
    @tf.function(input_signature=[tf.TensorSpec([2, 3], name="x")])
    def f(x):
        h = tf.nn.relu(x, name="act")
        return tf.reduce_sum(h, axis=1, name="total")

    mod = from_tensorflow(f)
    nodes = mod.attrs["source_nodes"]
    order = [n[0] for n in nodes]
    assert order.index("act") < order.index("total")
    act = next(n for n in nodes if n[0] == "act")
    assert act[1] == "Relu" and act[2] == ["x:0"] and act[3] == ["act:0"]
    e = mod.attrs["source_outputs"]["act:0"]
    assert e.checked_type == TensorType((2, 3), "float32")


def test_supported_ops_count():
    ops = supported_ops()
    assert len(ops) >= 200
    for op in (
        "Conv2D",
        "While",
        "StatelessIf",
        "TensorListSetItem",
        "NonMaxSuppressionV5",
        "StridedSlice",
        "GatherNd",
        "TopKV2",
        "Cumsum",
        "Tile",
        "ResizeBilinear",
    ):
        assert op in ops


def test_unknown_dims_are_named():
    """Unknown dims become named dims: a Keras model's inputs share `batch` (axis 0); inputs of
    a function with several inputs each get their own; a residual add of two tensors computed
    from the input keeps the batch named (not a broadcast between two unknown sizes)."""
    inp_a, inp_b = keras.Input((3,), name="left"), keras.Input((3,), name="right")
    model = keras.Model([inp_a, inp_b], inp_a * 2.0 + inp_b)
    mod = from_tensorflow(model)
    assert [p.type_annotation.shape[0] for p in mod["main"].params] == [ShapeVar("batch")] * 2

    @tf.function(input_signature=[tf.TensorSpec([None, 3]), tf.TensorSpec([None, None])])
    def f(x, y):
        return x + y[:, :3]

    mod = from_tensorflow(f)
    assert [p.type_annotation.shape for p in mod["main"].params] == [
        (ShapeVar("x_d0"), 3),
        (ShapeVar("y_d0"), ShapeVar("y_d1")),
    ]
    x, y = rand(2, 3), rand(2, 5, seed=1)
    assert_close(relay_outputs(mod, [x, y]), [f(x, y).numpy()])

    inp = keras.Input((8, 8, 4))
    h = keras.layers.Conv2D(4, 3, padding="same")(inp)
    model = keras.Model(inp, keras.layers.ReLU()(h + inp))
    mod = from_tensorflow(model)
    adds = [n for n in post_order(mod["main"].body) if isinstance(n, Call) and n.op.name == "add"]
    assert adds and all(
        a.checked_type.shape[0] == ShapeVar("batch") for n in adds for a in n.args
    ), [[a.checked_type for a in n.args] for n in adds]
