"""`take` of a constant index along an axis with only size-1 axes before it is one contiguous
part of its input: the static graph passes its bytes at an offset to the readers, no kernel
(graph._slab_offset). As in an unrolled RNN, each take is read by a dense layer's epilogue (so
that it is a group of its own). Compiled against numpy with views of computed values, of
inputs, of views, as outputs; and the cases left to a kernel (an offset not 64-byte aligned,
clipped or out-of-range indices, an axis with a larger one before it)."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
import relay_core.errors
from relay_core.ir import Tuple, call, const, var
from tests.backend.support import build_function

RNG = np.random.default_rng(5)


def _take_steps(lib) -> int:
    return sum("take" in s["ops"] for s in lib.manifest["steps"])


def _take(x, k, axis=0, mode="clip"):
    return call("take", x, const(np.int64(k)), axis=axis, mode=mode)


class _Step:
    """add(dense(h, w), v): a recurrent step reading `v` (shape (rows, cols))."""

    def __init__(self, rows, cols, k=8):
        self.h = var(f"h{rows}_{cols}", (rows, k))
        self.hv = RNG.standard_normal((rows, k)).astype("float32")
        self.w = RNG.standard_normal((cols, k)).astype("float32")

    def __call__(self, v):
        return call("add", call("nn.dense", self.h, const(self.w)), v)

    def want(self, v):
        return self.hv @ self.w.T + v


@pytest.mark.parametrize("k", [0, 3, 7])
def test_steps_of_a_computed_value(k):
    """An RNN's input projection (a kernel's output in the workspace) read a step at a time."""
    x = var("x", (8, 4, 32))
    wx = RNG.standard_normal((16, 32)).astype("float32")
    proj = call("nn.dense", x, const(wx))  # (8, 4, 16)
    step = _Step(4, 16)
    y = step(_take(proj, k))
    y = call("nn.dense", y, const(wx[:, :16]))  # (4, 16) -> another step
    z = call("add", y, _take(proj, 7 - k))
    lib = build_function([x, step.h], z)
    xs = RNG.standard_normal((8, 4, 32)).astype("float32")
    got = lib(xs, step.hv)[0]
    p = xs @ wx.T
    want = step.want(p[k]) @ wx[:, :16].T + p[7 - k]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert _take_steps(lib) == 0


def test_views_of_an_input_of_a_view_and_as_outputs():
    x = var("x", (1, 6, 2, 16))
    inner = _take(x, 4, axis=1)  # (1, 2, 16): only a size-1 axis before axis 1
    row = _take(inner, 1, axis=1)  # (1, 16): a view of a view
    neg = _take(x, -1, axis=1, mode="fast")  # counts from the end
    step = _Step(1, 16)
    lib = build_function([x, step.h], Tuple((inner, step(row), step(_take(neg, 0, axis=1)))))
    xs = RNG.standard_normal((1, 6, 2, 16)).astype("float32")
    got = lib(xs, step.hv)
    np.testing.assert_array_equal(got[0], xs[:, 4])
    np.testing.assert_allclose(got[1], step.want(xs[:, 4, 1]), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[2], step.want(xs[:, 5, 0]), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "shape,k,axis,mode,view",
    [
        ((8, 4, 16), 2, 0, "clip", True),
        ((8, 4, 16), -3, 0, "wrap", True),  # inside [-n, n) negatives count from the end
        ((8, 4, 16), -1, 0, "clip", True),
        ((8, 4, 16), -2, 0, "strict", False),  # an error at run time: the kernel reports it
        ((8, 4, 5), 3, 0, "clip", False),  # 80-byte steps: the offset is not 64-byte aligned
        ((8, 4, 16), 9, 0, "clip", False),  # out of range: clipped to the last step
        ((8, 4, 16), -9, 0, "clip", False),  # clipped to the first step
        ((2, 4, 16), 1, 1, "clip", False),  # a size-2 axis before the taken one
    ],
)
def test_view_or_kernel(shape, k, axis, mode, view):
    if mode == "strict":  # the compiled model stops with the error; no result to compare
        x = var("x", shape)
        step = _Step(shape[1], shape[2])
        lib = build_function([x, step.h], Tuple((step(_take(call("exp", x), k, axis, mode)), x)))
        with pytest.raises(relay_core.errors.RelayError):
            lib(RNG.standard_normal(shape).astype("float32"), step.hv)
        assert _take_steps(lib) == 1
        return
    x = var("x", shape)
    e = call("exp", x)
    v = _take(e, k, axis, mode)
    rows, cols = [d for i, d in enumerate(shape) if i != axis]
    step = _Step(rows, cols)
    lib = build_function([x, step.h], Tuple((step(v), e)))  # exp read twice: a group of its own
    xs = RNG.standard_normal(shape).astype("float32")
    got = lib(xs, step.hv)[0]
    n = shape[axis]
    i = k % n if mode == "wrap" else min(max(k + n if k < 0 else k, 0), n - 1)
    want = step.want(np.take(np.exp(xs), i, axis=axis))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert _take_steps(lib) == (0 if view else 1)
