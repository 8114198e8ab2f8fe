"""Registry-driven: every operator compiled (one module per op holding all its samples) and
compared with its numpy reference on the sample inputs it declares (dtypes, size-1 and odd
shapes, broadcasting, empty tensors)."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
from relay_core.ir import Function, IRModule, TensorType, Tuple, Var, call
from relay_core.ir import dtype as dt
from relay_core.ops import all_ops
from tests.expected import ExpectedFailures

OPS = sorted(all_ops())

# Ops that do not compile yet, with the reason. The test checks that they still fail: an op
# that starts passing must be removed from here, so the list only shrinks.
EXPECTED_FAIL: dict[str, str] = {
    "image.decode": "image decoding (PNG, JPEG, ...) is left to Pillow in the interpreter",
    "memory.alloc_storage": "TVM's memory-planning form is interpreted only (the backend plans "
    "memory itself)",
    "memory.kill": "TVM's memory-planning form is interpreted only",
    "strings.concat": "string tensors are not stored by the backend",
    "strings.normalize": "string tensors are not stored by the backend",
    "strings.regex_full_match": "string tensors are not stored by the backend",
    "strings.split": "string tensors are not stored by the backend",
}

# Single samples that do not compile yet (op -> {sample index: reason}); the others of the op
# are tested, and each listed sample is checked to still fail on its own.
EXPECTED_FAIL_SAMPLES: dict[str, dict[int, str]] = {}
EXPECTED = ExpectedFailures(__file__, EXPECTED_FAIL)

# Dtypes the backend cannot store yet; samples using them are left out of the op tests, and
# test_unsupported_dtypes_still_unsupported fails once one becomes supported.
UNSUPPORTED_DTYPES = {"string"}


def _sample_dtypes(op, s) -> set:
    out = {dt.from_numpy(x.dtype) for x in s.inputs if isinstance(x, np.ndarray)}
    for k in ("dtype", "out_dtype"):
        v = s.attrs.get(k)
        if isinstance(v, str):
            out.add(v)
    return out


def _supported(op, s) -> bool:
    if not all(isinstance(x, np.ndarray) for x in s.inputs):
        return False
    if _sample_dtypes(op, s) & UNSUPPORTED_DTYPES:
        return False
    try:  # zero-point / output dtypes that only the reference knows
        r = op.ref(list(s.inputs), op.make_attrs(**s.attrs))
    except Exception:
        return False
    return not any(dt.from_numpy(x.dtype) in UNSUPPORTED_DTYPES for x in _flat(r))


def _tolerance(sample, out: np.ndarray) -> tuple[float, float]:
    rtol, atol = sample.rtol, sample.atol
    if out.dtype in (np.float16,) or dt.from_numpy(out.dtype) == "bfloat16":
        # half precision: ops decomposed by SimplifyInference round at every step
        rtol, atol = max(rtol, 1e-2), max(atol, 1e-2)
    return max(rtol, 2e-6), max(atol, 1e-6)


def _flat(v):
    if isinstance(v, tuple):
        out = []
        for x in v:
            out.extend(_flat(x))
        return out
    return [v]


def _compile_and_check(name: str, only: int | None = None) -> None:
    op = all_ops()[name]
    rng = np.random.default_rng(0)
    samples = list(op.samples(rng))
    params, outs, feeds, refs = [], [], [], []
    skip = EXPECTED_FAIL_SAMPLES.get(name, {})
    for si, s in enumerate(samples):
        if (si in skip) if only is None else si != only:
            continue
        if not _supported(op, s):
            continue
        vs = []
        for k, x in enumerate(s.inputs):
            v = Var(f"s{si}_{k}", TensorType(x.shape, dt.from_numpy(x.dtype)))
            vs.append(v)
            feeds.append(x)
        params += vs
        outs.append(call(name, *vs, **s.attrs))
        refs.append((s, op.ref(list(s.inputs), op.make_attrs(**s.attrs))))
    if not refs:
        raise AssertionError(f"{name}: no sample uses only dtypes the backend stores")
    mod = relay_core.infer_type(IRModule.from_expr(Function(tuple(params), Tuple(tuple(outs)))))
    lib = relay_core.build(mod)
    got = lib(*feeds)
    pos = 0
    for s, ref in refs:
        for r in _flat(ref):
            g = got[pos]
            pos += 1
            where = (
                f"{name} {[x.shape for x in s.inputs]} {[str(x.dtype) for x in s.inputs]} {s.attrs}"
            )
            if op.stateful:  # random: the same distribution, not numpy's numbers
                assert (g.dtype, g.shape) == (r.dtype, r.shape), where
                _check_random(name, s, g, where)
                continue
            check_output(g, r, s, where)
    assert pos == len(got)


def check_output(g, r, s, where: str) -> None:
    """A compiled output against the reference's: dtype, shape, then values (floats within the
    sample's tolerance, NaN equal to NaN; everything else exactly)."""
    assert g.dtype == r.dtype, f"{where}: dtype {g.dtype} vs {r.dtype}"
    assert g.shape == r.shape, f"{where}: shape {g.shape} vs {r.shape}"
    if r.dtype.kind in "fc" or dt.from_numpy(r.dtype) in dt.FLOAT_DTYPES:
        rtol, atol = _tolerance(s, r)
        np.testing.assert_allclose(
            g.astype(np.float64),
            r.astype(np.float64),
            rtol=rtol,
            atol=atol,
            equal_nan=True,
            err_msg=where,
        )
    else:
        np.testing.assert_array_equal(g, r, err_msg=where)


