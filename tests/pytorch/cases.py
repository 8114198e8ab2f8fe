"""Every op case, by family."""

from __future__ import annotations

from . import cases_elemwise

ALL_CASES = [*cases_elemwise.CASES]

names = [c.name for c in ALL_CASES]
assert len(names) == len(set(names)), "duplicate case names"
