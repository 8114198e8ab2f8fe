"""The small-M path of nn.dense / nn.matmul / nn.batch_matmul (kernels/gemv.py) against numpy:
1..10 rows (those above gemv.small_m() go to the blocked engine, on the same cases), N and K not
multiples of 16, constant (prepacked) and run-time B in both orientations, batches with
broadcasting, epilogues with indices and extra buffers, one and two threads; each with the
target's own vector width and with AVX-512 masked (RELAY_CPU_FEATURES=-avx512f)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from relay_core.backend.kernels import gemv

from .helpers import assert_close, bias_relu_epilogue, index_epilogue, index_expected, run_batch

rng = np.random.default_rng(7)
FEATURES = ["", "-avx512f"]


def _rand(shape):
    return rng.standard_normal(shape).astype("float32")


def _tol(k):
    return dict(rtol=1e-4, atol=1e-5 * max(k, 1) ** 0.5 * 4)


def _np_matmul(a, b, ta, tb):
    if ta and a.ndim >= 2:
        a = np.swapaxes(a, -1, -2)
    if tb and b.ndim >= 2:
        b = np.swapaxes(b, -1, -2)
    return np.matmul(a, b)


@pytest.fixture(params=FEATURES, ids=["native", "no-avx512"])
def features(request, monkeypatch):
    monkeypatch.setenv("RELAY_CPU_FEATURES", request.param)
    return request.param


@pytest.mark.parametrize("m", range(1, 11))
def test_dense_small_m(m, features):
    cases = []
    for n, k, packed in itertools.product([1, 5, 16, 40, 100], [1, 7, 33, 300], [False, True]):
        x, w = _rand((m, k)), _rand((n, k))
        nt = 2 if (n + k) % 2 else 1
        cases.append(
            dict(inputs=[x, w], out_shape=(m, n), const_inputs=(1,) if packed else (), nthreads=nt)
        )
    for c, y in zip(cases, run_batch("nn.dense", cases)):
        x, w = c["inputs"]
        assert_close(y, x @ w.T, **_tol(x.shape[1]))


@pytest.mark.parametrize("m", [1, 3, 4, 6])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_small_m_both_orientations(m, tb, features):
    cases = []
    for n, k, ta, packed in itertools.product([3, 17, 50], [5, 64, 129], [False, True], [0, 1]):
        a = _rand((k, m) if ta else (m, k))
        b = _rand((n, k) if tb else (k, n))
        cases.append(
            dict(
                inputs=[a, b],
                out_shape=(m, n),
                attrs={"transpose_a": ta, "transpose_b": tb},
                const_inputs=(1,) if packed else (),
                nthreads=1 + (n % 2),
            )
        )
    for c, y in zip(cases, run_batch("nn.matmul", cases)):
        a, b = c["inputs"]
        want = _np_matmul(a, b, c["attrs"]["transpose_a"], c["attrs"]["transpose_b"])
        assert_close(y, want, **_tol(a.size // m))


@pytest.mark.parametrize(
    "sa,sb,tb",
    [
        ((12, 1, 64), (12, 40, 64), True),  # one query against the keys
        ((12, 1, 40), (12, 40, 64), False),  # its weights against the values
        ((3, 2, 17), (3, 33, 17), True),
        ((2, 1, 4, 17), (3, 17, 20), False),  # broadcast batch dims
        ((1, 3, 17), (4, 20, 17), True),
        ((4, 2, 1, 100), (1, 100, 30), False),
        ((5, 8, 40), (5, 50, 40), True),  # 8 rows: the small-M path with AVX-512 only
        ((2, 7, 33), (1, 33, 70), False),
    ],
)
@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_batch_matmul_small_m(sa, sb, tb, packed, nthreads, features):
    a, b = _rand(sa), _rand(sb)
    want = _np_matmul(a, b, False, tb)
    cases = [
        dict(
            inputs=[a, b],
            out_shape=want.shape,
            attrs={"transpose_b": tb},
            const_inputs=(1,) if packed else (),
            nthreads=nthreads,
        )
    ]
    (y,) = run_batch("nn.batch_matmul", cases)
    assert_close(y, want, **_tol(sa[-1]))


@pytest.mark.parametrize(
    "sa,sb,ta,tb",
    [
        ((1, 33), (40, 33), False, True),
        ((2, 100), (100, 17), False, False),
        ((100, 3), (100, 50), True, False),
        ((3, 2, 40), (40, 21), False, False),  # batch dims of A fold into M = 6
        ((17,), (17, 40), False, False),  # 1-D A: M = 1
        ((4, 17), (17,), False, False),  # 1-D B: N = 1
    ],
)
@pytest.mark.parametrize("packed", [False, True])
def test_matmul_small_m_index_epilogue(sa, sb, ta, tb, packed, features):
    a, b = _rand(sa), _rand(sb)
    want = _np_matmul(a, b, ta, tb)
    wts = tuple(0.5 ** (i + 1) for i in range(want.ndim))
    cases = [
        dict(
            inputs=[a, b],
            out_shape=want.shape,
            attrs={"transpose_a": ta, "transpose_b": tb},
            epilogue=index_epilogue(wts),
            const_inputs=(1,) if packed else (),
            nthreads=2,
        )
    ]
    (y,) = run_batch("nn.matmul", cases)
    assert_close(y, index_expected(want, wts), **_tol(sa[-1]))


@pytest.mark.parametrize(
    "m,n,k", [(1, 1024, 256), (2, 40, 33), (4, 300, 70), (1, 5, 3), (8, 1024, 256), (6, 77, 19)]
)
@pytest.mark.parametrize("nthreads", [1, 2])
def test_dense_small_m_bias_relu(m, n, k, nthreads, features):
    _check_dense_bias_relu(m, n, k, nthreads)


ROWS_CASES = [(12, 40, 33), (16, 1024, 256), (21, 5, 300), (64, 100, 7), (100, 16, 130)]


@pytest.mark.parametrize("m,n,k", ROWS_CASES)
@pytest.mark.parametrize("nthreads", [1, 2])
def test_dense_row_blocks_bias_relu(m, n, k, nthreads):
    """More rows than small_m() against a constant B: blocks of small_m() rows (the 'rows' form
    with AVX-512), the last block shorter, threads taking blocks; the epilogue gets each row's
    own index."""
    _check_dense_bias_relu(m, n, k, nthreads)


def _check_dense_bias_relu(m, n, k, nthreads):
    """relu(x @ w.T + bias) with w constant, against numpy."""
    x, w, bias = _rand((m, k)), _rand((n, k)), _rand((n,))
    cases = [
        dict(
            inputs=[x, w],
            out_shape=(m, n),
            epilogue=bias_relu_epilogue(n, -1),
            const_inputs=(1,),
            nthreads=nthreads,
            extras=[bias],
        )
    ]
    (y,) = run_batch("nn.dense", cases)
    assert_close(y, np.maximum(x @ w.T + bias, 0), **_tol(k))


@pytest.mark.parametrize("sa,sb", [((3, 7, 40), (40, 21)), ((50, 300), (300, 33))])
@pytest.mark.parametrize("nthreads", [1, 2])
def test_matmul_row_blocks_index_epilogue(sa, sb, nthreads):
    """Row blocks over A's folded batch dims (3 x 7 -> M = 21): the epilogue's indices of every
    row of every block."""
    a, b = _rand(sa), _rand(sb)
    want = a @ b
    wts = tuple(0.5 ** (i + 1) for i in range(want.ndim))
    cases = [
        dict(
            inputs=[a, b],
            out_shape=want.shape,
            epilogue=index_epilogue(wts),
            const_inputs=(1,),
            nthreads=nthreads,
        )
    ]
    (y,) = run_batch("nn.matmul", cases)
    assert_close(y, index_expected(want, wts), **_tol(sa[-1]))


def test_row_blocks_form_is_chosen():
    """The cases above take the 'rows' form on an AVX-512 target, and not with a B too large
    for a core's L2, a batch of B matrices, or one block and a row or two."""
    from types import SimpleNamespace

    def form(m, n, k, batch=(), packed=True):
        return gemv.form(SimpleNamespace(M=m, N=n, K=k, batch=batch), packed)

    if gemv.vector_width() != 16:
        assert form(64, 100, 7) is None
        return
    for m, n, k in ROWS_CASES + [(21, 21, 40), (50, 33, 300)]:
        assert form(m, n, k) == "rows"
    assert form(64, 1024, 512) is None  # 2 MB of B
    assert form(64, 100, 7, batch=(2,)) is None
    assert form(64, 100, 7, packed=False) is None
    assert form(9, 1024, 256) is None


def test_vector_width_follows_the_features(monkeypatch):
    from relay_core.backend.llvm_target import host

    native = "+avx512f" in host()[2].split(",")
    assert gemv.vector_width() == (16 if native else 8)
    assert gemv.small_m() == (gemv.SMALL_M_WIDE if native else gemv.SMALL_M)
    monkeypatch.setenv("RELAY_CPU_FEATURES", "-avx512f")
    assert gemv.vector_width() == 8
    assert gemv.small_m() == gemv.SMALL_M
