"""`where` fused into a kernel as its epilogue when its arms read only the kernel's own value
(backend/epilogue.py can_fuse): GPT-Neo's causal mask after the attention scores
(where(mask, scores, min)), Hugging Face's where(isnan(p), 0, p) after a softmax. The mask is
read lane by lane (a gather of bools) when it is not contiguous along the kernel's vectors.
Values against numpy; the steps show one kernel."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
from relay_core.ir import Function, IRModule, TensorType, Var, call, const


def _build(fn, nthreads=2):
    mod = relay_core.infer_type(IRModule.from_expr(fn))
    return relay_core.build(mod, cache=False, num_threads=nthreads)


def _ops(lib):
    return [tuple(s["ops"]) for s in lib.manifest["steps"]]


@pytest.mark.parametrize("s", [16, 19])
@pytest.mark.parametrize("transposed_mask", [False, True])
def test_causal_mask_after_scores(s, transposed_mask):
    """where(mask, a @ b, -1e9) with a lower-triangular mask, a constant or (transposed) an
    input read across rows: a gather of one bool per lane. The where is the product's
    epilogue."""
    rng = np.random.default_rng(s)
    a = Var("a", TensorType((2, s, 8), "float32"))
    bm = Var("b", TensorType((2, 8, s), "float32"))
    tri = np.tril(np.ones((s, s), bool))
    params = [a, bm]
    if transposed_mask:
        m = Var("m", TensorType((1, s, s), "bool"))
        params.append(m)
        cond = call("transpose", m, axes=(0, 2, 1))
    else:
        cond = const(tri[None])
    p = call("nn.batch_matmul", a, bm, transpose_b=False)
    lib = _build(Function(params, call("where", cond, p, const(np.float32(-1e9)))))
    av = rng.standard_normal((2, s, 8)).astype(np.float32)
    bv = rng.standard_normal((2, 8, s)).astype(np.float32)
    args = [av, bv] + ([np.ascontiguousarray(tri.T)[None]] if transposed_mask else [])
    want = np.where(tri[None], av @ bv, np.float32(-1e9))
    np.testing.assert_allclose(lib(*args)[0], want, rtol=1e-5, atol=1e-5)
    assert any("nn.batch_matmul" in ops and "where" in ops for ops in _ops(lib))


def test_mask_input_after_dense():
    """where(mask, dense(x), 0) with a bool mask input broadcast over rows."""
    rng = np.random.default_rng(1)
    x = Var("x", TensorType((6, 20), "float32"))
    m = Var("m", TensorType((1, 33), "bool"))
    w = rng.standard_normal((33, 20)).astype(np.float32)
    y = call("where", m, call("nn.dense", x, const(w)), const(np.float32(0.0)))
    lib = _build(Function((x, m), y))
    xv = rng.standard_normal((6, 20)).astype(np.float32)
    mv = rng.random((1, 33)) > 0.5
    np.testing.assert_allclose(lib(xv, mv)[0], np.where(mv, xv @ w.T, 0.0), rtol=1e-5, atol=1e-5)
    assert any("nn.dense" in ops and "where" in ops for ops in _ops(lib))


def test_isnan_where_after_softmax():
    """Fully masked rows give NaN from the softmax; where(isnan(p), 0, p) zeroes them in the
    softmax kernel's epilogue."""
    rng = np.random.default_rng(2)
    x = Var("x", TensorType((3, 2, 24), "float32"))
    p = call("nn.softmax", x, axis=-1)
    lib = _build(Function((x,), call("where", call("isnan", p), const(np.float32(0.0)), p)))
    xv = rng.standard_normal((3, 2, 24)).astype(np.float32)
    xv[1, 0] = -np.inf
    with np.errstate(invalid="ignore"):
        e = np.exp(xv - xv.max(-1, keepdims=True))
        want = e / e.sum(-1, keepdims=True)
    want = np.where(np.isnan(want), 0.0, want)
    np.testing.assert_allclose(lib(xv)[0], want, rtol=1e-5, atol=1e-6)
    assert ("isnan", "nn.softmax", "where") in _ops(lib)


@pytest.mark.parametrize("form", ["bool_to_float", "float_to_bool"])
def test_vector_casts_in_epilogue(form):
    """dense(x) * cast(mask, float32) and where(cast(r, bool), dense(x), 0): casts of the
    epilogue's vectors (the scalar cast rules produced invalid IR for <N x i1> -> float)."""
    rng = np.random.default_rng(3)
    x = Var("x", TensorType((5, 20), "float32"))
    w = rng.standard_normal((35, 20)).astype(np.float32)
    d = call("nn.dense", x, const(w))
    xv = rng.standard_normal((5, 20)).astype(np.float32)
    if form == "bool_to_float":
        m = Var("m", TensorType((1, 35), "bool"))
        lib = _build(Function((x, m), call("multiply", d, call("cast", m, dtype="float32"))))
        mv = rng.random((1, 35)) > 0.5
        want = (xv @ w.T) * mv
    else:
        m = Var("m", TensorType((5, 35), "float32"))
        y = call("where", call("cast", m, dtype="bool"), d, const(np.float32(0.0)))
        lib = _build(Function((x, m), y))
        mv = np.where(rng.random((5, 35)) > 0.5, rng.standard_normal((5, 35)), 0.0)
        mv = mv.astype(np.float32)
        want = np.where(mv != 0, xv @ w.T, 0.0)
    np.testing.assert_allclose(lib(xv, mv)[0], want, rtol=1e-5, atol=1e-5)
    assert any("nn.dense" in ops and "cast" in ops for ops in _ops(lib))
