"""nn.dense / nn.matmul / nn.batch_matmul kernels against numpy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from .helpers import (
    assert_close,
    bias_relu_epilogue,
    index_epilogue,
    index_expected,
    run_batch,
    run_kernel,
)

SIZES = [1, 5, 17, 64, 255]
rng = np.random.default_rng(1)


def _rand(shape, dtype="float32"):
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _tol(k):
    return dict(rtol=1e-4, atol=1e-5 * max(k, 1) ** 0.5 * 4)


@pytest.mark.parametrize("m", SIZES)
@pytest.mark.parametrize("packed", [False, True])
def test_dense_shapes(m, packed):
    cases = []
    for n, k in itertools.product(SIZES, SIZES):
        x, w = _rand((m, k)), _rand((n, k))
        nt = 2 if (m + n + k) % 2 else 1
        cases.append(
            dict(inputs=[x, w], out_shape=(m, n), const_inputs=(1,) if packed else (), nthreads=nt)
        )
    for c, y in zip(cases, run_batch("nn.dense", cases)):
        x, w = c["inputs"]
        assert_close(y, x @ w.T, **_tol(x.shape[1]))


@pytest.mark.parametrize("m,n,k", [(300, 301, 600), (97, 1000, 513), (1, 4096, 300), (1000, 7, 70)])
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_dense_large(m, n, k, packed, nthreads):
    x, w = _rand((m, k)), _rand((n, k))
    y = run_kernel(
        "nn.dense", [x, w], (m, n), const_inputs=(1,) if packed else (), nthreads=nthreads
    )
    assert_close(y, x @ w.T, **_tol(k))


def test_k_block_rule():
    from relay_core.backend.kernels.gemm_core import KC, KC_PACKED, k_block

    assert k_block(768, True) == 768 and k_block(KC_PACKED, True) == KC_PACKED
    assert k_block(KC_PACKED + 28, True) == (KC_PACKED + 28) // 2
    assert k_block(3 * KC_PACKED + 1, True) == -(-(3 * KC_PACKED + 1) // 4)  # four blocks
    assert k_block(768, False) == KC


@pytest.mark.parametrize("shape", [(4,), (2, 3, 7), (3, 1, 260)])
@pytest.mark.parametrize("packed", [False, True])
def test_dense_batched_data(shape, packed):
    x, w = _rand(shape), _rand((21, shape[-1]))
    y = run_kernel(
        "nn.dense", [x, w], shape[:-1] + (21,), const_inputs=(1,) if packed else (), nthreads=2
    )
    assert_close(y, x @ w.T, **_tol(shape[-1]))


# K = 3100 / 6200: with packed weights, beyond KC_PACKED, K comes in 2 / 3 blocks, each adding
# its tile to C (the epilogue applied once, after the last)
@pytest.mark.parametrize(
    "m,n,k",
    [
        (1, 1, 1),
        (5, 17, 64),
        (17, 255, 5),
        (255, 64, 300),
        (64, 5, 17),
        (30, 40, 3100),
        (30, 40, 6200),
    ],
)
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_dense_index_epilogue(m, n, k, packed, nthreads):
    x, w = _rand((m, k)), _rand((n, k))
    wts = (0.25, 0.125)
    y = run_kernel(
        "nn.dense",
        [x, w],
        (m, n),
        epilogue=index_epilogue(wts),
        const_inputs=(1,) if packed else (),
        nthreads=nthreads,
    )
    assert_close(y, index_expected(x @ w.T, wts), **_tol(k))


@pytest.mark.parametrize("m,n,k", [(7, 33, 300), (64, 16, 16), (1, 5, 3)])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_dense_bias_relu_epilogue(m, n, k, nthreads):
    x, w, bias = _rand((m, k)), _rand((n, k)), _rand((n,))
    y = run_kernel(
        "nn.dense",
        [x, w],
        (m, n),
        epilogue=bias_relu_epilogue(n, -1),
        const_inputs=(1,),
        nthreads=nthreads,
        extras=[bias],
    )
    assert_close(y, np.maximum(x @ w.T + bias, 0), **_tol(k))


MATMUL_CASES = [
    # a shape, b shape, transpose_a, transpose_b
    ((5, 17), (17, 64), False, False),
    ((17,), (17, 5), False, False),
    ((5, 17), (17,), False, False),
    ((17,), (17,), False, False),
    ((3, 5, 17), (17, 6), False, False),
    ((3, 5, 17), (3, 17, 6), False, False),
    ((2, 1, 5, 17), (3, 17, 20), False, False),
    ((1, 5, 17), (4, 17, 20), False, False),
    ((17, 5), (17, 64), True, False),
    ((5, 17), (64, 17), False, True),
    ((2, 17, 5), (2, 64, 17), True, True),
    ((4, 255, 64), (64, 255), False, False),
    ((2, 3, 5, 0), (0, 4), False, False),
    ((0, 5, 7), (7, 3), False, False),
]


def _np_matmul(a, b, ta, tb):
    if ta and a.ndim >= 2:
        a = np.swapaxes(a, -1, -2)
    if tb and b.ndim >= 2:
        b = np.swapaxes(b, -1, -2)
    return np.matmul(a, b)


@pytest.mark.parametrize("sa,sb,ta,tb", MATMUL_CASES)
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_matmul(sa, sb, ta, tb, packed, nthreads):
    a, b = _rand(sa), _rand(sb)
    want = _np_matmul(a, b, ta, tb)
    attrs = {"transpose_a": ta, "transpose_b": tb}
    y = run_kernel(
        "nn.matmul",
        [a, b],
        want.shape,
        attrs,
        const_inputs=(1,) if packed else (),
        nthreads=nthreads,
    )
    assert_close(y, want, **_tol(max(sa[-1], 1)))


@pytest.mark.parametrize("sa,sb,ta,tb", [c for c in MATMUL_CASES if 0 not in c[0] + c[1]])
def test_matmul_index_epilogue(sa, sb, ta, tb):
    a, b = _rand(sa), _rand(sb)
    want = _np_matmul(a, b, ta, tb)
    wts = tuple(0.5 ** (i + 1) for i in range(want.ndim))
    attrs = {"transpose_a": ta, "transpose_b": tb}
    y = run_kernel("nn.matmul", [a, b], want.shape, attrs, epilogue=index_epilogue(wts), nthreads=2)
    assert_close(y, index_expected(want, wts), **_tol(sa[-1]))


@pytest.mark.parametrize(
    "sa,sb", [((3, 5, 17), (3, 64, 17)), ((1, 255, 64), (4, 7, 64)), ((2, 1, 1), (2, 1, 1))]
)
@pytest.mark.parametrize("packed", [False, True])
def test_batch_matmul_default_transpose_b(sa, sb, packed):
    a, b = _rand(sa), _rand(sb)
    want = a @ np.swapaxes(b, -1, -2)
    y = run_kernel(
        "nn.batch_matmul", [a, b], want.shape, None, const_inputs=(1,) if packed else (), nthreads=2
    )
    assert_close(y, want, **_tol(sa[-1]))


@pytest.mark.parametrize(
    "sa,sb,tb",
    [
        ((3, 25, 64), (3, 25, 64), True),  # attention scores: 12-row tiles and a 1-row rest
        ((3, 25, 25), (3, 25, 64), False),  # probabilities @ values
        ((2, 13, 300), (2, 300, 40), False),  # K over two KC blocks, a 1-row rest
        ((37, 1025), (70, 1025), True),  # odd row stride
        ((47, 512), (33, 512), True),  # rows 2 KB apart: packed by the rule
    ],
)
@pytest.mark.parametrize("in_place", [False, True, None])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_matmul_a_in_place(monkeypatch, sa, sb, tb, in_place, nthreads):
    """A's rows read in place by the microkernel (gemm_core.A_ROWS), packed, and as the rule
    chooses, against numpy; with an epilogue, which the tile store applies either way."""
    from relay_core.backend.kernels import gemm_ops

    monkeypatch.setattr(gemm_ops, "A_IN_PLACE", in_place)
    a, b = _rand(sa), _rand(sb)
    want = _np_matmul(a, b, False, tb)
    wts = tuple(0.5 ** (i + 1) for i in range(want.ndim))
    y = run_kernel(
        "nn.matmul",
        [a, b],
        want.shape,
        {"transpose_b": tb},
        epilogue=index_epilogue(wts),
        nthreads=nthreads,
    )
    assert_close(y, index_expected(want, wts), **_tol(sa[-1]))


def test_a_in_place_rule():
    from relay_core.backend.kernels.gemm_ops import a_in_place_pays, plan_matmul

    assert a_in_place_pays(plan_matmul((8, 6, 197, 64), (8, 6, 197, 64), False, True))
    assert a_in_place_pays(plan_matmul((1576, 384), (1152, 384), False, True))
    # rows 12 KB apart (K = 3072) would share a few L1 sets: packed
    assert not a_in_place_pays(plan_matmul((1024, 3072), (768, 3072), False, True))


def test_batch_matmul_no_transpose():
    a, b = _rand((2, 5, 17)), _rand((2, 17, 9))
    y = run_kernel("nn.batch_matmul", [a, b], (2, 5, 9), {"transpose_b": False})
    assert_close(y, a @ b, **_tol(17))


@pytest.mark.parametrize("dtype", ["float64", "float16"])
@pytest.mark.parametrize("sa,sb,ta,tb", MATMUL_CASES[:6] + MATMUL_CASES[8:11])
def test_matmul_other_float_dtypes(dtype, sa, sb, ta, tb):
    a, b = _rand(sa, dtype), _rand(sb, dtype)
    want = _np_matmul(a.astype(np.float64), b.astype(np.float64), ta, tb)
    attrs = {"transpose_a": ta, "transpose_b": tb}
    y = run_kernel("nn.matmul", [a, b], want.shape, attrs, nthreads=2)
    assert y.dtype == np.dtype(dtype)
    tol = 1e-10 if dtype == "float64" else 2e-2
    assert_close(y, want.astype(dtype), rtol=tol, atol=tol * 10)


@pytest.mark.parametrize(
    "da,db,out",
    [
        ("uint8", "int8", "int32"),
        ("int8", "int8", "int32"),
        ("uint8", "uint8", "int32"),
        ("int32", "int32", "int32"),
        ("int64", "int64", "int64"),
    ],
)
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (5, 17, 64), (17, 5, 255)])
def test_matmul_integer(da, db, out, m, n, k):
    a, b = _rand((m, k), da), _rand((k, n), db)
    want = (a.astype(np.int64) @ b.astype(np.int64)).astype(out)
    y = run_kernel("nn.matmul", [a, b], (m, n), {"out_dtype": out}, out_dtype=out, nthreads=2)
    assert y.dtype == np.dtype(out)
    np.testing.assert_array_equal(y, want)


def test_dense_integer_with_epilogue():
    x, w = _rand((3, 9), "uint8"), _rand((5, 9), "int8")
    want = x.astype(np.int64) @ w.astype(np.int64).T
    y = run_kernel("nn.dense", [x, w], (3, 5), {"out_dtype": "int32"}, out_dtype="int32")
    np.testing.assert_array_equal(y, want.astype(np.int32))


def test_float64_index_epilogue():
    a, b = _rand((5, 17), "float64"), _rand((17, 9), "float64")
    wts = (0.5, 0.25)
    y = run_kernel("nn.matmul", [a, b], (5, 9), epilogue=index_epilogue64(wts))
    assert_close(y, index_expected(a @ b, wts), rtol=1e-10, atol=1e-10)


def index_epilogue64(weights):
    from relay_core.backend.kernels.llvm_util import F64, as_i64, const

    def fn(b, v, idx):
        s = const(F64, 0.0)
        for w, i in zip(weights, idx):
            s = b.fadd(s, b.fmul(b.sitofp(as_i64(b, i), F64), const(F64, w)))
        return b.fadd(b.fmul(v, const(F64, 0.5)), s)

    return fn


@pytest.mark.parametrize("da,db", [("uint8", "uint8"), ("int8", "int8"), ("uint8", "int8")])
def test_matmul_integer_extremes(da, db):
    """Sums of the largest 8-bit products stay exact (int32 accumulation when it cannot
    overflow, int64 otherwise)."""
    cases = []
    for k in (1000, 40000):
        lo_a, hi_a = (0, 255) if da == "uint8" else (-128, 127)
        lo_b, hi_b = (0, 255) if db == "uint8" else (-128, 127)
        a = np.where(rng.random((3, k)) < 0.5, lo_a, hi_a).astype(da)
        b = np.where(rng.random((k, 5)) < 0.5, lo_b, hi_b).astype(db)
        cases.append(
            dict(
                inputs=[a, b],
                out_shape=(3, 5),
                attrs={"out_dtype": "int64"},
                out_dtype="int64",
                nthreads=2,
            )
        )
    for c, y in zip(cases, run_batch("nn.matmul", cases)):
        a, b = c["inputs"]
        np.testing.assert_array_equal(y, a.astype(np.int64) @ b.astype(np.int64))
