"""Whole models against TF itself: relative error <= 1e-4 (max |ours - TF| / max |TF|).

Keras models are built in the test with random weights (seeded); batch-norm statistics are made
non-trivial so that the folded normalisation matters."""

from __future__ import annotations

import numpy as np
import pytest

from converters.tensorflow import from_tensorflow  # noqa: E402
from tests.require import require

from .helpers import compiled_outputs, flat, rel_error, relay_outputs, tf

keras = require("keras")
REL = 1e-4
FIGURES: dict[str, float] = {}


def _randomize_bn(model, seed=0):
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            g, b, m, v = layer.get_weights()
            layer.set_weights(
                [
                    rng.uniform(0.5, 1.5, g.shape).astype("f4"),
                    rng.uniform(-0.5, 0.5, b.shape).astype("f4"),
                    rng.uniform(-0.5, 0.5, m.shape).astype("f4"),
                    rng.uniform(0.5, 2.0, v.shape).astype("f4"),
                ]
            )


def _expected(model_or_fn, inputs):
    args = [tf.constant(x) for x in inputs]
    if hasattr(model_or_fn, "predict"):
        return [np.asarray(w) for w in flat(model_or_fn(*args, training=False))]
    return [np.asarray(w) for w in flat(model_or_fn(*args))]


def check_model(name, model_or_fn, inputs, mod=None, **kw):
    """Convert (unless given `mod`), run with the interpreter, compare with TF."""
    mod = mod or from_tensorflow(model_or_fn, **kw)
    want = _expected(model_or_fn, inputs)
    got = relay_outputs(mod, inputs)
    err = rel_error(got, want)
    FIGURES[name] = err
    assert all(g.shape == w.shape for g, w in zip(got, want)), name
    assert err <= REL, f"{name}: relative error {err:.2e}"
    return mod


def check_compiled(name, model_or_fn, inputs, want=None, **kw):
    """Once relay_core.build exists: convert with the inputs' exact shapes (the backend compiles
    static shapes), compile, compare with TF."""
    if "input_signature" not in kw and hasattr(model_or_fn, "predict"):
        kw["input_signature"] = [tf.TensorSpec(x.shape, tf.as_dtype(x.dtype)) for x in inputs]
    mod = from_tensorflow(model_or_fn, **kw)
    got = compiled_outputs(mod, inputs)
    err = rel_error(got, want if want is not None else _expected(model_or_fn, inputs))
    FIGURES[name + " (compiled)"] = err
    assert err <= REL, f"{name} compiled: relative error {err:.2e}"


def test_keras_cnn_batchnorm_depthwise():
    keras.utils.set_random_seed(1)
    inp = keras.Input((32, 32, 3))
    x = keras.layers.Conv2D(8, 3, strides=2, padding="same")(inp)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.ReLU(6.0)(x)
    x = keras.layers.DepthwiseConv2D(3, padding="same", depth_multiplier=2)(x)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.Activation("relu")(x)
    x = keras.layers.SeparableConv2D(12, 3, padding="valid", dilation_rate=2)(x)
    x = keras.layers.MaxPooling2D(2)(x)
    x = keras.layers.Conv2D(16, 1, activation="swish")(x)
    x = keras.layers.AveragePooling2D(2, padding="same")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    x = keras.layers.Dropout(0.5)(x)
    out = keras.layers.Dense(10, activation="softmax")(x)
    model = keras.Model(inp, out)
    _randomize_bn(model)
    x = np.random.default_rng(0).normal(size=(2, 32, 32, 3)).astype("f4")
    check_model("keras CNN (BN, depthwise)", model, [x])
    check_compiled("keras CNN (BN, depthwise)", model, [x])


