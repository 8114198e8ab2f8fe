"""One weight read by many steps (an unrolled recurrent cell): the compiled module stores it
once, however many Constant nodes or equal copies the frontends and passes made of it, and
whatever layout its kernels read it in. An ONNX LSTM unrolled over 64 time steps once stored
127 prepacked copies of one 1 MB weight (133 MB of weights.bin for 3.7 MB of weights)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import relay_core
from relay_core.backend.kernels.gemm_core import gemm_tile
from relay_core.ir import Function, IRModule, call, const, var

STEPS, K = 12, 40  # K not a multiple of 16: the packed panels are padded


def _cell_chain(transpose_b: bool, copies: bool):
    """h <- tanh(h @ W(^T) + x_t) over STEPS steps; W a fresh Constant per step (an equal copy
    of the array when `copies`)."""
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((K, K)) * 0.2).astype("float32")
    wt = np.ascontiguousarray(w.T) if transpose_b else w
    x = var("x", (STEPS, 1, K))
    h = call("tanh", call("take", x, const(0, "int64"), axis=0))
    outs = [h]
    for t in range(1, STEPS):
        wc = const(wt.copy() if copies else wt)
        mm = call("nn.matmul", h, wc, transpose_b=transpose_b)
        h = call("tanh", call("add", mm, call("take", x, const(t, "int64"), axis=0)))
        outs.append(h)
    y = call("concatenate", *outs, axis=0)
    return relay_core.infer_type(IRModule.from_expr(Function((x,), y))), w


@pytest.mark.parametrize("transpose_b", [True, False])
@pytest.mark.parametrize("copies", [False, True])
def test_one_copy_of_a_weight_read_by_every_step(transpose_b, copies):
    mod, w = _cell_chain(transpose_b, copies)
    lib = relay_core.build(mod)
    x = np.random.default_rng(1).standard_normal((STEPS, 1, K)).astype("float32")
    want = np.asarray(relay_core.evaluate(mod, x))
    got = lib(x)
    got = got[0] if isinstance(got, (list, tuple)) else got
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    stored = sum(
        math.prod(c["shape"]) * np.dtype(c["dtype"]).itemsize for c in lib.manifest["constants"]
    )
    nr = gemm_tile().nr  # the target's panel width
    one_packed = K * (-(-K // nr) * nr) * 4  # W in column panels, zero padded
    assert stored <= max(w.nbytes, one_packed) * 1.05, lib.manifest["constants"]
