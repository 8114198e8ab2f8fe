"""Op cases: reductions, scans, softmax, norms, ordering."""

from __future__ import annotations

import torch

from .harness import fn_case
from .inputs import B, I, R

CASES = []
add = CASES.append
A = torch.ops.aten

add(fn_case("sum_dim", lambda x: x.sum(1), R(3, 4, 5), expect=("aten.sum.dim_IntList",)))
add(
    fn_case(
        "sum_keep",
        lambda x: x.sum((0, 2), keepdim=True),
        R(3, 4, 5),
        expect=("aten.sum.dim_IntList",),
    )
)
add(fn_case("sum_all", lambda x: x.sum(), R(3, 4), expect=("aten.sum.default",), decomposed=False))
add(
    fn_case(
        "sum_int", lambda x: x.sum(0), I(3, 4, dtype=torch.int32), expect=("aten.sum.dim_IntList",)
    )
)
add(fn_case("sum_bool", lambda x: x.sum(-1), B(3, 4), expect=("aten.sum.dim_IntList",)))
add(
    fn_case(
        "sum_dtype",
        lambda x: x.sum(0, dtype=torch.float64),
        R(3, 4),
        expect=("aten.sum.dim_IntList",),
    )
)
add(fn_case("mean_dim", lambda x: x.mean(-1), R(3, 4, 5), expect=("aten.mean.dim",)))
add(
    fn_case(
        "mean_all", lambda x: x.mean(), R(3, 4), expect=("aten.mean.default",), decomposed=False
    )
)
add(
    fn_case("prod_dim", lambda x: x.prod(1), R(3, 4, lo=0.5, hi=1.5), expect=("aten.prod.dim_int",))
)
add(fn_case("prod_all", lambda x: x.prod(), R(3, 4, lo=0.5, hi=1.5), expect=("aten.prod.default",)))
add(fn_case("amax", lambda x: x.amax((0, 2)), R(3, 4, 5), expect=("aten.amax.default",)))
add(fn_case("amin", lambda x: x.amin(1, keepdim=True), R(3, 4, 5), expect=("aten.amin.default",)))
add(fn_case("max_all", lambda x: x.max(), R(3, 4), expect=("aten.max.default",)))
add(fn_case("min_all", lambda x: x.min(), R(3, 4), expect=("aten.min.default",)))
add(fn_case("max_dim", lambda x: x.max(1), R(3, 4, 5), expect=("aten.max.dim",)))
add(fn_case("min_dim", lambda x: x.min(0, keepdim=True), R(3, 4), expect=("aten.min.dim",)))
add(
    fn_case(
        "max_other",
        lambda x, y: torch.max(x, y),
        R(3, 4),
        R(4),
        expect=("aten.max.other",),
        decomposed=False,
    )
)
add(
    fn_case(
        "min_other",
        lambda x, y: torch.min(x, y),
        R(3, 4),
        R(4),
        expect=("aten.min.other",),
        decomposed=False,
    )
)
add(fn_case("any_all", lambda x: x.any(), B(3, 4), expect=("aten.any.default",)))
add(fn_case("any_dim", lambda x: x.any(1), R(3, 4).round(), expect=("aten.any.dim",)))
add(fn_case("any_dims", lambda x: x.any((0, 1)), B(2, 3, 4), expect=("aten.any.dims",)))
add(fn_case("all_dim", lambda x: x.all(1), B(3, 4), expect=("aten.all.dim",), decomposed=False))
add(fn_case("all_all", lambda x: x.all(), B(3, 4), expect=("aten.all.default",), decomposed=False))
add(fn_case("var", lambda x: x.var(1), R(3, 6), expect=("aten.var.correction",)))
add(
    fn_case(
        "var_biased",
        lambda x: x.var((0, 1), unbiased=False),
        R(3, 6),
        expect=("aten.var.correction",),
    )
)
add(
    fn_case(
        "var_dim",
        lambda x: A.var.dim(x, [1], True, True),
        R(3, 6),
        expect=("aten.var.dim",),
        decomposed=False,
    )
)
add(
    fn_case(
        "std", lambda x: x.std(0, keepdim=True), R(4, 6), expect=("aten.std.dim",), decomposed=False
    )
)
add(fn_case("argmax", lambda x: x.argmax(1), R(3, 5), expect=("aten.argmax.default",)))
add(fn_case("argmax_flat", lambda x: x.argmax(), R(3, 5), expect=("aten.argmax.default",)))
add(
    fn_case(
        "argmin_keep", lambda x: x.argmin(0, keepdim=True), R(3, 5), expect=("aten.argmin.default",)
    )
)
add(
    fn_case(
        "logsumexp",
        lambda x: torch.logsumexp(x, 1),
        R(3, 5),
        expect=("aten.logsumexp.default",),
        decomposed=False,
    )
)
add(fn_case("cumsum", lambda x: torch.cumsum(x, 1), R(3, 5), expect=("aten.cumsum.default",)))
add(
    fn_case(
        "cumsum_int",
        lambda x: torch.cumsum(x, 0),
        I(4, 2, dtype=torch.int32),
        expect=("aten.cumsum.default",),
    )
)
add(
    fn_case(
        "cumprod",
        lambda x: torch.cumprod(x, -1),
        R(3, 5, lo=0.5, hi=1.5),
        expect=("aten.cumprod.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "softmax",
        lambda x: torch.softmax(x, -1),
        R(3, 5, lo=-5, hi=5),
        expect=("aten.softmax.int", "aten._softmax.default"),
    )
)
add(
    fn_case(
        "softmax_dim0", lambda x: torch.softmax(x, 0), R(3, 5), expect=("aten._softmax.default",)
    )
)
add(
    fn_case(
        "log_softmax",
        lambda x: torch.log_softmax(x, 1),
        R(3, 5, lo=-5, hi=5),
        expect=("aten.log_softmax.int", "aten._log_softmax.default"),
    )
)
add(
    fn_case(
        "vector_norm",
        lambda x: torch.linalg.vector_norm(x, dim=1),
        R(3, 5),
        expect=("aten.linalg_vector_norm.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "vector_norm_p",
        lambda x: torch.linalg.vector_norm(x, 3, dim=0),
        R(3, 5),
        expect=("aten.linalg_vector_norm.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "vector_norm_inf",
        lambda x: torch.linalg.vector_norm(x, float("inf")),
        R(3, 5),
        expect=("aten.linalg_vector_norm.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "vector_norm_1",
        lambda x: torch.linalg.vector_norm(x, 1, dim=(0, 1)),
        R(3, 5),
        expect=("aten.linalg_vector_norm.default",),
        decomposed=False,
    )
)
add(fn_case("sort", lambda x: torch.sort(x, 1), R(3, 6), expect=("aten.sort.default",)))
add(
    fn_case(
        "sort_desc",
        lambda x: torch.sort(x, 0, descending=True),
        R(4, 3),
        expect=("aten.sort.default",),
    )
)
add(
    fn_case(
        "sort_stable",
        lambda x: torch.sort(x, stable=True),
        I(3, 8, lo=0, hi=3).float(),
        expect=("aten.sort.stable",),
        decomposed=False,
    )
)
add(
    fn_case(
        "argsort",
        lambda x: torch.argsort(x, 1, descending=True),
        R(3, 6),
        expect=("aten.argsort.default",),
        decomposed=False,
    )
)
add(fn_case("topk", lambda x: torch.topk(x, 3), R(4, 7), expect=("aten.topk.default",)))
add(
    fn_case(
        "topk_smallest",
        lambda x: torch.topk(x, 2, dim=0, largest=False),
        R(4, 7),
        expect=("aten.topk.default",),
    )
)
add(
    fn_case(
        "kthvalue",
        lambda x: torch.kthvalue(x, 2, 1),
        R(3, 5),
        expect=("aten.kthvalue.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "median_dim",
        lambda x: torch.median(x, 1),
        R(3, 5),
        expect=("aten.median.dim",),
        decomposed=False,
    )
)
add(
    fn_case(
        "median",
        lambda x: torch.median(x),
        R(3, 5),
        expect=("aten.median.default",),
        decomposed=False,
    )
)
