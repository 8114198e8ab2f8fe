"""Op-level parity with TF: StridedSlice with every mask, Slice, gathers and scatters."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import Case, params, rand, run_case, tf

R = tf.raw_ops
I32, I64 = np.int32, np.int64
X = rand(4, 5, 6)

SLICES = {
    "range": lambda x: x[1:3],
    "begin_end_mask": lambda x: x[:, ::2],
    "ellipsis_shrink": lambda x: x[..., 1],
    "newaxis_ellipsis_reverse": lambda x: x[tf.newaxis, 1:, ..., ::-1],
    "shrink_negative": lambda x: x[-1],
    "negative_bounds": lambda x: x[:, -3:-1],
    "negative_strides": lambda x: x[::-2, 1::3],
    "reverse_all": lambda x: x[::-1, ::-1, ::-1],
    "newaxis_middle": lambda x: x[1:, tf.newaxis, 2],
    "out_of_range_clamps": lambda x: x[-100:100, 3:1],
    "ellipsis_first": lambda x: x[..., 2:, tf.newaxis],
    "shrink_all": lambda x: x[1, 2, 3],
}
CASES = [Case(f"StridedSlice_{k}", f, [X], ("StridedSlice",)) for k, f in SLICES.items()]
CASES += [
    Case(
        "StridedSlice_raw_masks",
        lambda x: R.StridedSlice(
            input=x,
            begin=[0, 1, 0, 2],
            end=[0, 3, 0, 0],
            strides=[1, 1, 1, -1],
            begin_mask=0b0001,
            end_mask=0b1001,
            ellipsis_mask=0b0100,
            new_axis_mask=0,
            shrink_axis_mask=0,
        ),
        [rand(3, 4, 5, 6)],
        ("StridedSlice",),
    ),
    Case(
        "StridedSlice_raw_newaxis_shrink",
        lambda x: R.StridedSlice(
            input=x,
            begin=[0, 1, 0],
            end=[0, 2, 0],
            strides=[1, 1, 1],
            begin_mask=0,
            end_mask=0,
            ellipsis_mask=0,
            new_axis_mask=0b101,
            shrink_axis_mask=0b010,
        ),
        [rand(3, 4)],
        ("StridedSlice",),
    ),
    Case(
        "StridedSlice_dynamic_shape",
        lambda x: x[:, 1:, -2],
        [X],
        ("StridedSlice",),
        dynamic_all=(0,),
    ),
    Case(
        "StridedSlice_dynamic_shape_reverse",
        lambda x: x[::-1, :-1, 1::2],
        [X],
        ("StridedSlice",),
        dynamic_all=(0,),
    ),
    Case("StridedSlice_dynamic_index", lambda x, i: x[i], [X, np.array(2, I32)], ("StridedSlice",)),
    Case(
        "StridedSlice_dynamic_negative_index",
        lambda x, i: x[:, i],
        [X, np.array(-2, I32)],
        ("StridedSlice",),
    ),
    Case(
        "StridedSlice_dynamic_bounds",
        lambda x, i: x[i : i + 2, ::2],
        [X, np.array(1, I32)],
        ("StridedSlice",),
    ),
    Case("Slice", lambda x: R.Slice(input=x, begin=[1, 0, 2], size=[2, -1, 3]), [X], ("Slice",)),
    Case(
        "Slice_dynamic",
        lambda x, b: R.Slice(input=x, begin=b, size=[1, 2, -1]),
        [X, np.array([2, 1, 3], I32)],
        ("Slice",),
    ),
    Case(
        "GatherV2",
        lambda x, i: R.GatherV2(params=x, indices=i, axis=1),
        [X, np.array([[4, 0], [1, 1]], I32)],
        ("GatherV2",),
    ),
    Case(
        "GatherV2_neg_axis_i64",
        lambda x, i: R.GatherV2(params=x, indices=i, axis=-1),
        [X, np.array([5, 2], I64)],
        ("GatherV2",),
    ),
    Case(
        "GatherV2_batch_dims",
        lambda x, i: R.GatherV2(params=x, indices=i, axis=1, batch_dims=1),
        [X, np.array([[0, 4], [1, 1], [3, 2], [0, 0]], I32)],
        ("GatherV2",),
    ),
    Case(
        "Gather",
        lambda x, i: R.Gather(params=x, indices=i),
        [X, np.array([3, 0, 3], I32)],
        ("Gather",),
    ),
    Case(
        "GatherNd",
        lambda x, i: R.GatherNd(params=x, indices=i),
        [X, np.array([[0, 1], [3, 4], [2, 0]], I32)],
        ("GatherNd",),
    ),
    Case(
        "GatherNd_full",
        lambda x, i: R.GatherNd(params=x, indices=i),
        [X, np.array([[[0, 1, 5]], [[3, 4, 0]]], I64)],
        ("GatherNd",),
    ),
    Case(
        "GatherNd_batch_dims",
        lambda x, i: tf.gather_nd(x, i, batch_dims=1),
        [X, np.array([[1, 2], [0, 0], [4, 5], [2, 3]], I32)],
        ("GatherNd",),
    ),
    Case(
        "ScatterNd",
        lambda i, u: R.ScatterNd(indices=i, updates=u, shape=[4, 3]),
        [np.array([[1], [3], [1]], I32), rand(3, 3)],
        ("ScatterNd",),
    ),
    Case(
        "TensorScatterUpdate",
        lambda t, i, u: R.TensorScatterUpdate(tensor=t, indices=i, updates=u),
        [rand(4, 3), np.array([[0, 1], [3, 2]], I32), rand(2)],
        ("TensorScatterUpdate",),
    ),
    Case(
        "TensorScatterAdd_Sub",
        lambda t, i, u: (
            R.TensorScatterAdd(tensor=t, indices=i, updates=u),
            R.TensorScatterSub(tensor=t, indices=i, updates=u),
        ),
        [rand(4, 3), np.array([[2], [0], [2]], I32), rand(3, 3)],
        ("TensorScatterAdd", "TensorScatterSub"),
    ),
    Case(
        "TensorScatterMax_Min",
        lambda t, i, u: (
            R.TensorScatterMax(tensor=t, indices=i, updates=u),
            R.TensorScatterMin(tensor=t, indices=i, updates=u),
        ),
        [rand(5), np.array([[1], [4], [1]], I32), rand(3)],
        ("TensorScatterMax", "TensorScatterMin"),
    ),
]


@pytest.mark.parametrize("case", params(CASES))
def test_index(case):
    run_case(case)


def test_dense_spec_expands_ellipsis_and_new_axes():
    from converters.tensorflow.ops_index import dense_spec

    # x[tf.newaxis, 1:, ..., 2] on a rank-4 tensor
    spec = dense_spec(4, 4, ellipsis_mask=0b0100, new_axis_mask=0b0001, shrink_axis_mask=0b1000)
    assert spec == [
        ("new",),
        ("dim", 0, 1, False),
        ("dim", 1, None, False),
        ("dim", 2, None, False),
        ("dim", 3, 3, True),
    ]