def test_keras_zero_padding_before_valid_convolutions_folds_and_matches():
    # MobileNetV2 / ResNet50 write ZeroPadding2D + a "valid" (depthwise) convolution: the pad
    # becomes the convolution's padding. Compiled with the model's unknown batch (the generic
    # build: kernels called once per batch element with their epilogues, intermediate
    # buffers reused from call to call), called with batch sizes 3, 1, 3: each against Keras.
    import relay_core
    from relay_core.backend.compiler import prepare

    keras.utils.set_random_seed(4)
    inp = keras.Input((64, 64, 3))  # intermediates of >= 64 KB: kept for reuse
    x = keras.layers.ZeroPadding2D(((3, 3), (3, 3)))(inp)
    x = keras.layers.Conv2D(8, 7, strides=2, padding="valid")(x)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.ReLU(6.0)(x)
    x = keras.layers.ZeroPadding2D(((0, 1), (0, 1)))(x)
    x = keras.layers.DepthwiseConv2D(3, strides=2, padding="valid")(x)
    x = keras.layers.ReLU(6.0)(x)
    # a residual add: the 1x1 convolution's epilogue reads x at each batch element
    x = keras.layers.Add()([x, keras.layers.Conv2D(8, 1)(x)])
    x = keras.layers.ZeroPadding2D(((1, 1), (1, 1)))(x)
    out = keras.layers.Conv2D(6, 3, strides=1, padding="same")(x)
    model = keras.Model(inp, out)
    _randomize_bn(model)
    mod = from_tensorflow(model)
    text = prepare(mod).astext(show_meta_data=False)
    assert "nn.pad" not in text
    lib = relay_core.build(mod)
    rng = np.random.default_rng(5)
    assert type(lib).__name__ == "CompiledModule"
    for n in (3, 1, 3):
        x = rng.normal(size=(n, 64, 64, 3)).astype("f4")
        err = rel_error(flat(lib(x)), _expected(model, [x]))
        assert err <= REL, f"batch {n}: relative error {err:.2e}"


