"""Op-level parity with TF: shapes, reshapes, joins and splits, creation, padding, misc."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import Case, params, rand, run_case, tf

R = tf.raw_ops
I32 = np.int32

CASES = [
    Case(
        "Identity_family",
        lambda x: R.Snapshot(
            input=R.StopGradient(
                input=R.PreventGradient(
                    input=R.CheckNumerics(tensor=R.Identity(input=x), message="m")
                )
            )
        ),
        [rand(2, 3)],
        ("Identity", "StopGradient", "PreventGradient", "CheckNumerics", "Snapshot"),
    ),
    Case(
        "IdentityN",
        lambda x, y: R.IdentityN(input=[x, y]),
        [rand(2), rand(3, seed=1)],
        ("IdentityN",),
    ),
    Case(
        "EnsureShape",
        lambda x: R.EnsureShape(input=x, shape=[None, 3]) * 2.0,
        [rand(2, 3)],
        ("EnsureShape",),
        dynamic=(0,),
    ),
    Case(
        "PlaceholderWithDefault",
        lambda x: R.PlaceholderWithDefault(input=x, shape=[2, 3]) + 1.0,
        [rand(2, 3)],
        ("PlaceholderWithDefault",),
    ),
    Case(
        "Shape_Size_Rank",
        lambda x: (R.Shape(input=x), R.Size(input=x, out_type=tf.int64), R.Rank(input=x)),
        [rand(2, 3, 4)],
        ("Shape", "Size", "Rank"),
    ),
    Case(
        "Shape_dynamic",
        lambda x: (R.Shape(input=x, out_type=tf.int64), R.Size(input=x)),
        [rand(2, 3, 4)],
        ("Shape", "Size"),
        dynamic_all=(0,),
    ),
    Case("ShapeN", lambda x, y: R.ShapeN(input=[x, y]), [rand(2, 3), rand(4, seed=1)], ("ShapeN",)),
    Case("Reshape", lambda x: R.Reshape(tensor=x, shape=[3, -1]), [rand(2, 3, 4)], ("Reshape",)),
    Case(
        "Reshape_dynamic_batch",
        lambda x: tf.reshape(x, [tf.shape(x)[0], -1]),
        [rand(2, 3, 4)],
        ("Reshape",),
        dynamic=(0,),
    ),
    Case(
        "Reshape_dynamic_two",
        lambda x: tf.reshape(x, tf.stack([tf.shape(x)[1], tf.shape(x)[0] * tf.shape(x)[2]])),
        [rand(2, 3, 4)],
        ("Reshape",),
        dynamic_all=(0,),
    ),
    Case(
        "Reshape_zero_dim",
        lambda x: R.Reshape(tensor=x, shape=[0, 5]),
        [np.zeros((0, 2, 5), np.float32)],
        ("Reshape",),
    ),
    Case("Transpose", lambda x: R.Transpose(x=x, perm=[2, 0, 1]), [rand(2, 3, 4)], ("Transpose",)),
    Case(
        "ConjugateTranspose",
        lambda x: R.ConjugateTranspose(x=x, perm=[1, 0]),
        [rand(2, 3)],
        ("ConjugateTranspose",),
    ),
    Case(
        "ExpandDims",
        lambda x: (R.ExpandDims(input=x, axis=-1), R.ExpandDims(input=x, axis=1)),
        [rand(2, 3)],
        ("ExpandDims",),
    ),
    Case(
        "Squeeze",
        lambda x: (R.Squeeze(input=x, axis=[-1]), R.Squeeze(input=x)),
        [rand(1, 3, 1)],
        ("Squeeze",),
    ),
    Case(
        "ConcatV2",
        lambda x, y: R.ConcatV2(values=[x, y, x], axis=-1),
        [rand(2, 3), rand(2, 1, seed=1)],
        ("ConcatV2",),
    ),
    Case(
        "Concat",
        lambda x, y: R.Concat(concat_dim=0, values=[x, y]),
        [rand(2, 3), rand(1, 3, seed=1)],
        ("Concat",),
    ),
    Case(
        "Pack",
        lambda x, y: (R.Pack(values=[x, y], axis=1), R.Pack(values=[x, y], axis=-1)),
        [rand(2, 3), rand(2, 3, seed=1)],
        ("Pack",),
    ),
    Case("Unpack", lambda x: R.Unpack(value=x, num=3, axis=1), [rand(2, 3, 4)], ("Unpack",)),
    Case("Split", lambda x: R.Split(axis=1, value=x, num_split=2), [rand(2, 4)], ("Split",)),
    Case(
        "SplitV",
        lambda x: R.SplitV(value=x, size_splits=[1, -1, 2], axis=-1, num_split=3),
        [rand(2, 6)],
        ("SplitV",),
    ),
    Case(
        "SplitV_last_minus1",
        lambda x: R.SplitV(value=x, size_splits=[2, -1], axis=0, num_split=2),
        [rand(5, 2)],
        ("SplitV",),
        dynamic=(0,),
    ),
    Case("Fill", lambda v: R.Fill(dims=[2, 3], value=v), [np.array(1.5, np.float32)], ("Fill",)),
    Case(
        "Fill_dynamic",
        lambda x: R.Fill(dims=tf.stack([tf.shape(x)[0], 4]), value=2.0),
        [rand(3, 2)],
        ("Fill",),
        dynamic=(0,),
    ),
    Case(
        "ZerosLike_OnesLike",
        lambda x: (R.ZerosLike(x=x), R.OnesLike(x=x)),
        [rand(2, 3)],
        ("ZerosLike", "OnesLike"),
    ),
    Case("Range", lambda: R.Range(start=1, limit=10, delta=3), [], ("Range",)),
    Case(
        "Range_dynamic",
        lambda x: R.Range(start=0, limit=tf.shape(x)[0], delta=1) * 2,
        [rand(5)],
        ("Range",),
        dynamic=(0,),
    ),
    Case("Range_float", lambda: R.Range(start=0.5, limit=2.0, delta=0.25), [], ("Range",)),
    Case(
        "LinSpace",
        lambda a, b: R.LinSpace(start=a, stop=b, num=5),
        [np.array(-1.0, np.float32), np.array(2.0, np.float32)],
        ("LinSpace",),
    ),
    Case("Tile", lambda x: R.Tile(input=x, multiples=[2, 1, 3]), [rand(2, 3, 1)], ("Tile",)),
    Case(
        "Tile_dynamic",
        lambda x, n: R.Tile(input=x, multiples=tf.stack([n, 1])),
        [rand(2, 3), np.array(3, I32)],
        ("Tile",),
    ),
    Case(
        "BroadcastTo",
        lambda x: R.BroadcastTo(input=x, shape=[2, 3, 4]),
        [rand(3, 1)],
        ("BroadcastTo",),
    ),
    Case(
        "BroadcastTo_dynamic",
        lambda x, y: R.BroadcastTo(input=x, shape=tf.shape(y)),
        [rand(1, 4), rand(3, 4)],
        ("BroadcastTo",),
        dynamic_all=(1,),
    ),
    Case("BroadcastArgs", lambda: R.BroadcastArgs(s0=[2, 1, 3], s1=[4, 1]), [], ("BroadcastArgs",)),
    Case(
        "InvertPermutation",
        lambda x: R.Transpose(x=x, perm=R.InvertPermutation(x=[2, 0, 1])),
        [rand(2, 3, 4)],
        ("InvertPermutation",),
    ),
    Case("Pad", lambda x: R.Pad(input=x, paddings=[[1, 0], [2, 3]]), [rand(2, 3)], ("Pad",)),
    Case(
        "PadV2",
        lambda x: R.PadV2(input=x, paddings=[[0, 1], [1, 1]], constant_values=-7.0),
        [rand(2, 3)],
        ("PadV2",),
    ),
    Case(
        "MirrorPad_reflect",
        lambda x: R.MirrorPad(input=x, paddings=[[1, 1], [2, 0]], mode="REFLECT"),
        [rand(3, 4)],
        ("MirrorPad",),
    ),
    Case(
        "MirrorPad_symmetric",
        lambda x: R.MirrorPad(input=x, paddings=[[2, 1], [0, 3]], mode="SYMMETRIC"),
        [rand(3, 4)],
        ("MirrorPad",),
    ),
    Case(
        "ReverseV2", lambda x: R.ReverseV2(tensor=x, axis=[0, -1]), [rand(2, 3, 4)], ("ReverseV2",)
    ),
    Case(
        "Reverse",
        lambda x: R.Reverse(tensor=x, dims=[True, False, True]),
        [rand(2, 3, 4)],
        ("Reverse",),
    ),
    Case(
        "ReverseSequence",
        lambda x, s: R.ReverseSequence(input=x, seq_lengths=s, seq_dim=1, batch_dim=0),
        [rand(3, 5, 2), np.array([2, 5, 0], np.int64)],
        ("ReverseSequence",),
    ),
    Case(
        "OneHot",
        lambda i: R.OneHot(indices=i, depth=4, on_value=2.0, off_value=-1.0),
        [np.array([[0, 3], [5, -1]], I32)],
        ("OneHot",),
    ),
    Case(
        "OneHot_axis0",
        lambda i: R.OneHot(indices=i, depth=3, on_value=1, off_value=0, axis=0),
        [np.array([2, 0, 1], I32)],
        ("OneHot",),
    ),
    Case("Where", lambda x: tf.where(x), [rand(3, 4, dtype="bool")], ("Where",)),
    Case(
        "Where_float",
        lambda x: tf.where(x),
        [np.array([[0.0, 1.0], [2.0, 0.0]], np.float32)],
        ("Where",),
    ),
    Case(
        "MatrixBandPart",
        lambda x: (
            R.MatrixBandPart(input=x, num_lower=1, num_upper=0),
            R.MatrixBandPart(input=x, num_lower=-1, num_upper=1),
            R.MatrixBandPart(input=x, num_lower=0, num_upper=-1),
        ),
        [rand(2, 4, 5)],
        ("MatrixBandPart",),
    ),
    Case(
        "Einsum",
        lambda a, b: R.Einsum(inputs=[a, b], equation="bij,bjk->bik"),
        [rand(2, 3, 4), rand(2, 4, 5, seed=1)],
        ("Einsum",),
    ),
    Case(
        "Unique",
        lambda x: R.Unique(x=x),
        [np.array([3, 1, 3, 2, 1, 7], I32)],
        ("Unique",),
    ),
]


@pytest.mark.parametrize("case", params(CASES))
def test_array(case):
    run_case(case)


def test_reshape_keeps_static_dims_with_a_dynamic_batch():
    from converters.tensorflow import from_tensorflow
    from relay_core.ir import ShapeVar, TensorType

    @tf.function(input_signature=[tf.TensorSpec([None, 3, 4])])
    def f(x):
        return tf.reshape(x, [tf.shape(x)[0], -1])

    mod = from_tensorflow(f)
    assert mod["main"].body.checked_type == TensorType((ShapeVar("batch"), 12), "float32")
