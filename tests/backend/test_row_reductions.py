"""Row reductions (schedule_rows.row_reductions): a sum over a middle axis whose output's last axis
walks the input contiguously (a mean over NCHW channels, a channel LayerNorm) is computed one row
of accumulators at a time. Compiled against numpy, with a known and an unknown batch, on one and
two threads; each case checks whether the row path was taken (a reduction over the innermost
axis, a max, or a strided row must not take it)."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
from relay_core.backend import schedule, schedule_rows

RNG = np.random.default_rng(5)


@pytest.fixture
def rows(monkeypatch):
    """For each stage compiled in the test: whether it was computed as row reductions."""
    taken = []
    orig = schedule.row_reductions

    def spy(*args):
        r = orig(*args)
        taken.append(r is not None)
        return r

    monkeypatch.setattr(schedule, "row_reductions", spy)
    return taken


def _ln(x):
    mu = x.mean(1, keepdims=True)
    d = x - mu
    return d / np.sqrt((d * d).mean(1, keepdims=True) + 1e-6)


LN = """
  %0 = mean(%x, axis=[1], keepdims=True);
  %1 = subtract(%x, %0);
  %2 = mean(multiply(%1, %1), axis=[1], keepdims=True);
  multiply(%1, rsqrt(add(%2, 1e-6f)))"""

CASES = {
    # name: (relay body, numpy reference, whether the row path applies)
    "mean_channels": (
        "mean(%x, axis=[1], keepdims=True)",
        lambda x: x.mean(1, keepdims=True),
        True,
    ),
    "sum_two_axes": ("sum(%x, axis=[1, 2])", lambda x: x.sum((1, 2)), True),
    "layer_norm_channels": (LN, _ln, True),
    "mean_relu_epilogue": ("nn.relu(mean(%x, axis=[1]))", lambda x: np.maximum(x.mean(1), 0), True),
    "max_channels": ("max(%x, axis=[1])", lambda x: x.max(1), False),
    "mean_last_axis": (
        "mean(%x, axis=[3], keepdims=True)",
        lambda x: x.mean(3, keepdims=True),
        False,
    ),
    # the output's last axis (H) walks the input with a stride of W: not contiguous
    "sum_over_w": ("sum(%x, axis=[3])", lambda x: x.sum(3), False),
}


def _build(body: str, shape, nthreads: int):
    dims = ", ".join(str(d) for d in shape)
    mod = relay_core.parse(f"def @main(%x: Tensor[({dims}), float32]) {{ {body} }}")
    return relay_core.build(mod, num_threads=nthreads, cache=False)


@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("case", sorted(CASES))
def test_row_reductions_match_numpy(case, nthreads, rows):
    body, ref, applies = CASES[case]
    x = (RNG.standard_normal((3, 24, 5, 37)) * 2 + 1).astype(np.float32)
    got = _build(body, x.shape, nthreads)(x)[0]
    np.testing.assert_allclose(np.asarray(got), ref(x.astype(np.float64)), rtol=2e-5, atol=2e-5)
    assert any(rows) == applies, rows


@pytest.mark.parametrize("case", ["layer_norm_channels", "sum_two_axes"])
def test_row_reductions_with_an_unknown_batch(case, rows):
    body, ref, _ = CASES[case]
    lib = _build(body, ("?", 16, 4, 9), 2)
    assert any(rows)
    for n in (1, 3, 8):
        x = RNG.standard_normal((n, 16, 4, 9)).astype(np.float32)
        np.testing.assert_allclose(
            np.asarray(lib(x)[0]), ref(x.astype(np.float64)), rtol=2e-5, atol=2e-5
        )


def test_rows_longer_than_the_limit_take_the_element_path(rows, monkeypatch):
    monkeypatch.setattr(schedule_rows, "ROW_ACC_MAX", 16)
    x = RNG.standard_normal((2, 8, 3, 37)).astype(np.float32)
    got = _build("mean(%x, axis=[1])", x.shape, 2)(x)[0]
    np.testing.assert_allclose(np.asarray(got), x.mean(1), rtol=1e-5, atol=1e-6)
    assert not any(rows)
