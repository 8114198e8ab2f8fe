"""Products with run-time extents beyond the batch axis (kernels/gemm_dynamic.py): dense layers
on (batch, sequence, features) and attention products on (batch, heads, sequence, sequence),
as a shape-generic build of a transformer has them. Each case is built once with its unknown
dims `?` (specialize=False: no per-shape fallback) and run at several sizes against numpy in
float64; a spy checks that the run-time-shaped kernel computed it (not tensor expressions), and
whether an elementwise consumer (bias, activation, residual, attention's scale and mask) was
fused into it as its epilogue. Also the views of the general path: a dyn.reshape of a computed
value is the same bytes."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
from relay_core.backend.batch_blocks import WHOLE_BATCH
from relay_core.backend.kernels import gemm_dynamic
from relay_core.errors import RelayError
from relay_core.ir import Any, Function, IRModule, ShapeVar, TensorType, Var, call, const


class _Emitted(list):
    """The op names the dynamic kernel generator emitted kernels for; `.fused`: per kernel,
    whether it took an epilogue."""

    def __init__(self):
        super().__init__()
        self.fused = []


@pytest.fixture
def emitted(monkeypatch):
    seen = _Emitted()
    orig = gemm_dynamic._emit

    def spy(opname, *a, **k):
        info = orig(opname, *a, **k)
        epilogue = a[6] if len(a) > 6 else k.get("epilogue")
        seen.append(opname)
        seen.fused.append(epilogue is not None)
        return info

    monkeypatch.setattr(gemm_dynamic, "_emit", spy)
    return seen


def _typed(shape, dyn):
    return tuple(Any if i in dyn else d for i, d in enumerate(shape))


def _build(fn, nthreads=2):
    mod = relay_core.infer_type(IRModule.from_expr(fn))
    return relay_core.build(mod, specialize=False, cache=False, num_threads=nthreads)


def _rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _close(got, want):
    if isinstance(got, (list, tuple)):  # the module's outputs
        (got,) = got
    scale = float(np.abs(want).max(initial=1.0))
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4 * scale)


# (op, A shape, B shape, attrs, unknown dims of A, of B, constant B, run-time shapes (A, B))
CASES = {
    # dense layers of a transformer: (batch, sequence, features) x constant weights: A packed
    # once for all column runs (K = 768 and 2048); products of two values read A in place
    "dense_bsk": (
        "nn.dense",
        (2, 5, 768),
        (96, 768),
        {},
        (0, 1),
        (),
        True,
        [((1, 64, 768), None), ((3, 7, 768), None), ((2, 1, 768), None)],
    ),
    "dense_packed_a": (
        "nn.dense",
        (1, 5, 2048),
        (80, 2048),
        {},
        (0, 1),
        (),
        True,
        [((1, 75, 2048), None), ((2, 3, 2048), None)],
    ),
    "matmul_const_b": (
        "nn.matmul",
        (1, 5, 48),
        (48, 70),
        {},
        (0, 1),
        (),
        True,
        [((2, 37, 48), None), ((1, 150, 48), None)],
    ),
    # attention: (batch, heads, seq, d) @ (batch, heads, d, seq), every seq and batch unknown
    "attention_scores": (
        "nn.matmul",
        (1, 4, 9, 16),
        (1, 4, 16, 9),
        {},
        (0, 2),
        (0, 3),
        False,
        [((1, 4, 64, 16), (1, 4, 16, 64)), ((2, 4, 13, 16), (2, 4, 16, 13))],
    ),
    "attention_values": (
        "nn.batch_matmul",
        (1, 4, 9, 9),
        (1, 4, 16, 9),
        {"transpose_b": True},
        (0, 2, 3),
        (0, 3),
        False,
        [((2, 4, 33, 33), (2, 4, 16, 33)), ((1, 4, 5, 5), (1, 4, 16, 5))],
    ),
    "transpose_a": (
        "nn.matmul",
        (3, 20, 9),
        (3, 20, 11),
        {"transpose_a": True},
        (0, 2),
        (0,),
        False,
        [((3, 20, 40), (3, 20, 11)), ((1, 20, 1), (1, 20, 11))],
    ),
    # batch dims that broadcast at run time (an extent of 1 on either side)
    "broadcast": (
        "nn.matmul",
        (2, 1, 6, 8),
        (1, 3, 8, 5),
        {},
        (0, 1),
        (0, 1),
        False,
        [((2, 1, 6, 8), (1, 3, 8, 5)), ((1, 4, 6, 8), (3, 1, 8, 5)), ((2, 2, 6, 8), (2, 2, 8, 5))],
    ),
    # an empty reduction at run time: zeros
    "empty_k": (
        "nn.matmul",
        (2, 4, 3),
        (2, 3, 5),
        {},
        (0, 2),
        (0, 1),
        False,
        [((2, 4, 0), (2, 0, 5)), ((1, 4, 3), (1, 3, 5))],
    ),
}


def _ref(op, a, b, attrs):
    a, b = a.astype(np.float64), b.astype(np.float64)
    if op == "nn.dense":
        return a @ b.T
    if attrs.get("transpose_a"):
        a = np.swapaxes(a, -1, -2)
    if attrs.get("transpose_b", op == "nn.batch_matmul"):
        b = np.swapaxes(b, -1, -2)
    return np.matmul(a, b)


@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("case", sorted(CASES))
def test_dynamic_products(case, nthreads, emitted):
    op, sa, sb, attrs, da, db, const_b, runs = CASES[case]
    rng = np.random.default_rng(len(case))
    a = Var("a", TensorType(_typed(sa, da), "float32"))
    w = _rand(rng, *sb) if const_b else None
    if const_b:
        params, rhs = (a,), const(w)
    else:
        bv = Var("b", TensorType(_typed(sb, db), "float32"))
        params, rhs = (a, bv), bv
    lib = _build(Function(params, call(op, a, rhs, **attrs)), nthreads)
    # (a matmul by a constant becomes nn.dense: FoldMatmulLayout)
    assert emitted, f"{op} was not computed by the run-time-shaped kernel"
    for shape_a, shape_b in runs:
        av = _rand(rng, *shape_a)
        bval = w if const_b else _rand(rng, *shape_b)
        got = lib(av) if const_b else lib(av, bval)
        _close(got, _ref(op, av, bval, attrs))


def _f64(x):
    return x.astype(np.float64)


@pytest.mark.parametrize("nthreads", [1, 2])
def test_dense_bias_and_activation_fused(emitted, nthreads):
    """Bias and tanh after a dense layer on (?, ?, features): one kernel, the consumer applied
    to each stored tile (indexed by the last axis only)."""
    rng = np.random.default_rng(3)
    w, bias = _rand(rng, 40, 32), _rand(rng, 40)
    x = Var("x", TensorType((Any, Any, 32), "float32"))
    y = call("tanh", call("add", call("nn.dense", x, const(w)), const(bias)))
    lib = _build(Function((x,), y), nthreads)
    assert emitted == ["nn.dense"] and emitted.fused == [True]
    for shape in ((1, 9, 32), (4, 50, 32), (2, 0, 32)):
        xv = _rand(rng, *shape)
        _close(lib(xv), np.tanh(_f64(xv) @ _f64(w).T + bias))


@pytest.mark.parametrize("nthreads", [1, 2])
def test_dense_residual_fused(emitted, nthreads):
    """dense + bias + a residual of the same run-time shape (named dims: the group knows the
    shapes agree): the epilogue reads the residual at each row's (batch, sequence) index."""
    rng = np.random.default_rng(4)
    b, s = ShapeVar("b"), ShapeVar("s")
    w, bias = _rand(rng, 24, 40), _rand(rng, 24)
    x = Var("x", TensorType((b, s, 40), "float32"))
    r = Var("r", TensorType((b, s, 24), "float32"))
    y = call("add", call("add", call("nn.dense", x, const(w)), const(bias)), r)
    lib = _build(Function((x, r), y), nthreads)
    assert emitted == ["nn.dense"] and emitted.fused == [True]
    for bb, ss in ((1, 7), (3, 33), (2, 1)):
        xv, rv = _rand(rng, bb, ss, 40), _rand(rng, bb, ss, 24)
        _close(lib(xv, rv), _f64(xv) @ _f64(w).T + bias + rv)


