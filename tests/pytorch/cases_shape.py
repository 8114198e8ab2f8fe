"""Op cases: views, layout and copies."""

from __future__ import annotations

import torch

from .harness import fn_case
from .inputs import I, R

CASES = []
add = CASES.append
A = torch.ops.aten

add(fn_case("view", lambda x: x.view(4, 6), R(2, 3, 4), expect=("aten.view.default",)))
add(fn_case("view_infer", lambda x: x.view(-1, 3), R(2, 3, 4), expect=("aten.view.default",)))
add(
    fn_case(
        "reshape",
        lambda x: x.reshape(3, 8),
        R(2, 3, 4),
        expect=("aten.reshape.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "unsafe_view",
        lambda x: A._unsafe_view.default(x, [6, 4]),
        R(2, 3, 4),
        expect=("aten._unsafe_view.default",),
        decomposed=False,
    )
)
add(fn_case("view_empty", lambda x: x.view(0, 5), R(0, 5), expect=("aten.view.default",)))
add(
    fn_case(
        "flatten",
        lambda x: torch.flatten(x, 1),
        R(2, 3, 4, 5),
        expect=("aten.flatten.using_ints",),
        decomposed=False,
    )
)
add(
    fn_case(
        "flatten_mid",
        lambda x: torch.flatten(x, 1, 2),
        R(2, 3, 4, 5),
        expect=("aten.flatten.using_ints",),
        decomposed=False,
    )
)
add(
    fn_case(
        "unflatten",
        lambda x: x.unflatten(1, (3, 4)),
        R(2, 12),
        expect=("aten.unflatten.int",),
        decomposed=False,
    )
)
add(fn_case("permute", lambda x: x.permute(2, 0, 1), R(2, 3, 4), expect=("aten.permute.default",)))
add(
    fn_case(
        "transpose",
        lambda x: x.transpose(0, 2),
        R(2, 3, 4),
        expect=("aten.transpose.int",),
        decomposed=False,
    )
)
add(fn_case("t", lambda x: x.t(), R(3, 4), expect=("aten.t.default",), decomposed=False))
add(
    fn_case(
        "movedim",
        lambda x: torch.movedim(x, 0, -1),
        R(2, 3, 4),
        expect=("aten.movedim.int",),
        decomposed=False,
    )
)
add(fn_case("expand", lambda x: x.expand(2, 3, 4), R(3, 1), expect=("aten.expand.default",)))
add(fn_case("expand_keep", lambda x: x.expand(5, -1, 4), R(3, 1), expect=("aten.expand.default",)))
add(
    fn_case(
        "reshape_as",  # HF LeViT (torch.export keeps it whole)
        lambda x, y: (x * 2).reshape_as(y),
        R(2, 12),
        R(2, 3, 4),
        expect=("aten.reshape_as.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "view_as",
        lambda x, y: (x + 1).view_as(y),
        R(6, 4),
        R(2, 3, 4),
        expect=("aten.view_as.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "expand_as",
        lambda x, y: x.expand_as(y),
        R(1, 4),
        R(3, 4),
        expect=("aten.expand_as.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "broadcast_tensors",
        lambda x, y: torch.broadcast_tensors(x, y),
        R(3, 1),
        R(4),
        expect=("aten.broadcast_tensors.default",),
        decomposed=False,
    )
)
add(fn_case("squeeze_dim", lambda x: x.squeeze(1), R(2, 1, 4), expect=("aten.squeeze.dim",)))
add(fn_case("squeeze_dim_noop", lambda x: x.squeeze(0), R(2, 1, 4), expect=("aten.squeeze.dim",)))
add(
    fn_case(
        "squeeze_dims", lambda x: x.squeeze((0, 2)), R(1, 3, 1, 4), expect=("aten.squeeze.dims",)
    )
)
add(
    fn_case(
        "squeeze_all",
        lambda x: x.squeeze(),
        R(1, 3, 1, 4),
        expect=("aten.squeeze.default",),
        decomposed=False,
    )
)
add(fn_case("unsqueeze", lambda x: x.unsqueeze(-1), R(2, 3), expect=("aten.unsqueeze.default",)))
add(
    fn_case(
        "cat", lambda a, b: torch.cat([a, b], dim=1), R(2, 3), R(2, 5), expect=("aten.cat.default",)
    )
)
add(
    fn_case(
        "cat_promote",
        lambda a, b: torch.cat([a, b]),
        I(2, 3),
        R(1, 3),
        expect=("aten.cat.default",),
    )
)
add(
    fn_case(
        "cat_legacy_empty",
        lambda a, b: torch.cat([a, b]),
        R(2, 3),
        torch.zeros(0),
        expect=("aten.cat.default",),
    )
)
add(
    fn_case(
        "stack",
        lambda a, b: torch.stack([a, b], dim=1),
        R(2, 3),
        R(2, 3),
        expect=("aten.stack.default",),
        decomposed=False,
    )
)
add(fn_case("slice", lambda x: x[:, 1:3], R(3, 5), expect=("aten.slice.Tensor",)))
add(fn_case("slice_step", lambda x: x[1::2, ::3], R(5, 7), expect=("aten.slice.Tensor",)))
add(fn_case("slice_neg", lambda x: x[-3:-1], R(5, 2), expect=("aten.slice.Tensor",)))
add(
    fn_case(
        "narrow",
        lambda x: x.narrow(1, 1, 2),
        R(3, 5),
        expect=("aten.narrow.default",),
        decomposed=False,
    )
)
add(fn_case("select", lambda x: x[:, 2], R(3, 5), expect=("aten.select.int",)))
add(fn_case("select_neg", lambda x: x[-1], R(3, 5), expect=("aten.select.int",)))
add(
    fn_case(
        "split_with_sizes",
        lambda x: torch.split(x, [1, 3, 2], dim=1),
        R(2, 6),
        expect=("aten.split_with_sizes.default",),
    )
)
add(
    fn_case(
        "split",
        lambda x: torch.split(x, 4),
        R(10, 2),
        expect=("aten.split.Tensor",),
        decomposed=False,
    )
)
add(
    fn_case(
        "chunk",
        lambda x: torch.chunk(x, 3, dim=-1),
        R(2, 7),
        expect=("aten.chunk.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "unbind",
        lambda x: torch.unbind(x, 1),
        R(2, 3, 4),
        expect=("aten.unbind.int",),
        decomposed=False,
    )
)
add(fn_case("flip", lambda x: torch.flip(x, (0, 2)), R(2, 3, 4), expect=("aten.flip.default",)))
add(
    fn_case(
        "roll",
        lambda x: torch.roll(x, (1, -2), (0, 1)),
        R(3, 5),
        expect=("aten.roll.default",),
        decomposed=False,
    )
)
add(
    fn_case(
        "roll_flat",
        lambda x: torch.roll(x, 4),
        R(3, 5),
        expect=("aten.roll.default",),
        decomposed=False,
    )
)
add(fn_case("repeat", lambda x: x.repeat(2, 1, 3), R(3, 2), expect=("aten.repeat.default",)))
add(
    fn_case(
        "tile", lambda x: x.tile((2,)), R(3, 2), expect=("aten.tile.default",), decomposed=False
    )
)
add(
    fn_case(
        "repeat_interleave",
        lambda x: x.repeat_interleave(2, dim=1),
        R(3, 2),
        expect=("aten.repeat_interleave.self_int",),
        decomposed=False,
    )
)
add(fn_case("clone", lambda x: x.clone() + 1, R(3, 2), expect=("aten.clone.default",)))
add(fn_case("alias", lambda x: A.alias.default(x) * 2, R(3, 2), expect=("aten.alias.default",)))
add(
    fn_case(
        "detach",
        lambda x: x.detach() * 2,
        R(3, 2),
        expect=("aten.detach.default",),
        decomposed=False,
    )
)
add(fn_case("contiguous", lambda x: x.t().contiguous(), R(3, 2), expect=("aten.clone.default",)))
add(
    fn_case("copy", lambda x, y: A.copy.default(x, y), R(3, 4), I(4), expect=("aten.copy.default",))
)
add(
    fn_case(
        "to_dtype",
        lambda x: x.to(torch.int32),
        R(3, 4, lo=-5, hi=5),
        expect=("aten._to_copy.default",),
    )
)
add(
    fn_case(
        "to_bool",
        lambda x: x.to(torch.bool),
        I(3, 4, lo=-1, hi=1),
        expect=("aten._to_copy.default",),
    )
)
add(fn_case("to_float64", lambda x: x.double() * 3, R(3, 4), expect=("aten._to_copy.default",)))
add(fn_case("type_as", lambda x, y: x.type_as(y), R(3, 4), I(1), expect=("aten._to_copy.default",)))
add(fn_case("diagonal", lambda x: torch.diagonal(x), R(4, 3), expect=("aten.diagonal.default",)))
add(
    fn_case(
        "diagonal_offset",
        lambda x: torch.diagonal(x, 1, 1, 2),
        R(2, 4, 5),
        expect=("aten.diagonal.default",),
    )
)
add(
    fn_case(
        "diagonal_neg", lambda x: torch.diagonal(x, -2), R(5, 4), expect=("aten.diagonal.default",)
    )
)
add(
    fn_case(
        "as_strided",
        lambda x: torch.as_strided(x, (3, 2), (1, 3), 1),
        R(4, 3),
        expect=("aten.as_strided.default",),
    )
)
