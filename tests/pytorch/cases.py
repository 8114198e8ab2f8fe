"""Every op case, by family."""

from __future__ import annotations

from . import (
    cases_activation,
    cases_backward,
    cases_creation,
    cases_direct,
    cases_elemwise,
    cases_index,
    cases_inplace,
    cases_nn,
    cases_pool,
    cases_reduce,
    cases_shape,
)

ALL_CASES = [
    *cases_elemwise.CASES,
    *cases_shape.CASES,
    *cases_reduce.CASES,
    *cases_index.CASES,
    *cases_inplace.CASES,
    *cases_creation.CASES,
    *cases_nn.CASES,
    *cases_pool.CASES,
    *cases_activation.CASES,
    *cases_direct.CASES,
    *cases_backward.CASES,
]

names = [c.name for c in ALL_CASES]
assert len(names) == len(set(names)), "duplicate case names"
