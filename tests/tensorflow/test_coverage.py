"""Every TF op with a converter has an op-level parity test (a case that puts it in a frozen
graph and compares with TF), and the count of covered ops does not shrink silently."""

from __future__ import annotations

from converters.tensorflow import supported_ops

from . import (
    test_control_flow,
    test_ops_array,
    test_ops_image,
    test_ops_index,
    test_ops_math,
    test_ops_misc,
    test_ops_nn,
)

# Ops exercised by dedicated tests rather than Case tables (test names in comments).
OTHER_TESTS = {
    "Const",  # in nearly every case
    "PartitionedCall",
    "StatefulPartitionedCall",  # test_partitioned_call_becomes_a_global_...
    "Placeholder",  # handled by the driver
}


def covered() -> set[str]:
    ops = set(OTHER_TESTS)
    for mod in (
        test_ops_misc,
        test_ops_math,
        test_ops_array,
        test_ops_index,
        test_ops_nn,
        test_ops_image,
        test_control_flow,
    ):
        for name in ("CASES", "LIST_CASES"):
            for case in getattr(mod, name, []):
                for op in case.ops:
                    ops.update(op.split("|"))
    return ops


def test_every_converter_has_a_parity_test():
    missing = sorted(set(supported_ops()) - covered())
    assert not missing, f"converters without an op-level test: {missing}"
