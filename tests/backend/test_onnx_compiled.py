"""ONNX's conformance node cases compiled by the backend (relay_core.build) instead of
interpreted: convert -> build -> run -> compare with the stored outputs.

All ~1900 node cases take minutes (one native build each), so they are marked slow; a fixed
sample of cases covering the op families (including control flow and dynamic shapes) always
runs. tests/backend/onnx_compiled_expected_failures.txt lists the cases that do not compile
or differ, with the reason: an unlisted failure fails the run, and so does a listed case that
passes (remove its line), so the list only shrinks.
"""

from __future__ import annotations

import os

import pytest

from tests.require import require

require("onnx")

from tests.expected import ExpectedFailures  # noqa: E402
from tools.onnx_conformance import folder_cases, light_cases, node_cases, run_case  # noqa: E402

HERE = os.path.dirname(__file__)
EXPECTED = ExpectedFailures(os.path.join(HERE, "onnx_compiled_expected_failures.txt"))
# The interpreter's own expected failures may fail here for the same reasons.
EXPECTED_INTERP = ExpectedFailures(os.path.join(HERE, "..", "onnx", "expected_failures.txt"))

# Always run: a spread over the families, control flow, sequences and dynamic shapes.
QUICK = [
    "test_add_bcast",
    "test_relu",
    "test_gemm_default_single_elem_vector_bias",
    "test_conv_with_strides_and_asymmetric_padding",
    "test_convtranspose_pads",
    "test_maxpool_2d_ceil",
    "test_averagepool_2d_pads_count_include_pad",
    "test_batchnorm_epsilon",
    "test_layer_normalization_4d_axis1",
    "test_softmax_axis_0",
    "test_reduce_log_sum_exp_keepdims_random",
    "test_argmax_negative_axis_keepdims_example_select_last_index",
    "test_gather_elements_negative_indices",
    "test_scatter_elements_with_reduction_max",
    "test_slice_neg_steps",
    "test_resize_upsample_scales_cubic",
    "test_lstm_with_peepholes",
    "test_gru_seq_length",
    "test_loop11",
    "test_if_seq",
    "test_scan9_sum",
    "test_range_float_type_positive_delta_expanded",
    "test_nonzero_example",
    "test_top_k_negative_axis",
    "test_sequence_map_add_2_sequences",
    "test_optional_get_element_sequence",
    "test_einsum_batch_matmul",
    "test_cumsum_2d_axis_1",
    "test_dft",
    "test_cast_FLOAT_to_FLOAT8E4M3FN",
    "test_qlinearmatmul_2D_uint8_float32",
    "test_where_long_example",
]


def _check(name: str, case=None) -> None:
    with EXPECTED.check(name, also=EXPECTED_INTERP):
        run_case(case if case is not None else node_cases()[name], compiled=True)


@pytest.mark.parametrize("name", QUICK)
def test_quick_case(name):
    _check(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(n for n in node_cases() if n not in QUICK))
def test_node_case_compiled(name):
    _check(name)


FOLDERS = ("simple", "pytorch-converted", "pytorch-operator")


@pytest.mark.parametrize("key", [f"{k}/{n}" for k in FOLDERS for n in sorted(folder_cases(k))])
def test_data_folder_case_compiled(key):
    kind, name = key.split("/", 1)
    _check(key, folder_cases(kind)[name])


# The real models of onnx's `light` set (AlexNet, DenseNet-121, Inception v1/v2, ResNet-50,
# ShuffleNet, SqueezeNet, VGG-19, ZFNet-512), compiled: slow (one full build each).
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(light_cases()))
def test_light_model_compiled(name):
    _check(f"light/{name}", light_cases()[name])


def test_expected_failures_name_real_cases():
    known = (
        set(node_cases())
        | {f"light/{n}" for n in light_cases()}
        | {f"{k}/{n}" for k in FOLDERS for n in folder_cases(k)}
    )
    stale = EXPECTED.unknown(known)
    assert not stale, f"onnx_compiled_expected_failures.txt names unknown cases: {stale}"
    assert set(QUICK) <= set(node_cases())
