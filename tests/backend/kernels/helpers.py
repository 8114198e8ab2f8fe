"""Shared helpers for kernel tests: JIT a kernel, run it, and test epilogues."""

from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

from relay_core.backend.kernels import Epilogue
from relay_core.backend.kernels.llvm_util import F32, as_i64, const, load, splat, vload
from relay_core.backend.llvm_target import target_key
from relay_core.ops import lookup
from tools.kernel_jit import Compiled, KernelModule, tt

_CACHE: dict = {}


def compile_kernel(op, in_types, out_types, attrs=None, epilogue=None, const_inputs=()):
    """Compile the kernel that op `op` declares for the given types (cached per signature and
    target when no epilogue)."""

    key = (
        (op, tuple(in_types), tuple(out_types), repr(attrs), const_inputs, target_key())
        if epilogue is None
        else None
    )
    if key is not None and key in _CACHE:
        return _CACHE[key]
    k = Compiled.build(
        lookup(op).kernel, in_types, out_types, attrs, epilogue=epilogue, const_inputs=const_inputs
    )
    if key is not None:
        _CACHE[key] = k
    return k


def run_kernel(
    op,
    inputs,
    out_shape,
    attrs=None,
    out_dtype=None,
    epilogue=None,
    const_inputs=(),
    nthreads=1,
    extras=(),
):
    ins = [np.asarray(x) for x in inputs]
    in_types = [tt(x.shape, str(x.dtype)) for x in ins]
    out_types = [tt(out_shape, out_dtype or str(ins[0].dtype))]
    k = compile_kernel(op, in_types, out_types, attrs, epilogue, tuple(const_inputs))
    return k(*ins, nthreads=nthreads, extras=extras)[0]


def run_batch(op, cases: list[dict]) -> list[np.ndarray]:
    """Run many calls of op `op`'s kernel compiled together in one module (faster to build).

    Each case: inputs, out_shape, and optionally attrs, out_dtype, epilogue, const_inputs,
    nthreads, extras."""

    km = KernelModule()
    ks = []
    for c in cases:
        ins = [np.asarray(x) for x in c["inputs"]]
        in_types = [tt(x.shape, str(x.dtype)) for x in ins]
        out_types = [tt(c["out_shape"], c.get("out_dtype") or str(ins[0].dtype))]
        ks.append(
            km.add(
                lookup(op).kernel,
                in_types,
                out_types,
                c.get("attrs"),
                c.get("epilogue"),
                tuple(c.get("const_inputs", ())),
            )
        )
    km.compile()
    return [
        k(*c["inputs"], nthreads=c.get("nthreads", 1), extras=c.get("extras", ()))[0]
        for k, c in zip(ks, cases)
    ]


# Epilogues ---------------------------------------------------------------------------------


def _lane_offsets(v):
    n = v.type.count
    return ir.Constant(v.type, [ir.Constant(F32, float(i)) for i in range(n)])


def index_epilogue(weights):
    """v -> 0.5 * v + sum_i w_i * idx_i: checks that every element gets its own indices."""

    def fn(b, v, idx):
        assert len(idx) == len(weights), (idx, weights)
        s = const(F32, 0.0)
        for w, i in zip(weights, idx):
            s = b.fadd(s, b.fmul(b.sitofp(as_i64(b, i), F32), const(F32, w)))
        if isinstance(v.type, ir.VectorType):
            s = b.fadd(
                splat(b, s, v.type.count), b.fmul(_lane_offsets(v), const(v.type, weights[-1]))
            )
        return b.fadd(b.fmul(v, const(v.type, 0.5)), s)

    return fn


def index_expected(y, weights):
    idx = np.indices(y.shape).astype(np.float64) if y.ndim else np.zeros((0,))
    s = sum(w * idx[i] for i, w in enumerate(weights)) if y.ndim else 0.0
    return 0.5 * y + s


def bias_relu_epilogue(channels: int, axis: int):
    """max(v + bias[idx[axis]], 0), bias an extra buffer of `channels` floats."""

    def fn(b, v, idx, extras):
        bias = extras[0]
        if isinstance(v.type, ir.VectorType) and axis == -1:
            bv = vload(b, bias, idx[-1], v.type.count)
        else:
            s = load(b, bias, idx[axis])
            bv = splat(b, s, v.type.count) if isinstance(v.type, ir.VectorType) else s
        x = b.fadd(v, bv)
        return b.select(b.fcmp_ordered(">", x, const(v.type, 0.0)), x, const(v.type, 0.0))

    return Epilogue(fn, (tt((channels,)),))


def assert_close(got, want, rtol=1e-4, atol=1e-4):
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype or want.dtype == np.float64, (got.dtype, want.dtype)
    np.testing.assert_allclose(
        got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol
    )
