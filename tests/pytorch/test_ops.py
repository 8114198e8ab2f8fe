"""Op-level parity: every case converts (as exported and in core ATen), runs in the interpreter
and, once the LLVM backend has landed, compiled; outputs are compared with torch's own."""

from __future__ import annotations

import pytest

from .cases import ALL_CASES
from .harness import check_case

_IDS = [c.name for c in ALL_CASES]


@pytest.mark.parametrize("case", ALL_CASES, ids=_IDS)
def test_op_interpreted(case):
    check_case(case)


@pytest.mark.parametrize("case", ALL_CASES, ids=_IDS)
def test_op_compiled(case):
    check_case(case, compiled=True)