@pytest.mark.parametrize("nthreads", [1, 2])
def test_attention_scores_scale_and_mask_fused(emitted, nthreads):
    """(b, h, s, d) x (b, h, s, d)^T, scaled, plus a (b, 1, 1, s) mask broadcast over heads and
    query positions: the epilogue indexes the mask by batch and key position."""
    rng = np.random.default_rng(6)
    b, s = ShapeVar("b"), ShapeVar("s")
    q = Var("q", TensorType((b, 4, s, 16), "float32"))
    k = Var("k", TensorType((b, 4, s, 16), "float32"))
    m = Var("m", TensorType((b, 1, 1, s), "float32"))
    scores = call("nn.batch_matmul", q, k, transpose_b=True)
    y = call("add", call("multiply", scores, const(np.float32(0.25))), m)
    lib = _build(Function((q, k, m), y), nthreads)
    assert emitted == ["nn.batch_matmul"] and emitted.fused == [True]
    for bb, ss in ((1, 9), (2, 40)):
        qv, kv, mv = _rand(rng, bb, 4, ss, 16), _rand(rng, bb, 4, ss, 16), _rand(rng, bb, 1, 1, ss)
        want = np.matmul(_f64(qv), np.swapaxes(_f64(kv), -1, -2)) * 0.25 + mv
        _close(lib(qv, kv, mv), want)


