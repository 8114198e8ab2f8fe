"""Softmax / log_softmax with run-time extents (kernels/softmax.py emit_dynamic_softmax_family):
attention probabilities on (batch, heads, sequence, sequence) as a shape-generic build of a
transformer has them. Each case is built once with its unknown dims `?` (specialize=False) and
run at several sizes (rows shorter than a vector, not a multiple of one, a single element)
against numpy in float64; a spy checks that the run-time-shaped kernel computed it (not tensor
expressions) and whether its elementwise consumer (Hugging Face's isnan / where after the
softmax, a scale by a value of the row's position) was fused into it."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
from relay_core.backend.kernels import softmax as softmax_kernels
from relay_core.ir import Any, Function, IRModule, ShapeVar, TensorType, Var, call, const


@pytest.fixture
def emitted(monkeypatch):
    """(kind, fused) per run-time-shaped kernel emitted."""
    seen = []
    orig = softmax_kernels._emit_dynamic

    def spy(kind, *a):
        info = orig(kind, *a)
        seen.append((kind, a[6] is not None))
        return info

    monkeypatch.setattr(softmax_kernels, "_emit_dynamic", spy)
    return seen


def _build(fn, nthreads):
    mod = relay_core.infer_type(IRModule.from_expr(fn))
    return relay_core.build(mod, specialize=False, cache=False, num_threads=nthreads)


def _softmax(x, log=False):
    x = x.astype(np.float64)
    z = x - x.max(axis=-1, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=-1, keepdims=True))
    return z - lse if log else np.exp(z - lse)


def _close(got, want):
    if isinstance(got, (list, tuple)):
        (got,) = got
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * max(1.0, np.abs(want).max()))


SHAPES = [(2, 3, 37, 37), (1, 2, 5, 5), (1, 1, 1, 1), (3, 2, 16, 16), (1, 4, 130, 130)]


@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("op", ["nn.softmax", "nn.log_softmax"])
def test_dynamic_softmax(op, nthreads, emitted):
    rng = np.random.default_rng(0)
    x = Var("x", TensorType((Any, Any, Any, Any), "float32"))
    lib = _build(Function((x,), call(op, x, axis=-1)), nthreads)
    assert emitted and not emitted[0][1], "not computed by the run-time-shaped kernel"
    for shape in SHAPES:
        xv = (rng.standard_normal(shape) * 4).astype(np.float32)
        _close(lib(xv), _softmax(xv, op == "nn.log_softmax"))


@pytest.mark.parametrize("nthreads", [1, 2])
def test_dynamic_softmax_masked_rows(nthreads, emitted):
    """Hugging Face's attention: scores + mask (-inf at masked keys, whole rows masked give
    NaN), softmax, then where(isnan(p), 0, p) fused into the kernel as its epilogue."""
    rng = np.random.default_rng(1)
    x = Var("x", TensorType((Any, 3, Any, Any), "float32"))
    m = Var("m", TensorType((Any, 1, 1, Any), "float32"))
    p = call("nn.softmax", call("add", x, m), axis=-1)
    y = call("where", call("isnan", p), const(np.float32(0.0)), p)
    lib = _build(Function((x, m), y), nthreads)
    assert emitted == [("softmax", True)]
    for b, s in [(2, 21), (1, 40), (3, 3)]:
        xv = rng.standard_normal((b, 3, s, s)).astype(np.float32)
        mv = np.zeros((b, 1, 1, s), np.float32)
        mv[0, ..., s // 2 :] = -np.inf
        if b > 1:
            mv[1] = -np.inf  # every key masked: NaN rows, zeroed by the where
        with np.errstate(invalid="ignore"):
            want = _softmax(xv + mv)
        want = np.where(np.isnan(want), 0.0, want)
        _close(lib(xv, mv), want)


def test_dynamic_softmax_epilogue_reads_positions(emitted):
    """An epilogue whose value depends on the row (a per-query scale broadcast over the last
    axis): the kernel passes each row's indices from the run-time extents."""
    rng = np.random.default_rng(2)
    b, q = ShapeVar("b"), ShapeVar("q")
    x = Var("x", TensorType((b, q, Any), "float32"))
    s = Var("s", TensorType((b, q, 1), "float32"))
    lib = _build(Function((x, s), call("multiply", call("nn.softmax", x, axis=-1), s)), 2)
    assert emitted == [("softmax", True)]
    for shape in [(2, 5, 19), (1, 33, 7)]:
        xv = rng.standard_normal(shape).astype(np.float32)
        sv = rng.standard_normal(shape[:2] + (1,)).astype(np.float32)
        _close(lib(xv, sv), _softmax(xv) * sv)


def test_dynamic_softmax_other_axis_falls_back(emitted):
    """Not the last axis: tensor expressions (still correct)."""
    rng = np.random.default_rng(3)
    x = Var("x", TensorType((Any, Any, 6), "float32"))
    lib = _build(Function((x,), call("nn.softmax", x, axis=1)), 2)
    assert emitted == []
    xv = rng.standard_normal((2, 9, 6)).astype(np.float32)
    want = np.moveaxis(_softmax(np.moveaxis(xv, 1, -1)), -1, 1)
    _close(lib(xv), want)
