"""llvm_math's sigmoid on the vector widths the kernels use, against a float64 reference."""

from __future__ import annotations

import ctypes

import llvmlite.ir as ir
import numpy as np
import pytest

from relay_core.backend import llvm_math
from relay_core.backend.kernels.llvm_util import F32P, I64, for_range, gep, vload, vstore
from tools.kernel_jit import compile_module


def _vector_fn(fn, lanes: int):
    """y[i] = fn(x[i]) over n floats (n a multiple of lanes), `lanes` at a time (0: scalar)."""
    mod = ir.Module(name="m")
    f = ir.Function(mod, ir.FunctionType(ir.VoidType(), [F32P, F32P, I64]), name="f")
    b = ir.IRBuilder(f.append_basic_block("entry"))
    x, y, n = f.args
    with for_range(b, 0, n, max(lanes, 1), name="i") as i:
        if lanes:
            vstore(b, fn(b, vload(b, x, i, lanes)), y, i)
        else:
            b.store(fn(b, b.load(gep(b, x, i))), gep(b, y, i))
    b.ret_void()
    ee = compile_module(mod)
    cf = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(
        ee.get_function_address("f")
    )
    cf._ee = ee

    def run(a):
        a = np.ascontiguousarray(a, np.float32)
        out = np.empty_like(a)
        cf(a.ctypes.data, out.ctypes.data, a.size)
        return out

    return run


def _inputs():
    special = [0.0, -0.0, 88.0, -88.0, 88.5, -88.5, 89.0, -89.0, 104.0, -104.0, 1e-40, -1e-40]
    special += [np.inf, -np.inf, np.nan, 3.4e38, -3.4e38, 0.5, -0.5, 16.6, -16.6]
    x = np.concatenate([np.linspace(-110, 110, 20011), np.linspace(-3, 3, 6001), special])
    x = x.astype(np.float32)
    return np.concatenate([x, np.zeros((-x.size) % 16, np.float32)])


@pytest.mark.parametrize("lanes", [0, 8, 16])
def test_sigmoid_accuracy(lanes):
    x = _inputs()
    got = _vector_fn(llvm_math.sigmoid_f32, lanes)(x)
    with np.errstate(over="ignore"):
        want = 1.0 / (1.0 + np.exp(-x.astype(np.float64)))
    nan = np.isnan(x)
    assert np.isnan(got[nan]).all()
    g, w = got[~nan].astype(np.float64), want[~nan]
    assert (g >= 0).all() and (g <= 1).all()
    normal = w >= 1e-30
    rel = np.abs(g[normal] - w[normal]) / w[normal]
    assert rel.max() < 5e-7, (lanes, float(rel.max()), float(x[~nan][normal][rel.argmax()]))
    assert np.abs(g[~normal] - w[~normal]).max() < 1e-37
    assert got[x == np.inf].tolist() == [1.0] and got[x == -np.inf].tolist() == [0.0]
