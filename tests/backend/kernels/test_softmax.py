"""softmax / log_softmax / hardmax kernels and the IR exp / log against numpy."""

from __future__ import annotations

import llvmlite.ir as ir
import numpy as np
import pytest

from relay_core.backend.kernels.llvm_util import (
    F32,
    F32P,
    I32,
    V8F,
    for_range,
    new_function,
    vload,
    vstore,
)
from relay_core.backend.llvm_math import exp_f32, exp_nonpos_f32, log_f32
from tools.kernel_jit import KernelModule

from .helpers import assert_close, index_epilogue, index_expected, run_batch

rng = np.random.default_rng(4)


def np_softmax(x, axis):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_log_softmax(x, axis):
    x = x.astype(np.float64)
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


def np_hardmax(x, axis):
    y = np.zeros(x.shape, x.dtype)
    np.put_along_axis(y, np.expand_dims(np.argmax(x, axis=axis), axis), 1, axis=axis)
    return y


SHAPES = [
    ((7,), -1),
    ((3, 5), -1),
    ((3, 5), 0),
    ((2, 1, 4), 1),
    ((2, 3, 4, 5), 1),
    ((2, 3, 4, 5), -1),
    ((4, 1000), -1),
    ((1, 1), 0),
    ((2, 37, 9), 1),
    ((16, 64), 0),
    ((64, 1000), -1),
    ((8, 300, 40), 1),
    # float32 rows at 16 lanes: whole vectors only, whole vectors and a masked rest (ViT's 197)
    ((5, 16), -1),
    ((3, 197), -1),
    ((2, 31), -1),
]
REFS = {"nn.softmax": np_softmax, "nn.log_softmax": np_log_softmax, "nn.hardmax": np_hardmax}


@pytest.mark.parametrize("op", list(REFS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_softmax_family(op, dtype):
    cases = []
    for shape, axis in SHAPES:
        x = (rng.standard_normal(shape) * 4).astype(dtype)
        cases.append(
            (dict(inputs=[x], out_shape=shape, attrs={"axis": axis}, nthreads=2), REFS[op](x, axis))
        )
    tol = {"float32": 2e-6, "float64": 1e-12, "float16": 2e-3}[dtype]
    for (_c, want), y in zip(cases, run_batch(op, [c for c, _ in cases])):
        assert y.dtype == np.dtype(dtype)
        assert_close(y, want, rtol=tol * 10, atol=tol)


def test_softmax_extremes():
    x = np.array(
        [[1e30, -1e30, 0, 5], [-np.inf, 0, 1, 2], [100, 100, 100, 100], [-1000, -1001, -999, -1000]]
        * 3,
        np.float32,
    )
    cases = [dict(inputs=[x], out_shape=x.shape, attrs={"axis": a}) for a in (-1, 0)]
    for op in ("nn.softmax", "nn.log_softmax"):
        for c, y in zip(cases, run_batch(op, cases)):
            with np.errstate(all="ignore"):
                want = REFS[op](x, c["attrs"]["axis"])
            assert_close(y, want, rtol=1e-5, atol=1e-6)


def test_softmax_epilogue():
    wts = (0.5, 0.25, 0.125)
    cases = []
    for axis in (-1, 1):
        x = rng.standard_normal((2, 9, 20)).astype(np.float32)
        cases.append(
            (
                dict(
                    inputs=[x],
                    out_shape=x.shape,
                    attrs={"axis": axis},
                    epilogue=index_epilogue(wts),
                ),
                index_expected(np_softmax(x, axis), wts),
            )
        )
    for (_c, want), y in zip(cases, run_batch("nn.softmax", [c for c, _ in cases])):
        assert_close(y, want, rtol=1e-5, atol=1e-6)


def _math_kernel(fn, n):
    km = KernelModule()
    llmod = km.llmod

    def emit(llmod, name, in_types, out_types, attrs, epilogue=None):
        f, b = new_function(llmod, name, [F32P, F32P, I32])
        x, y, _ = f.args
        with for_range(b, 0, n, 8) as j:
            vstore(b, fn(b, vload(b, x, j)), y, j)
        b.store(
            fn(b, b.load(b.gep(x, [ir.Constant(ir.IntType(64), 0)]))),
            b.gep(y, [ir.Constant(ir.IntType(64), n)]),
        )
        b.ret_void()
        from relay_core.backend.kernels import KernelInfo

        return KernelInfo(f)

    from tools.kernel_jit import tt

    k = km.add(emit, [tt((n + 1,))], [tt((n + 1,))])
    km.compile()
    assert llmod is km.llmod and V8F is not None and F32 is not None
    return k


def _ulp_err(got, want):
    want32 = want.astype(np.float32)
    spacing = np.abs(np.spacing(want32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want) / np.maximum(spacing, np.finfo(np.float32).tiny)


def test_exp_accuracy():
    x = np.concatenate([np.linspace(-87, 88.7, 4000), rng.uniform(-10, 10, 4000)]).astype(
        np.float32
    )
    n = len(x) // 8 * 8
    x = x[: n + 1]
    (y,) = _math_kernel(exp_f32, n)(x)
    assert _ulp_err(y[:n], np.exp(x[:n].astype(np.float64))).max() <= 4
    special = np.array([0, -np.inf, np.inf, np.nan, -100, 100, 1, -1, 0.5], np.float32)
    (ys,) = _math_kernel(exp_f32, 8)(special)
    assert ys[0] == 1 and ys[1] == 0 and np.isinf(ys[2]) and np.isnan(ys[3]) and ys[4] < 1e-37
    assert np.isinf(ys[5])


def test_log_accuracy():
    x = np.concatenate(
        [
            np.exp(np.linspace(-87, 88, 4000)),
            rng.uniform(0, 10, 4000),
            np.array([1e-40, 3e-45, 1.0, 2.0]),
        ]
    ).astype(np.float32)
    n = len(x) // 8 * 8
    x = x[: n + 1]
    (y,) = _math_kernel(log_f32, n)(x)
    assert _ulp_err(y[:n], np.log(x[:n].astype(np.float64))).max() <= 4
    special = np.array([0, -1, np.inf, np.nan, 1, 1e-44, 2, 4, 0.5], np.float32)
    (ys,) = _math_kernel(log_f32, 8)(special)
    assert ys[0] == -np.inf and np.isnan(ys[1]) and ys[2] == np.inf and np.isnan(ys[3])
    assert ys[4] == 0 and abs(ys[5] - np.log(np.float64(np.float32(1e-44)))) < 1e-4


def test_exp_nonpos_accuracy():
    x = np.concatenate([np.linspace(-87, 0, 4000), rng.uniform(-10, 0, 4000)]).astype(np.float32)
    n = len(x) // 8 * 8
    x = x[: n + 1]
    (y,) = _math_kernel(exp_nonpos_f32, n)(x)
    assert _ulp_err(y[:n], np.exp(x[:n].astype(np.float64))).max() <= 4
    special = np.array([0, -np.inf, np.nan, -100, -88, -1, -0.5, -1e-8, 0], np.float32)
    (ys,) = _math_kernel(exp_nonpos_f32, 8)(special)
    assert ys[0] == 1 and ys[1] == 0 and np.isnan(ys[2]) and ys[3] == 0 and ys[4] == 0
    np.testing.assert_allclose(ys[5:8], np.exp(special[5:8].astype(np.float64)), rtol=3e-7)
