"""Expected failures kept in files: `case  reason` per line, `#` comments.

A listed case that fails is reported as xfail with its reason; a listed case that passes fails
the run (remove its line), and so does an unlisted failure, so the lists only shrink."""

from __future__ import annotations

import os
from contextlib import contextmanager

import pytest


class ExpectedFailures:
    def __init__(self, path: str):
        self.path = path
        self.items: dict[str, str] = {}
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    line = line.strip()
                    if line and not line.startswith("#"):
                        name, _, reason = line.partition(" ")
                        self.items[name] = reason.strip() or "no reason given"

    def __contains__(self, key: str) -> bool:
        return key in self.items

    @contextmanager
    def check(self, key: str):
        """Run the block; listed cases must fail, unlisted ones must pass."""
        reason = self.items.get(key)
        if reason is None:
            yield
            return
        try:
            yield
        except Exception as e:
            pytest.xfail(f"{reason} [{type(e).__name__}: {str(e)[:300]}]")
        rel = os.path.relpath(self.path)
        pytest.fail(f"{key} is listed in {rel} ({reason}) but passes now: remove its line")
