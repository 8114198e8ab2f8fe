"""Registry-driven: the tensor-expression rule of every elementwise and broadcast op, evaluated
by the TE evaluator (numpy, no compiler), against the op's numpy reference on its samples."""

from __future__ import annotations

import numpy as np
import pytest

from relay_core import te
from relay_core.ir import TensorType
from relay_core.ops import all_ops
from relay_core.ops.registry import OpPattern
from relay_core.te.lowering import rule_of


def _float32_samples(opdef):
    """Samples with float32 inputs and a float32 result (int, bool and dtype-changing samples
    are compiled in tests/backend/test_ops_compiled.py)."""
    rng = np.random.default_rng(0)
    for s in opdef.samples(rng):
        if not all(isinstance(x, np.ndarray) and x.dtype == np.float32 for x in s.inputs):
            continue
        attrs = opdef.make_attrs(**s.attrs)
        out_t = opdef.type_rel([TensorType(x.shape, "float32") for x in s.inputs], attrs)
        if isinstance(out_t, TensorType) and out_t.dtype == "float32":
            yield s, attrs, out_t


OPS = sorted(
    n
    for n, d in all_ops().items()
    if d.pattern <= OpPattern.BROADCAST
    and rule_of(d) is not None
    and d.samples is not None
    and any(True for _ in _float32_samples(d))
)


@pytest.mark.parametrize("name", OPS)
def test_rule_matches_reference(name):
    opdef = all_ops()[name]
    rule = rule_of(opdef)
    for s, attrs, out_t in _float32_samples(opdef):
        want = opdef.ref(s.inputs, attrs)
        holders = [te.placeholder(x.shape, "float32", f"in{i}") for i, x in enumerate(s.inputs)]
        got = te.evaluate(rule(holders, attrs, out_t), dict(zip(holders, s.inputs)))
        np.testing.assert_allclose(got, want, rtol=max(s.rtol, 1e-5), atol=max(s.atol, 1e-6))


def test_the_list_is_not_empty():
    assert {"add", "exp", "erfinv", "sigmoid"} <= set(OPS)
