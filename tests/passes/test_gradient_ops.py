"""Every differentiable op's gradient rule against finite differences, on the op's own samples
(registry-driven: a new op with a rule is checked without writing a test)."""

from __future__ import annotations

import numpy as np
import pytest

from relay_core.errors import RelayError
from relay_core.ops import all_ops

from .gradcheck import (
    analytic_grads,
    is_float,
    numeric_grads,
    output_weights,
    prepare,
    weighted_module,
)

LOW_PRECISION = ("float16", "bfloat16")


def _float_out(op, s, precise: bool = False) -> bool:
    """The sample maps float inputs to a float output (float16/32/64, bfloat16; with
    `precise`, no half-precision output, which finite differences cannot resolve)."""
    if not any(is_float(x) for x in s.inputs):
        return False
    try:
        out = op.ref(list(s.inputs), op.make_attrs(**s.attrs))
    except Exception:
        return False
    outs = out if isinstance(out, tuple) else (out,)
    if precise and any(o.dtype.name in LOW_PRECISION for o in outs if is_float(o)):
        return False
    return any(is_float(o) for o in outs)


def differentiable(op) -> bool:
    """Not stateful, and some sample maps float inputs to a float output."""
    if op.stateful or op.samples is None or op.shape_only:
        return False
    return any(_float_out(op, s) for s in op.samples(np.random.default_rng(0)))


DIFF_OPS = sorted(n for n, op in all_ops().items() if differentiable(op))
# Backward ops: their own gradients (second derivatives) are refused with a clear error.
NOT_DIFFERENTIATED = {
    "vision.roi_align_grad",
    "vision.roi_pool_grad",
}


def test_every_differentiable_op_has_a_rule():
    # An op is differentiated by its rule, or through its decomposition.
    missing = [n for n in DIFF_OPS if all_ops()[n].grad is None and all_ops()[n].decompose is None]
    assert not missing, f"ops without a gradient rule or decomposition: {missing}"
    assert len(DIFF_OPS) >= 90


def _eligible(op, rng, limit=10):
    """Up to `limit` checkable samples, one per distinct attribute set first (so every mode
    of an op is covered), then the rest in order."""
    picked, rest, seen = [], [], set()
    for s in op.samples(rng):
        xs = [x for x in s.inputs if isinstance(x, np.ndarray)]
        if not any(is_float(x) for x in xs) or any(x.dtype == object for x in xs):
            continue
        if sum(x.size for x in xs if is_float(x)) > 300 or not _float_out(op, s, True):
            continue
        key = repr(sorted(s.attrs.items()))
        (rest if key in seen else picked).append(s)
        seen.add(key)
    return (picked + rest)[:limit]


@pytest.mark.parametrize("name", sorted(NOT_DIFFERENTIATED))
def test_refused_gradients_say_so(name):
    op = all_ops()[name]
    s = _eligible(op, np.random.default_rng(1))[0]
    inputs, attrs = prepare(op, s)
    mod = weighted_module(
        op, inputs, attrs, output_weights(op, inputs, attrs, np.random.default_rng(0))
    )
    with pytest.raises(RelayError, match=f"no gradient for {name}"):
        analytic_grads(mod, inputs, "first_order")


@pytest.mark.parametrize("name", [n for n in DIFF_OPS if n not in NOT_DIFFERENTIATED])
def test_gradient_matches_finite_differences(name):
    op = all_ops()[name]
    rng = np.random.default_rng(1)
    compared = 0
    for k, s in enumerate(_eligible(op, rng)):
        inputs, attrs = prepare(op, s)
        weights = output_weights(op, inputs, attrs, rng)
        out_dtypes = [w.dtype.name for w in weights if w is not None]
        if not out_dtypes or any(d in LOW_PRECISION for d in out_dtypes):
            continue  # finite differences cannot resolve a half-precision output
        if any(not np.all(np.isfinite(w)) for w in weights if w is not None):
            continue
        if any(x.dtype.name in LOW_PRECISION for x in inputs if is_float(x)):
            continue
        wide = all(d == "float64" for d in out_dtypes) and all(
            x.dtype == np.float64 for x in inputs if is_float(x)
        )
        eps, rtol, atol = (1e-6, 1e-3, 1e-5) if wide else (1e-3, 3e-2, 3e-3)
        mod = weighted_module(op, inputs, attrs, weights)
        num, smooth = numeric_grads(op, inputs, attrs, weights, eps)
        modes = ["first_order"] + (["higher_order"] if k < 2 else [])
        for mode in modes:
            got = analytic_grads(mod, inputs, mode)
            assert len(got) == len(num)
            for i, (a, b, m) in enumerate(zip(got, num, smooth)):
                assert a.shape == b.shape, f"{name} {s.attrs}: gradient {i} shape"
                np.testing.assert_allclose(
                    a[m],
                    b[m],
                    rtol=rtol,
                    atol=atol,
                    err_msg=f"{name} {s.attrs} input {i} ({mode})",
                )
                compared += int(m.sum())
    assert compared > 0, f"{name}: no sample could be checked"
