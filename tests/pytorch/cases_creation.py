"""Op cases: tensor creation, random tensors (compared by shape and dtype), dropout."""

from __future__ import annotations

import torch

from .harness import fn_case
from .inputs import I, R

CASES = []
add = CASES.append
A = torch.ops.aten

add(fn_case("full", lambda x: x + torch.full((3, 4), 2.5), R(3, 4), expect=("aten.full.default",)))
add(fn_case("full_int", lambda x: x + torch.full((4,), 7), I(4), expect=("aten.full.default",)))
add(
    fn_case(
        "zeros",
        lambda x: x + torch.zeros(2, 3),
        R(2, 3),
        expect=("aten.zeros.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "ones",
        lambda x: x + torch.ones(2, 3, dtype=torch.float64),
        R(2, 3),
        expect=("aten.ones.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "empty",
        lambda x: A.empty.memory_format([2, 3]).shape[0] * x,
        R(2, 3),
        expect=(),
        decomposed=False,
    )
)
add(
    fn_case(
        "empty_zeroed",
        lambda x: x + A.empty.memory_format([2, 3]).zero_(),
        R(2, 3),
        expect=("aten.empty.memory_format",),
    )
)
add(
    fn_case(
        "empty_strided",
        lambda x: x + A.empty_strided.default([2, 3], [3, 1]).fill_(1.0),
        R(2, 3),
        expect=("aten.empty_strided.default",),
    )
)
add(
    fn_case(
        "new_zeros",
        lambda x: x.new_zeros((2, 3)) + 1,
        I(2, 3),
        expect=("aten.new_zeros.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "new_ones",
        lambda x: x.new_ones((2, 3)),
        R(5),
        expect=("aten.new_ones.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "new_full",
        lambda x: x.new_full((2,), 3.0),
        R(5),
        expect=("aten.new_full.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "full_like", lambda x: torch.full_like(x, 1.5), R(2, 3), expect=("aten.full_like.default",)
    )
)
add(
    fn_case(
        "zeros_like",
        lambda x: torch.zeros_like(x, dtype=torch.int32),
        R(2, 3),
        expect=("aten.zeros_like.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "ones_like",
        lambda x: torch.ones_like(x),
        I(2, 3),
        expect=("aten.ones_like.default",),
        decomposed=False,
    )
)
add(fn_case("fill", lambda x: A.fill.Scalar(x, 4.0), R(2, 3), expect=("aten.fill.Scalar",)))
add(
    fn_case(
        "fill_tensor",
        lambda x, v: A.fill.Tensor(x, v),
        R(2, 3),
        R(),
        expect=("aten.fill.Tensor",),
        decomposed=False,
    )
)
add(
    fn_case(
        "arange",
        lambda x: x + torch.arange(4),
        R(3, 4),
        expect=("aten.arange.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "arange_step",
        lambda x: x + torch.arange(1.0, 3.0, 0.5),
        R(3, 4),
        expect=("aten.arange.start_step",),
    )
)
add(
    fn_case(
        "arange_start",
        lambda x: x * torch.arange(2, 6),
        I(4),
        expect=("aten.arange.start",),
        decomposed=False,
    )
)
add(
    fn_case(
        "linspace",
        lambda x: x + torch.linspace(-1, 2, 7),
        R(7),
        expect=("aten.linspace.default",),
        decomposed=False,
    )
)
add(
    fn_case("eye", lambda x: x + torch.eye(3, 4), R(3, 4), expect=("aten.eye.m",), decomposed=False)
)
add(
    fn_case(
        "tril", lambda x: torch.tril(x, 1), R(4, 5), expect=("aten.tril.default",), decomposed=False
    )
)
add(
    fn_case(
        "triu",
        lambda x: torch.triu(x, -1),
        R(2, 4, 5),
        expect=("aten.triu.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "scalar_tensor",
        lambda x: x + A.scalar_tensor.default(3.0),
        R(3),
        expect=("aten.scalar_tensor.default",),
    )
)
# random: compared by shape and dtype
add(
    fn_case(
        "rand",
        lambda x: torch.rand(3, 4) + x,
        R(3, 4),
        expect=("aten.rand.default",),
        compare="shape",
    )
)
add(
    fn_case(
        "randn",
        lambda x: torch.randn(3, 4, dtype=torch.float64),
        R(1),
        expect=("aten.randn.default",),
        compare="shape",
    )
)
add(
    fn_case(
        "rand_like",
        lambda x: torch.rand_like(x),
        R(3, 4),
        expect=("aten.rand_like.default",),
        compare="shape",
        decomposed=False,
    )
)
add(
    fn_case(
        "randn_like",
        lambda x: torch.randn_like(x),
        R(3, 4),
        expect=("aten.randn_like.default",),
        compare="shape",
        decomposed=False,
    )
)
add(
    fn_case(
        "randperm",
        lambda x: torch.randperm(6) + x * 0,
        I(6),
        expect=("aten.randperm.default",),
        compare="sorted",
    )
)
add(
    fn_case(
        "randint",
        lambda x: torch.randint(0, 5, (3, 2)),
        R(1),
        expect=("aten.randint.low",),
        compare="shape",
        decomposed=False,
    )
)
add(
    fn_case(
        "bernoulli",
        lambda x: torch.bernoulli(x),
        R(3, 4, lo=0, hi=1),
        expect=("aten.bernoulli.default",),
        compare="shape",
        decomposed=False,
    )
)