@pytest.mark.parametrize("nthreads", [1, 2])
def test_dense_on_a_run_time_batch_whole(emitted, nthreads):
    """A dense layer on (?, features) is split by batch element (blocks of 8 and 4, then one
    at a time); from WHOLE_BATCH rows on the run-time-shaped kernel takes the whole batch at
    once (blocks streamed the weights once per block), with the same fused bias, residual and
    activation, reading the weights in the same prepacked layout."""
    rng = np.random.default_rng(7)
    b = ShapeVar("b")
    w, bias = _rand(rng, 48, 64), _rand(rng, 48)
    x = Var("x", TensorType((b, 64), "float32"))
    r = Var("r", TensorType((b, 48), "float32"))
    y = call("nn.relu", call("add", call("add", call("nn.dense", x, const(w)), const(bias)), r))
    lib = _build(Function((x, r), y), nthreads)
    assert emitted == ["nn.dense"] and emitted.fused == [True]
    for rows in (1, 7, WHOLE_BATCH - 1, WHOLE_BATCH, 40):
        xv, rv = _rand(rng, rows, 64), _rand(rng, rows, 48)
        _close(lib(xv, rv), np.maximum(_f64(xv) @ _f64(w).T + bias + rv, 0))


def test_empty_reduction_then_epilogue(emitted):
    """K == 0 at run time: zeros, then the fused bias."""
    rng = np.random.default_rng(7)
    a = Var("a", TensorType((2, 4, Any), "float32"))
    bm = Var("b", TensorType((2, Any, 5), "float32"))
    bias = _rand(rng, 5)
    lib = _build(Function((a, bm), call("add", call("nn.matmul", a, bm), const(bias))))
    assert emitted == ["nn.matmul"] and emitted.fused == [True]
    for kk in (0, 3):
        av, bv = _rand(rng, 2, 4, kk), _rand(rng, 2, kk, 5)
        _close(lib(av, bv), np.matmul(_f64(av), _f64(bv)) + bias)


def _reshape_model():
    """exp(x) reshaped by a shape computed at run time (the data's own shape, split in two),
    then returned and also used again: a view of an intermediate value."""
    x = Var("x", TensorType((Any, Any), "float32"))
    s = Var("s", TensorType((3,), "int64"))
    e = call("exp", x)
    r = call("dyn.reshape", e, s)
    return Function((x, s), call("add", r, call("dyn.reshape", e, s)))


def test_dyn_reshape_of_a_value_is_a_view():
    lib = _build(_reshape_model())
    rng = np.random.default_rng(5)
    for shape, new in (((4, 6), (2, 2, 6)), ((3, 10), (5, 3, 2)), ((1, 8), (-1, 2, 2))):
        xv = _rand(rng, *shape)
        got = lib(xv, np.array(new, np.int64))
        _close(got, 2 * np.exp(xv.astype(np.float64)).reshape(new))


def test_dyn_reshape_of_an_input_and_as_output():
    """A view of an input (borrowed memory) is a copy; the result outlives the call."""
    x = Var("x", TensorType((Any, Any), "float32"))
    s = Var("s", TensorType((2,), "int64"))
    lib = _build(Function((x, s), call("dyn.reshape", x, s)))
    xv = np.arange(12, dtype=np.float32).reshape(3, 4)
    (got,) = lib(xv, np.array([6, 2], np.int64))
    xv[:] = -1  # the output does not alias the caller's input
    np.testing.assert_array_equal(got, np.arange(12, dtype=np.float32).reshape(6, 2))


def test_dyn_reshape_to_a_wrong_size_is_an_error():
    lib = _build(_reshape_model())
    with pytest.raises(RelayError, match="reshape"):
        lib(np.ones((4, 6), np.float32), np.array([5, 5, 5], np.int64))
    # the module still works after the error
    xv = np.ones((2, 3), np.float32)
    _close(lib(xv, np.array([1, 2, 3], np.int64)), 2 * np.e * np.ones((1, 2, 3)))
