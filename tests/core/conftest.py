"""Each test draws its random inputs from a stream seeded by its own id, so what it sees does
not depend on which tests ran before it in the same worker (pytest-xdist reorders them)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _seed_shared_rng(request):
    try:
        from .nn_oracles import RNG
    except Exception:  # the oracles need torch / onnxruntime; tests without them do not use RNG
        yield
        return
    RNG.bit_generator.state = np.random.PCG64(zlib.crc32(request.node.nodeid.encode())).state
    yield