def _check_random(name, s, g, where):
    v = g.astype(np.float64)
    assert np.all(np.isfinite(v)), where
    a = s.attrs
    if "uniform" in name:
        assert np.all((v >= a.get("low", 0.0)) & (v <= a.get("high", 1.0))), where
    elif name == "random.bernoulli":
        p = s.inputs[0]
        assert np.all((v == 0) | (v == 1)), where
        assert np.all(v[p == 0] == 0) and np.all(v[p == 1] == 1), where
    elif name == "random.multinomial":
        assert np.all((v >= 0) & (v < max(s.inputs[0].shape[1], 1))), where


def test_random_distributions():
    """Seeded draws repeat; moments match the distribution; unseeded draws differ per call."""
    from relay_core.ir import Tuple as Tup

    n = 20000
    outs = [
        call("random.uniform", shape=(n,), low=-1.0, high=3.0, seed=5),
        call("random.normal", shape=(n,), mean=2.0, scale=0.5, seed=5),
        call("random.uniform", shape=(4,)),
    ]
    mod = relay_core.infer_type(IRModule.from_expr(Function((), Tup(tuple(outs)))))
    lib = relay_core.build(mod)
    u, g, fresh = lib()
    u2, g2, fresh2 = lib()
    np.testing.assert_array_equal(u, u2)
    assert not np.array_equal(fresh, fresh2)
    assert abs(u.mean() - 1.0) < 0.05 and abs(u.var() - 16 / 12) < 0.05
    assert abs(g.mean() - 2.0) < 0.02 and abs(g.std() - 0.5) < 0.02


@pytest.mark.parametrize("name", OPS)
def test_op_compiled(name):
    with EXPECTED.check(name):
        _compile_and_check(name)
    for si, why in EXPECTED_FAIL_SAMPLES.get(name, {}).items():
        with pytest.raises(Exception):  # noqa: B017 - any failure: compile error or mismatch
            _compile_and_check(name, only=si)
            pytest.fail(f"{name} sample {si} ({why}) now passes: remove it")


def test_every_lowerable_op_has_a_rule():
    from relay_core.ops.registry import OpPattern

    missing = [
        n
        for n, op in all_ops().items()
        if op.pattern <= OpPattern.COMM_REDUCE
        and op.lower is None
        and op.kernel is None
        and n not in EXPECTED_FAIL
    ]
    assert not missing, f"ops without a lowering rule: {missing}"


def test_unsupported_dtypes_still_unsupported():
    from relay_core.backend.codegen import CodegenError, storage_type

    for d in sorted(UNSUPPORTED_DTYPES):
        with pytest.raises(CodegenError):
            storage_type(d)
