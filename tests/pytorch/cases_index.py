"""Op cases: indexing, gather / scatter, masks, distances."""

from __future__ import annotations

import torch

from .harness import fn_case
from .inputs import B, I, R

CASES = []
add = CASES.append
A = torch.ops.aten

add(
    fn_case("index_1", lambda x, i: x[i], R(5, 3), I(4, lo=-5, hi=4), expect=("aten.index.Tensor",))
)
add(
    fn_case(
        "index_2d",
        lambda x, i, j: x[i, j],
        R(5, 3, 2),
        I(2, 4, lo=0, hi=4),
        I(4, lo=0, hi=2),
        expect=("aten.index.Tensor",),
    )
)
add(
    fn_case(
        "index_mid",
        lambda x, i: x[:, i],
        R(5, 3, 2),
        I(2, 2, lo=0, hi=2),
        expect=("aten.index.Tensor",),
    )
)
add(
    fn_case(
        "index_gap",
        lambda x, i, j: x[i, :, j],
        R(5, 3, 2),
        I(4, lo=0, hi=4),
        I(4, lo=0, hi=1),
        expect=("aten.index.Tensor",),
    )
)
add(fn_case("index_bool", lambda x, m: x[m], R(4, 3), B(4, 3), expect=("aten.index.Tensor",)))
add(fn_case("index_bool_rows", lambda x, m: x[m], R(4, 3), B(4), expect=("aten.index.Tensor",)))
add(
    fn_case(
        "index_put",
        lambda x, i, v: A.index_put.default(x, [i], v),
        R(5, 3),
        torch.tensor([4, 0, 2]),
        R(3, 3),
        expect=("aten.index_put.default",),
    )
)
add(
    fn_case(
        "index_put_acc",
        lambda x, i, v: A.index_put.default(x, [i], v, True),
        R(5, 3),
        torch.tensor([1, 1, 3]),
        R(3, 3),
        expect=("aten.index_put.default",),
    )
)
add(
    fn_case(
        "index_put_mid",
        lambda x, i, v: A.index_put.default(x, [None, i], v),
        R(2, 5, 3),
        torch.tensor([4, 0]),
        R(3),
        expect=("aten.index_put.default",),
    )
)
add(
    fn_case(
        "index_put_bool",
        lambda x, m: A.index_put.default(x, [m], torch.tensor(0.0)),
        R(4, 3),
        B(4, 3),
        expect=("aten.index_put.default",),
    )
)
add(
    fn_case(
        "index_select",
        lambda x, i: torch.index_select(x, 1, i),
        R(3, 5),
        I(4, lo=0, hi=4),
        expect=("aten.index_select.default",),
    )
)
add(
    fn_case(
        "gather",
        lambda x, i: torch.gather(x, 1, i),
        R(3, 5),
        I(3, 2, lo=0, hi=4),
        expect=("aten.gather.default",),
    )
)
add(
    fn_case(
        "take_along_dim",
        lambda x, i: torch.take_along_dim(x, i, 1),
        R(3, 5),
        I(3, 2, lo=0, hi=4),
        expect=("aten.take_along_dim.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "scatter_src",
        lambda x, i, s: torch.scatter(x, 1, i, s),
        R(3, 5),
        torch.tensor([[0, 4], [1, 2], [3, 0]]),
        R(3, 3),
        expect=("aten.scatter.src",),
    )
)
add(
    fn_case(
        "scatter_value",
        lambda x, i: torch.scatter(x, 0, i, 2.5),
        R(3, 5),
        torch.tensor([[0, 2, 1]]),
        expect=("aten.scatter.value",),
    )
)
add(
    fn_case(
        "scatter_reduce_legacy",
        lambda x, i, s: torch.scatter(x, 1, i, s, reduce="add"),
        R(3, 5),
        torch.tensor([[0, 0], [1, 2], [3, 3]]),
        R(3, 2),
        expect=("aten.scatter.reduce",),
        decomposed=False,
    )
)
add(
    fn_case(
        "scatter_add",
        lambda x, i, s: torch.scatter_add(x, 1, i, s),
        R(3, 5),
        torch.tensor([[0, 0], [1, 2], [4, 4]]),
        R(3, 2),
        expect=("aten.scatter_add.default",),
    )
)
for _red in ("sum", "prod", "mean", "amax", "amin"):
    for _inc in (True, False):
        add(
            fn_case(
                f"scatter_reduce_{_red}_{_inc}",
                (
                    lambda r, inc: (
                        lambda x, i, s: torch.scatter_reduce(x, 1, i, s, r, include_self=inc)
                    )
                )(_red, _inc),
                R(3, 5),
                torch.tensor([[0, 0, 2], [1, 2, 1], [4, 4, 4]]),
                R(3, 3),
                expect=("aten.scatter_reduce.two",),
            )
        )
add(
    fn_case(
        "embedding",
        lambda w, i: torch.nn.functional.embedding(i, w),
        R(10, 4),
        I(2, 3, lo=0, hi=9),
        expect=("aten.embedding.default",),
    )
)
add(
    fn_case(
        "masked_fill",
        lambda x, m: x.masked_fill(m, -1.0),
        R(3, 4),
        B(4),
        expect=("aten.masked_fill.Scalar",),
        decomposed=False,
    )
)
add(
    fn_case(
        "masked_fill_t",
        lambda x, m, v: x.masked_fill(m, v),
        R(3, 4),
        B(3, 4),
        R(),
        expect=("aten.masked_fill.Tensor",),
        decomposed=False,
    )
)
add(
    fn_case(
        "masked_scatter",
        lambda x, m, s: x.masked_scatter(m, s),
        R(3, 4),
        B(3, 4),
        R(12),
        expect=("aten.masked_scatter.default",),
    )
)
add(
    fn_case(
        "masked_select",
        lambda x, m: torch.masked_select(x, m),
        R(3, 4),
        B(4),
        expect=("aten.masked_select.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "nonzero", lambda x: torch.nonzero(x), R(3, 4).round(), expect=("aten.nonzero.default",)
    )
)
add(
    fn_case(
        "slice_scatter",
        lambda x, s: torch.slice_scatter(x, s, 1, 1, 5, 2),
        R(3, 6),
        R(3, 2),
        expect=("aten.slice_scatter.default",),
    )
)
add(
    fn_case(
        "select_scatter",
        lambda x, s: torch.select_scatter(x, s, 0, -1),
        R(3, 6),
        R(6),
        expect=("aten.select_scatter.default",),
    )
)
add(
    fn_case(
        "index_fill",
        lambda x, i: x.index_fill(1, i, -2.0),
        R(3, 6),
        torch.tensor([0, 4]),
        expect=("aten.index_fill.int_Scalar",),
        decomposed=False,
    )
)
add(
    fn_case(
        "index_add",
        lambda x, i, s: x.index_add(0, i, s),
        R(4, 3),
        torch.tensor([0, 2, 0]),
        R(3, 3),
        expect=("aten.index_add.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "index_copy",
        lambda x, i, s: x.index_copy(1, i, s),
        R(3, 4),
        torch.tensor([3, 0]),
        R(3, 2),
        expect=("aten.index_copy.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "cdist",
        lambda a, b: torch.cdist(a, b),
        R(2, 4, 3),
        R(2, 5, 3),
        expect=("aten._cdist_forward.default",),
        rtol=1e-4,
        atol=1e-5,
    )
)
add(
    fn_case(
        "cdist_p1",
        lambda a, b: torch.cdist(a, b, p=1.0),
        R(4, 3),
        R(5, 3),
        expect=("aten._cdist_forward.default",),
        rtol=1e-4,
        atol=1e-5,
    )
)
add(
    fn_case(
        "pdist",
        lambda a: torch.nn.functional.pdist(a),
        R(5, 3),
        expect=("aten._pdist_forward.default",),
        rtol=1e-4,
        atol=1e-5,
    )
)
