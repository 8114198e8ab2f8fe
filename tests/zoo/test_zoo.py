"""The outside-model zoo as tests: each model converted, compiled with its batch unknown, run
at two batch sizes and compared with its framework (tests/zoo/runner.py). Failures are listed
with their reasons in expected_failures.txt. The cheap subset runs with the slow tests; the
rest only under `make zoo` (marker `zoo`)."""

from __future__ import annotations

import os

import pytest

from tests.expected import ExpectedFailures
from tests.require import require

from .catalog import catalog
from .runner import run_model

EXPECTED = ExpectedFailures(os.path.join(os.path.dirname(__file__), "expected_failures.txt"))


def _param(m):
    marks = [pytest.mark.slow] + ([] if m.cheap else [pytest.mark.zoo])
    return pytest.param(m, id=m.id, marks=marks)


@pytest.mark.parametrize("model", [_param(m) for m in catalog()])
def test_zoo(model):
    if model.family == "transformers":
        require("transformers")
    if model.family == "keras" or model.frontend == "keras":
        require("keras")
    r = run_model(model)
    with EXPECTED.check(model.id):
        assert r.status == "pass", r.error
