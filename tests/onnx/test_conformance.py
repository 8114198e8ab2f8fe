"""ONNX's own conformance cases, converted and run with the interpreter.

One pytest case per node test case (generated in memory by onnx, ~10 s to collect), per data
folder case (`simple`, `pytorch-converted`, `pytorch-operator`) and per `light` model. Each is
convert -> typecheck -> evaluate, compared with the stored outputs at the case's tolerances.

tests/onnx/expected_failures.txt lists the cases that fail, one per line with the reason: an
unlisted failure fails the run, and so does a listed case that passes (remove its line).
"""

from __future__ import annotations

import os

import pytest

from tests.require import require

require("onnx")

from tests.expected import ExpectedFailures  # noqa: E402
from tools.onnx_conformance import folder_cases, light_cases, node_cases, run_case  # noqa: E402

HERE = os.path.dirname(__file__)
EXPECTED = ExpectedFailures(os.path.join(HERE, "expected_failures.txt"))
# Cases that take seconds in the interpreter (convolution-heavy real models).
SLOW = {
    "light/vgg19",
    "light/densenet121",
    "light/zfnet512",
    "light/bvlc_alexnet",
    "light/inception_v2",
    "light/resnet50",
    "light/inception_v1",
}
FOLDERS = ("simple", "pytorch-converted", "pytorch-operator")


def _params(names, prefix=""):
    return [pytest.param(n, marks=pytest.mark.slow) if prefix + n in SLOW else n for n in names]


def _check(case, key: str) -> None:
    with EXPECTED.check(key):
        run_case(case)


@pytest.mark.parametrize("name", _params(sorted(node_cases())))
def test_node_case(name):
    _check(node_cases()[name], name)


@pytest.mark.parametrize("key", [f"{k}/{n}" for k in FOLDERS for n in sorted(folder_cases(k))])
def test_data_folder_case(key):
    kind, name = key.split("/", 1)
    _check(folder_cases(kind)[name], key)


@pytest.mark.parametrize("name", _params(sorted(light_cases()), "light/"))
def test_light_model(name):
    _check(light_cases()[name], f"light/{name}")


def test_expected_failures_name_real_cases():
    known = (
        set(node_cases())
        | {f"light/{n}" for n in light_cases()}
        | {f"{k}/{n}" for k in FOLDERS for n in folder_cases(k)}
    )
    stale = EXPECTED.unknown(known)
    assert not stale, f"expected_failures.txt names unknown cases: {stale}"