def test_keras_file_with_unknown_batch_runs_channels_first(tmp_path):
    # A .keras file loaded as users save it (unknown batch): ChannelsFirst turns the NHWC
    # convolutions and pools into NCHW ones (transposes cancel between them: one is left,
    # after the input); convolution biases, batch norm, ReLU6, a residual add, a channel
    # concatenation, pools and the global average pool all run on NCHW values. Batch sizes
    # 1, 3 and 9 against Keras.
    import relay_core
    import relay_import as ri
    from relay_core.backend.compiler import prepare

    keras.utils.set_random_seed(6)
    inp = keras.Input((40, 40, 3))
    x = keras.layers.Conv2D(16, 3, strides=2, padding="same")(inp)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.ReLU(6.0)(x)
    y = keras.layers.DepthwiseConv2D(3, padding="same")(x)
    y = keras.layers.BatchNormalization()(y)
    y = keras.layers.Conv2D(16, 1, use_bias=False)(keras.layers.ReLU()(y))
    x = keras.layers.Add()([x, y])
    z = keras.layers.MaxPooling2D(3, strides=1, padding="same")(x)
    x = keras.layers.Concatenate()([x, keras.layers.Conv2D(8, 1, activation="sigmoid")(z)])
    x = keras.layers.AveragePooling2D(2)(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    out = keras.layers.Dense(5)(x)
    model = keras.Model(inp, out)
    _randomize_bn(model)
    path = str(tmp_path / "cf.keras")
    model.save(path)
    mod = ri.load(path)
    text = prepare(mod).astext(show_meta_data=False)
    assert 'layout="NHWC"' not in text and text.count("transpose(") == 1
    lib = relay_core.build(mod)
    rng = np.random.default_rng(7)
    for n in (1, 3, 9):
        x = rng.normal(size=(n, 40, 40, 3)).astype("f4")
        err = rel_error(flat(lib(x)), _expected(model, [x]))
        assert err <= REL, f"batch {n}: relative error {err:.2e}"


def test_keras_lstm_gru_text_model():
    keras.utils.set_random_seed(2)
    model = keras.Sequential(
        [
            keras.Input((None,), dtype="int32"),
            keras.layers.Embedding(100, 16),
            keras.layers.LSTM(12, return_sequences=True),
            keras.layers.GRU(10, return_sequences=True),
            keras.layers.Bidirectional(keras.layers.LSTM(6)),
            keras.layers.Dense(4),
        ]
    )
    mod = from_tensorflow(model)
    from .test_control_flow import recursive_functions

    assert len(recursive_functions(mod)) == 4  # one Relay loop per RNN direction
    rng = np.random.default_rng(3)
    for steps in (1, 5, 13):
        x = rng.integers(0, 100, size=(3, steps)).astype("int32")
        check_model(f"keras LSTM+GRU text model (T={steps})", model, [x], mod=mod)
    check_compiled("keras LSTM+GRU text model (T=13)", model, [x])


def test_multi_head_attention_layer_norm_block():
    keras.utils.set_random_seed(3)
    inp = keras.Input((7, 32))
    att = keras.layers.MultiHeadAttention(num_heads=4, key_dim=8)(inp, inp)
    x = keras.layers.LayerNormalization(epsilon=1e-6)(inp + att)
    ff = keras.layers.Dense(64, activation="gelu")(x)
    ff = keras.layers.Dense(32)(ff)
    out = keras.layers.LayerNormalization(epsilon=1e-6)(x + ff)
    model = keras.Model(inp, out)
    x = np.random.default_rng(4).normal(size=(2, 7, 32)).astype("f4")
    check_model("MultiHeadAttention + LayerNorm block", model, [x])
    check_compiled("MultiHeadAttention + LayerNorm block", model, [x])


@tf.function(input_signature=[tf.TensorSpec([None, 4]), tf.TensorSpec([], tf.float32)])
def loop_model(x, limit):
    w = tf.constant(np.random.default_rng(5).normal(size=(4, 4)).astype("f4") * 0.5)
    i = tf.constant(0)
    while tf.reduce_sum(tf.abs(x)) < limit and i < 50:
        x = tf.cond(
            tf.reduce_mean(x) > 0,
            lambda: tf.tanh(x @ w) * 3.0,  # noqa: B023
            lambda: tf.nn.relu(x @ tf.transpose(w)) + 1.0,  # noqa: B023
        )
        i += 1
    return x, i


def test_tf_function_while_and_cond():
    mod = from_tensorflow(loop_model)
    x = np.random.default_rng(6).normal(size=(3, 4)).astype("f4")
    for limit in (0.0, 20.0, 60.0, 1e9):
        check_model(
            f"tf.function while+cond (limit={limit:g})", loop_model, [x, np.float32(limit)], mod=mod
        )
    sig = [tf.TensorSpec([3, 4]), tf.TensorSpec([], tf.float32)]
    fixed = tf.function(loop_model.python_function, input_signature=sig)
    check_compiled("tf.function while+cond (limit=60)", fixed, [x, np.float32(60.0)])


def test_saved_model_from_disk(tmp_path):
    keras.utils.set_random_seed(4)
    inp = keras.Input((10,), name="features")
    x = keras.layers.Dense(16, activation="relu")(inp)
    x = keras.layers.BatchNormalization()(x)
    out = keras.layers.Dense(3, activation="sigmoid")(x)
    model = keras.Model(inp, out)
    _randomize_bn(model)
    path = str(tmp_path / "saved")
    model.export(path, verbose=False)
    mod = from_tensorflow(path)
    loaded = tf.saved_model.load(path)
    fn = loaded.signatures["serving_default"]
    x = np.random.default_rng(7).normal(size=(5, 10)).astype("f4")
    want = [np.asarray(v) for _, v in sorted(fn(tf.constant(x)).items())]
    got = relay_outputs(mod, [x])
    err = rel_error(got, want)
    FIGURES["SavedModel from disk"] = err
    assert err <= REL
    assert mod.attrs["output_names"] and mod.attrs["input_names"]
    check_compiled("SavedModel from disk", path, [x], input_signature=[(5, 10)], want=want)


@pytest.mark.slow
def test_mobilenet_v2():
    keras.utils.set_random_seed(5)
    model = keras.applications.MobileNetV2(weights=None)
    _randomize_bn(model)
    x = np.random.default_rng(8).uniform(-1, 1, size=(1, 224, 224, 3)).astype("f4")
    check_model("MobileNetV2 (224x224, random weights)", model, [x])
    check_compiled("MobileNetV2 (224x224, random weights)", model, [x])


def test_zz_report_figures(capsys):
    """Prints the parity figures of the models above (run with -s to see them)."""
    with capsys.disabled():
        for k, v in FIGURES.items():
            print(f"  {k}: relative error {v:.2e}")
