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
