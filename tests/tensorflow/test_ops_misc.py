"""Op-level parity with TF for the less common ops Keras layers and keras.ops emit."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import Case, params, rand, run_case, tf

R = tf.raw_ops
I32 = np.int32

CASES = [
    Case(
        "Mod",
        lambda x, y: R.Mod(x=x, y=y),
        [np.array([-7, 7, 9, -9], I32), np.array([2, -2, 4, 4], I32)],
        ("Mod",),
    ),
    Case(
        "Bitcast_signbit",
        lambda x: R.Bitcast(input=x, type=tf.int32),
        [np.array([0.0, -0.0, 1.5, -2.0], np.float32)],
        ("Bitcast",),
    ),
    Case(
        "Bitcast_widen",
        lambda x: R.Bitcast(input=x, type=tf.int32),
        [rand(3, 2, dtype="int16", lo=-999, hi=999)],
        ("Bitcast",),
    ),
    Case(
        "Bucketize",
        lambda x: R.Bucketize(input=x, boundaries=[-1.0, 0.0, 0.5, 2.0]),
        [np.array([[-3.0, -1.0, 0.2], [0.5, 1.0, 9.0]], np.float32)],
        ("Bucketize",),
    ),
    Case(
        "DenseBincount",
        lambda x: R.DenseBincount(input=x, size=5, weights=tf.zeros([0])),
        [np.array([[0, 1, 1, 7], [4, 4, 0, 2]], I32)],
        ("DenseBincount",),
    ),
    Case(
        "DenseBincount_weights_binary",
        lambda x, w: (
            R.DenseBincount(input=x, size=4, weights=w),
            R.DenseBincount(input=x, size=4, weights=tf.zeros([0]), binary_output=True),
        ),
        [np.array([[0, 1, 1, 3], [2, 2, 3, 0]], I32), rand(2, 4)],
        ("DenseBincount",),
    ),
    Case(
        "Roll",
        lambda x: R.Roll(input=x, shift=[2, -1, 1], axis=[1, 2, 1]),
        [rand(2, 5, 3)],
        ("Roll",),
    ),
    Case(
        "Roll_dynamic",
        lambda x: R.Roll(input=x, shift=3, axis=0),
        [rand(5, 2)],
        ("Roll",),
        dynamic=(0,),
    ),
    Case(
        "MatrixDiagPartV3",
        lambda x: (tf.linalg.diag_part(x), tf.linalg.diag_part(x, k=1)),
        [rand(2, 3, 4)],
        ("MatrixDiagPartV3",),
    ),
    Case(
        "MatrixSetDiagV3",
        lambda x, d: tf.linalg.set_diag(x, d),
        [rand(2, 4, 3), rand(2, 3)],
        ("MatrixSetDiagV3",),
    ),
    Case(
        "MatrixDiagV3",
        lambda d: (tf.linalg.diag(d), tf.linalg.diag(d, k=-1, padding_value=9)),
        [rand(2, 3)],
        ("MatrixDiagV3",),
    ),
    Case(
        "UnsortedSegmentSum",
        lambda x, i: R.UnsortedSegmentSum(data=x, segment_ids=i, num_segments=4),
        [rand(5, 3), np.array([0, 3, 0, 1, 3], I32)],
        ("UnsortedSegmentSum",),
    ),
    Case(
        "UnsortedSegment_max_min_prod",
        lambda x, i: (
            R.UnsortedSegmentMax(data=x, segment_ids=i, num_segments=3),
            R.UnsortedSegmentMin(data=x, segment_ids=i, num_segments=3),
            R.UnsortedSegmentProd(data=x, segment_ids=i, num_segments=3),
        ),
        [rand(2, 3, 2), np.array([[0, 2, 0], [2, 2, 0]], I32)],
        ("UnsortedSegmentMax", "UnsortedSegmentMin", "UnsortedSegmentProd"),
    ),
    Case(
        "SoftmaxCrossEntropyWithLogits",
        lambda f, lab: R.SoftmaxCrossEntropyWithLogits(features=f, labels=lab),
        [rand(3, 5), tf.nn.softmax(rand(3, 5, seed=1)).numpy()],
        ("SoftmaxCrossEntropyWithLogits",),
    ),
    Case(
        "SparseSoftmaxCrossEntropyWithLogits",
        lambda f, lab: R.SparseSoftmaxCrossEntropyWithLogits(features=f, labels=lab),
        [rand(3, 5), np.array([4, 0, 2], I32)],
        ("SparseSoftmaxCrossEntropyWithLogits",),
    ),
]


@pytest.mark.parametrize("case", params(CASES))
def test_misc(case):
    run_case(case)
