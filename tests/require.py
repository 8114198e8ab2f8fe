"""Frameworks the suite needs: a missing one fails the run with what to install, never a skip."""

from __future__ import annotations

import importlib

import pytest


def require(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as e:
        pytest.fail(
            f"{name} is needed by this test: pip install -e '.[all,dev]' ({e})", pytrace=False
        )
