"""Every op with a kernel, on every sample its OpDef declares, against the OpDef's numpy ref
(with and without constant weights, 1 and 2 threads)."""

from __future__ import annotations

import numpy as np
import pytest

from relay_core.ir import TensorType, TupleType
from relay_core.ir import dtype as dt
from relay_core.ops import all_ops
from tools.kernel_jit import KernelModule

OPS = sorted(n for n, op in all_ops().items() if op.kernel is not None)


def _flat(t):
    return list(t.fields) if isinstance(t, TupleType) else [t]


def test_every_declared_kernel_resolves():
    for name in OPS:
        assert callable(all_ops()[name].kernel.resolve()), name


@pytest.mark.parametrize("name", OPS)
def test_kernel_matches_ref(name):
    op = all_ops()[name]
    rng = np.random.default_rng(0)
    km = KernelModule()
    runs = []
    for k, s in enumerate(op.samples(rng)):
        attrs = op.make_attrs(**s.attrs)
        in_types = [TensorType(x.shape, dt.from_numpy(x.dtype)) for x in s.inputs]
        out_types = _flat(op.type_rel(in_types, attrs))
        for const in ((), (1,)) if len(s.inputs) > 1 else ((),):
            try:
                kern = km.add(op.kernel, in_types, out_types, attrs, None, const)
            except NotImplementedError:
                continue
            runs.append((kern, s, attrs, 1 + (k % 2)))
    assert runs, f"{name}: no sample is supported by the kernel"
    km.compile()
    for kern, s, attrs, nt in runs:
        want = op.ref([np.asarray(x) for x in s.inputs], attrs)
        want = list(want) if isinstance(want, tuple) else [want]
        got = kern(*s.inputs, nthreads=nt)
        for g, w in zip(got, want):
            where = (
                f"{name} {[x.shape for x in s.inputs]} {s.attrs} const={kern.info.prepack.keys()}"
            )
            assert g.shape == w.shape and g.dtype == w.dtype, where
            if w.dtype.kind in "iub":
                np.testing.assert_array_equal(g, w, err_msg=where)
            else:
                gf, wf = g.astype(np.float64), w.astype(np.float64)
                tol = max(s.rtol, 1e-5) if w.dtype != np.float16 else 1e-2
                np.testing.assert_allclose(gf, wf, rtol=tol, atol=max(s.atol, tol), err_msg=where)
