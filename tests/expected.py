"""Expected failures kept in files: `case  reason` per line, `#` comments.

A listed case that fails is reported as xfail with its reason; a listed case that passes fails
the run (remove its line), and so does an unlisted failure, so the lists only shrink."""

from __future__ import annotations

import os
from contextlib import contextmanager

import pytest


class ExpectedFailures:
    """The one expected-failures mechanism of the test suite: a file, or a dict in the test
    module (`path` then names where it lives, for the messages)."""

    def __init__(self, path: str, items: dict[str, str] | None = None):
        self.path = path
        self.items: dict[str, str] = dict(items or {})
        if items is None and os.path.exists(path):
            with open(path) as f:
                for line in f:
                    line = line.strip()
                    if line and not line.startswith("#"):
                        name, _, reason = line.partition(" ")
                        self.items[name] = reason.strip() or "no reason given"

    def __contains__(self, key: str) -> bool:
        return key in self.items

    def get(self, key: str) -> str | None:
        return self.items.get(key)

    def unknown(self, known) -> list[str]:
        """Listed names that are not among `known` cases (a stale list)."""
        return sorted(set(self.items) - set(known))

    @contextmanager
    def check(self, key: str, also: ExpectedFailures | None = None):
        """Run the block; listed cases must fail, unlisted ones must pass. A case listed only
        in `also` (another stage's list: the interpreter's, for compiled runs) may fail for the
        reason given there, and passing is no error."""
        reason = self.items.get(key)
        excused = None if also is None else also.get(key)
        if reason is None and excused is None:
            yield
            return
        try:
            yield
        except Exception as e:
            pytest.xfail(f"{reason or excused} [{type(e).__name__}: {str(e)[:300]}]")
        if reason is None:
            return
        rel = os.path.relpath(self.path)
        pytest.fail(f"{key} is listed in {rel} ({reason}) but passes now: remove its line")
