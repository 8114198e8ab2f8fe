import os
import tempfile

import pytest


@pytest.fixture(autouse=True, scope="session")
def _fresh_build_cache():
    """Compile everything for real in tests: a private, empty build cache per session."""
    old = os.environ.get("RELAY_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="relay-test-cache-") as d:
        os.environ["RELAY_CACHE_DIR"] = d
        yield d
    if old is None:
        os.environ.pop("RELAY_CACHE_DIR", None)
    else:
        os.environ["RELAY_CACHE_DIR"] = old


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> str:
    """A private, empty cache directory for one test ($RELAY_CACHE_DIR), with no model-cache
    limit unless the test sets one."""
    d = str(tmp_path / "cache")
    monkeypatch.setenv("RELAY_CACHE_DIR", d)
    monkeypatch.delenv("RELAY_MODEL_CACHE_MB", raising=False)
    return d
