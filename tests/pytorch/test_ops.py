"""Op-level parity: every case converts (as exported and in core ATen), runs in the interpreter
and, once the LLVM backend has landed, compiled; outputs are compared with torch's own."""

from __future__ import annotations

import pytest

from .cases import ALL_CASES
from .harness import check_case

_IDS = [c.name for c in ALL_CASES]


@pytest.mark.parametrize("case", ALL_CASES, ids=_IDS)
def test_op(case):
    # One export and conversion per form, checked in the interpreter and compiled.
    check_case(case)
