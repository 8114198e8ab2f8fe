"""A sweep over Keras 3 layers and keras.ops: each small model is converted through its frozen
graph and compared with Keras itself (relative error <= 1e-4, interpreter). This is where the
ops Keras really emits are found (RNN masks, Softmax axes, CategoryEncoding sizes, ...)."""

from __future__ import annotations

import numpy as np
import pytest

from converters.tensorflow import from_tensorflow
from tests.require import require

from .helpers import flat, rel_error, relay_outputs, tf

keras = require("keras")
L = keras.layers


def img():
    return keras.Input((12, 12, 4))


def seq():
    return keras.Input((9, 5))


def vec():
    return keras.Input((6,))


# name: (input maker, layer graph builder)
LAYERS = {
    "Conv1D": (seq, lambda x: L.Conv1D(4, 3, padding="causal", dilation_rate=2)(x)),
    "Conv1D_same_stride": (seq, lambda x: L.Conv1D(4, 3, strides=2, padding="same")(x)),
    "SeparableConv1D": (seq, lambda x: L.SeparableConv1D(4, 3)(x)),
    "DepthwiseConv1D": (seq, lambda x: L.DepthwiseConv1D(3)(x)),
    "Conv2DTranspose": (img, lambda x: L.Conv2DTranspose(3, 3, strides=2, padding="same")(x)),
    "Conv2DTranspose_valid": (
        img,
        lambda x: L.Conv2DTranspose(3, 4, strides=3, padding="valid")(x),
    ),
    "Conv1DTranspose": (seq, lambda x: L.Conv1DTranspose(3, 3, strides=2, padding="same")(x)),
    "Conv3D": (lambda: keras.Input((6, 6, 6, 2)), lambda x: L.Conv3D(3, 3, padding="same")(x)),
    "Conv3DTranspose": (
        lambda: keras.Input((4, 4, 4, 2)),
        lambda x: L.Conv3DTranspose(3, 3, strides=2, padding="same")(x),
    ),
    "UpSampling2D": (img, lambda x: L.UpSampling2D(2)(x)),
    "UpSampling2D_bilinear": (img, lambda x: L.UpSampling2D(2, interpolation="bilinear")(x)),
    "UpSampling1D": (seq, lambda x: L.UpSampling1D(2)(x)),
    "UpSampling3D": (lambda: keras.Input((3, 3, 3, 2)), lambda x: L.UpSampling3D(2)(x)),
    "ZeroPadding2D": (img, lambda x: L.ZeroPadding2D(((1, 2), (0, 1)))(x)),
    "Cropping2D": (img, lambda x: L.Cropping2D(((1, 2), (0, 1)))(x)),
    "Cropping1D": (seq, lambda x: L.Cropping1D((1, 2))(x)),
    "GlobalMaxPooling2D": (img, lambda x: L.GlobalMaxPooling2D()(x)),
    "GlobalAveragePooling1D": (seq, lambda x: L.GlobalAveragePooling1D()(x)),
    "MaxPooling1D": (seq, lambda x: L.MaxPooling1D(2)(x)),
    "AveragePooling1D": (seq, lambda x: L.AveragePooling1D(3, strides=2, padding="same")(x)),
    "MaxPooling3D": (lambda: keras.Input((6, 6, 6, 2)), lambda x: L.MaxPooling3D(2)(x)),
    "Flatten": (img, lambda x: L.Flatten()(x)),
    "Reshape": (img, lambda x: L.Reshape((-1, 8))(x)),
    "Permute": (img, lambda x: L.Permute((3, 1, 2))(x)),
    "RepeatVector": (vec, lambda x: L.RepeatVector(3)(x)),
    "SimpleRNN": (seq, lambda x: L.SimpleRNN(4)(x)),
    "GRU_reset_after_false": (seq, lambda x: L.GRU(4, reset_after=False, return_sequences=True)(x)),
    "LSTM_go_backwards": (seq, lambda x: L.LSTM(4, go_backwards=True)(x)),
    "LSTM_return_state": (seq, lambda x: L.LSTM(4, return_state=True)(x)[1]),
    "Bidirectional_GRU_concat": (
        seq,
        lambda x: L.Bidirectional(L.GRU(3, return_sequences=True))(x),
    ),
    "TimeDistributed": (seq, lambda x: L.TimeDistributed(L.Dense(3))(x)),
    "Attention": (seq, lambda x: L.Attention()([x, x])),
    "AdditiveAttention": (seq, lambda x: L.AdditiveAttention()([x, x])),
    "MHA_causal": (seq, lambda x: L.MultiHeadAttention(2, 4)(x, x, use_causal_mask=True)),
    "Normalization": (vec, lambda x: L.Normalization(mean=0.5, variance=2.0)(x)),
    "Rescaling": (img, lambda x: L.Rescaling(1 / 255.0, offset=-1)(x)),
    "Resizing": (img, lambda x: L.Resizing(7, 9)(x)),
    "Resizing_nearest": (img, lambda x: L.Resizing(24, 5, interpolation="nearest")(x)),
    "Resizing_bicubic": (img, lambda x: L.Resizing(7, 9, interpolation="bicubic")(x)),
    "CenterCrop": (img, lambda x: L.CenterCrop(6, 8)(x)),
    "LeakyReLU": (vec, lambda x: L.LeakyReLU(0.2)(x)),
    "PReLU": (img, lambda x: L.PReLU()(x)),
    "ELU": (vec, lambda x: L.ELU()(x)),
    "Softmax_axis": (img, lambda x: L.Softmax(axis=1)(x)),
    "Softmax_mask": (
        seq,
        lambda x: L.Softmax()(x, mask=keras.ops.greater(x, -0.5)),
    ),
    "act_gelu_approx": (
        vec,
        lambda x: L.Activation(lambda t: keras.activations.gelu(t, approximate=True))(x),
    ),
    "act_hard_sigmoid": (vec, lambda x: L.Activation("hard_sigmoid")(x)),
    "act_hard_silu": (vec, lambda x: L.Activation("hard_silu")(x)),
    "act_silu": (vec, lambda x: L.Activation("silu")(x)),
    "act_softplus": (vec, lambda x: L.Activation("softplus")(x)),
    "act_softsign": (vec, lambda x: L.Activation("softsign")(x)),
    "act_mish": (vec, lambda x: L.Activation("mish")(x)),
    "act_selu": (vec, lambda x: L.Activation("selu")(x)),
    "act_exponential": (vec, lambda x: L.Activation("exponential")(x)),
    "act_log_softmax": (vec, lambda x: L.Activation("log_softmax")(x)),
    "act_relu6": (vec, lambda x: L.Activation("relu6")(x)),
    "act_elu": (vec, lambda x: L.Activation("elu")(x)),
    "act_linear": (vec, lambda x: L.Activation("linear")(x)),
    "act_tanh_shrink": (vec, lambda x: L.Activation("tanh_shrink")(x)),
    "act_squareplus": (vec, lambda x: L.Activation("squareplus")(x)),
    "act_sparse_plus": (vec, lambda x: L.Activation("sparse_plus")(x)),
    "act_soft_shrink": (vec, lambda x: L.Activation("soft_shrink")(x)),
    "act_hard_tanh": (vec, lambda x: L.Activation("hard_tanh")(x)),
    "act_celu": (vec, lambda x: L.Activation("celu")(x)),
    "act_glu": (vec, lambda x: L.Activation("glu")(x)),
    "act_log_sigmoid": (vec, lambda x: L.Activation("log_sigmoid")(x)),
    "Dot": (vec, lambda x: L.Dot(axes=1, normalize=True)([x, x * 2.0])),
    "merge": (
        vec,
        lambda x: L.Average()(
            [
                L.Maximum()([x, -x]),
                L.Minimum()([x, x * 0.5]),
                L.Subtract()([x, 1.0 - x]),
                L.Multiply()([x, x]),
            ]
        ),
    ),
    "GroupNormalization": (img, lambda x: L.GroupNormalization(2)(x)),
    "UnitNormalization": (vec, lambda x: L.UnitNormalization()(x)),
    "RMSNormalization": (
        seq,
        lambda x: L.RMSNormalization()(x),
    ),
    "Masking": (seq, lambda x: L.Masking(0.0)(x)),
    "SpatialDropout": (img, lambda x: L.SpatialDropout2D(0.3)(x)),
    "GaussianNoise": (vec, lambda x: L.GaussianNoise(0.3)(x)),
    "ActivityRegularization": (vec, lambda x: L.ActivityRegularization(0.1)(x)),
    "Embedding_mask_lstm": (
        lambda: keras.Input((7,), dtype="int32"),
        lambda x: L.LSTM(3)(L.Embedding(20, 4, mask_zero=True)(x)),
    ),
    "CategoryEncoding": (
        lambda: keras.Input((3,), dtype="int32"),
        lambda x: L.CategoryEncoding(10, output_mode="multi_hot")(x),
    ),
    "Discretization": (vec, lambda x: L.Discretization(bin_boundaries=[-1.0, 0.0, 1.0])(x)),
    "ConvLSTM2D": (lambda: keras.Input((3, 6, 6, 2)), lambda x: L.ConvLSTM2D(2, 3)(x)),
    "Identity": (vec, lambda x: L.Identity()(x)),
    "Flatten_dense_dynamic": (img, lambda x: L.Dense(3)(L.Flatten()(x))),
    "ops_sort": (vec, lambda x: keras.ops.sort(x)),
    "ops_argsort": (vec, lambda x: keras.ops.argsort(x)),
    "ops_top_k": (vec, lambda x: keras.ops.top_k(x, 2)[0]),
    "ops_cumsum": (vec, lambda x: keras.ops.cumsum(x, axis=1)),
    "ops_norm": (vec, lambda x: keras.ops.norm(x, axis=1)),
    "ops_logsumexp": (vec, lambda x: keras.ops.logsumexp(x, axis=1)),
    "ops_var": (vec, lambda x: keras.ops.var(x, axis=1)),
    "ops_tril": (seq, lambda x: keras.ops.tril(x)),
    "ops_clip": (vec, lambda x: keras.ops.clip(x, -0.5, 0.5)),
    "ops_one_hot": (lambda: keras.Input((3,), dtype="int32"), lambda x: keras.ops.one_hot(x, 5)),
    "ops_where": (vec, lambda x: keras.ops.where(x > 0, x, 0.1 * x)),
    "ops_erf": (vec, lambda x: keras.ops.erf(x)),
    "ops_einsum": (seq, lambda x: keras.ops.einsum("bij,bkj->bik", x, x)),
    "ops_split": (vec, lambda x: keras.ops.split(x, 3, axis=1)[1]),
    "ops_repeat": (vec, lambda x: keras.ops.repeat(x, 2, axis=1)),
    "ops_take": (vec, lambda x: keras.ops.take(x, [0, 5, 2], axis=1)),
    "ops_pad_reflect": (seq, lambda x: keras.ops.pad(x, [[0, 0], [1, 2], [2, 0]], mode="reflect")),
    "ops_arange_like": (vec, lambda x: x * keras.ops.cast(keras.ops.arange(6), "float32")),
    "ops_linspace": (vec, lambda x: x + keras.ops.linspace(0.0, 1.0, 6)),
    "ops_round": (vec, lambda x: keras.ops.round(x * 3)),
    "ops_median_like_quantile": (
        vec,
        lambda x: keras.ops.max(x, axis=1) - keras.ops.min(x, axis=1),
    ),
    "ops_moments": (vec, lambda x: keras.ops.moments(x, axes=[1])[1]),
    "ops_image_resize": (
        img,
        lambda x: keras.ops.image.resize(x, (5, 5), interpolation="bilinear", antialias=False),
    ),
    "ops_extract_sequences_like_stack": (vec, lambda x: keras.ops.stack([x, x * 2], axis=1)),
    "ops_image_affine": (img, lambda x: keras.ops.image.pad_images(x, 1, 1, 1, 1)),
    "ops_log_softmax": (vec, lambda x: keras.ops.log_softmax(x)),
    "ops_nonzero_count": (vec, lambda x: keras.ops.count_nonzero(x, axis=1)),
    "ops_ctc_like_argmax": (vec, lambda x: keras.ops.argmax(x, axis=-1)),
    "ops_isclose": (vec, lambda x: keras.ops.cast(keras.ops.isclose(x, x * 1.0001), "float32")),
    "ops_floor_divide": (vec, lambda x: keras.ops.floor_divide(x, 0.3)),
    "ops_mod": (vec, lambda x: keras.ops.mod(x, 0.7)),
    "ops_maximum_int": (
        lambda: keras.Input((3,), dtype="int32"),
        lambda x: keras.ops.maximum(x, 2),
    ),
    "ops_diag": (vec, lambda x: keras.ops.diagonal(keras.ops.outer(x[0], x[0]))),
    "ops_triu": (seq, lambda x: keras.ops.triu(x, k=1)),
    "ops_unstack": (seq, lambda x: keras.ops.unstack(x, axis=1)[2]),
    "ops_segment_sum": (
        vec,
        lambda x: keras.ops.segment_sum(x[0], tf.constant([0, 0, 1, 1, 2, 2]), num_segments=3),
    ),
    "ops_logical": (
        vec,
        lambda x: keras.ops.cast(keras.ops.logical_xor(x > 0, x < 0.5), "float32"),
    ),
    "ops_swapaxes": (seq, lambda x: keras.ops.swapaxes(x, 1, 2)),
    "ops_roll": (vec, lambda x: keras.ops.roll(x, 2, axis=1)),
    "ops_flip": (vec, lambda x: keras.ops.flip(x, axis=1)),
    "ops_meshgrid": (
        vec,
        lambda x: x + keras.ops.meshgrid(keras.ops.arange(6.0), keras.ops.arange(1.0))[0],
    ),
    "ops_softmax_ce": (
        vec,
        lambda x: keras.ops.categorical_crossentropy(
            keras.ops.softmax(x), keras.ops.softmax(x * 2)
        ),
    ),
    "ops_sigmoid_ce": (
        vec,
        lambda x: keras.ops.binary_crossentropy(keras.ops.sigmoid(x), keras.ops.sigmoid(x * 2)),
    ),
    "ops_std": (vec, lambda x: keras.ops.std(x, axis=1)),
    "ops_prod": (vec, lambda x: keras.ops.prod(x, axis=1)),
    "ops_any_all": (
        vec,
        lambda x: (
            keras.ops.cast(keras.ops.any(x > 1, axis=1), "float32")
            + keras.ops.cast(keras.ops.all(x > -1, axis=1), "float32")
        ),
    ),
    "ops_cos_sim_l2norm": (vec, lambda x: keras.ops.normalize(x, axis=1)),
    "ops_expm1_log1p": (vec, lambda x: keras.ops.log1p(keras.ops.abs(x)) + keras.ops.expm1(x)),
    "ops_square_sqrt": (vec, lambda x: keras.ops.sqrt(keras.ops.square(x))),
    "ops_sign": (vec, lambda x: keras.ops.sign(x)),
    "ops_trunc": (vec, lambda x: keras.ops.trunc(x * 3)),
    "ops_nan_to_num": (vec, lambda x: keras.ops.nan_to_num(keras.ops.log(x))),
    "ops_bincount_like": (vec, lambda x: keras.ops.cumprod(x, axis=1)),
    "ops_full_like": (
        vec,
        lambda x: keras.ops.full_like(x, 3.0) + keras.ops.zeros_like(x) + keras.ops.ones_like(x),
    ),
    "ops_conv_transpose": (
        img,
        lambda x: keras.ops.depth_to_space(x, 2),
    ),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_keras_layer(name):
    mk, fn = LAYERS[name]
    keras.utils.set_random_seed(0)
    inp = mk()
    model = keras.Model(inp, fn(inp))
    rng = np.random.default_rng(0)
    shape = (2,) + tuple(inp.shape[1:])
    if inp.dtype.startswith("int"):
        x = rng.integers(0, 3, size=shape).astype(inp.dtype)
    else:
        x = rng.normal(size=shape).astype("float32")
    mod = from_tensorflow(model)
    got = relay_outputs(mod, [x])
    want = [
        np.asarray(w) for w in flat(tf.nest.map_structure(np.asarray, model(x, training=False)))
    ]
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got, want):
        if w.dtype.kind == "f":
            assert rel_error([g], [w]) <= 1e-4, name
        else:
            np.testing.assert_array_equal(g, w)
