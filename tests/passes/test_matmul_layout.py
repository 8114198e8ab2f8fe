"""FoldMatmulLayout (scales of a product's operands after it, the swap of B's last two axes as
transpose_b) and SimplifyExpr's take-through-layout rules: goldens with the values checked by
the evaluator, what must stay, and the compiled attention against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core
from relay_core import passes
from relay_core.ir import Function, IRModule, call, const, var

from .golden import check

RNG = np.random.default_rng(3)


def _x(*shape):
    return RNG.standard_normal(shape).astype("float32")


SIG_VIT = "%q: Tensor[(2, 3, 5, 4), float32], %y: Tensor[(5, 6, 4), float32]"


def test_vit_key_transpose_and_scales_fold():
    # ViT (torchvision MultiheadAttention): k = (L, N*H, D) -> (N*H, D, L), both scaled
    before = f"""
        def @main({SIG_VIT}) {{
          %0 = multiply(%q, 0.5f);
          %1 = multiply(transpose(%y, axes=[1, 2, 0]), 0.5f);
          nn.matmul(%0, reshape(%1, newshape=[2, 3, 4, 5]))
        }}"""
    after = f"""
        def @main({SIG_VIT}) {{
          %0 = reshape(transpose(%y, axes=[1, 0, 2]), newshape=[2, 3, 5, 4]);
          multiply(nn.matmul(%q, %0, transpose_b=True), 0.25f)
        }}"""
    check(passes.FoldMatmulLayout(), before, after, inputs=[_x(2, 3, 5, 4), _x(5, 6, 4)])


def test_gpt2_key_transpose_disappears():
    # GPT-2: (B*H, L, D) -> (B*H, D, L) is the swap itself: no transpose is left
    sig = "%q: Tensor[(2, 3, 5, 4), float32], %k: Tensor[(6, 5, 4), float32]"
    before = f"""
        def @main({sig}) {{
          %0 = transpose(%k, axes=[0, 2, 1]);
          nn.matmul(%q, reshape(negative(%0), newshape=[2, 3, 4, 5]))
        }}"""
    after = f"""
        def @main({sig}) {{
          nn.matmul(%q, reshape(negative(%k), newshape=[2, 3, 5, 4]), transpose_b=True)
        }}"""
    check(passes.FoldMatmulLayout(), before, after, inputs=[_x(2, 3, 5, 4), _x(6, 5, 4)])


def test_batch_matmul_flag_flips_the_other_way():
    sig = "%a: Tensor[(2, 5, 4), float32], %b: Tensor[(2, 4, 3), float32]"
    before = f"def @main({sig}) {{ nn.batch_matmul(%a, transpose(%b, axes=[0, 2, 1])) }}"
    after = f"def @main({sig}) {{ nn.batch_matmul(%a, %b, transpose_b=False) }}"
    check(passes.FoldMatmulLayout(), before, after, inputs=[_x(2, 5, 4), _x(2, 4, 3)])


T645 = "Tensor[(6, 4, 5), float32]"


@pytest.mark.parametrize(
    "a, b",
    [
        # the transpose keeps the last axis already (ViT's v): unswapping would break its rows
        ("(2, 3, 7, 5)", "reshape(transpose(%y, axes=[1, 0, 2]), newshape=[2, 3, 5, 4])"),
        # a reshape that mixes the last two axes
        ("(2, 3, 7, 5)", "reshape(transpose(%y, axes=[1, 2, 0]), newshape=[2, 3, 5, 4])"),
        # a tensor (not a one-value constant) in the elementwise op
        ("(2, 3, 7, 4)", "reshape(add(transpose(%y, axes=[1, 2, 0]), %t), newshape=[2, 3, 4, 5])"),
    ],
)
def test_what_stays(a, b):
    sig = f"%a: Tensor[{a}, float32], %y: Tensor[(5, 6, 4), float32], %t: {T645}"
    src = f"def @main({sig}) {{ nn.matmul(%a, {b}) }}"
    check(passes.FoldMatmulLayout(), src, src)


def test_shared_chains_stay():
    # the scaled transpose is read twice: moving the swap or the scale would compute it twice
    sig = "%q: Tensor[(6, 5, 4), float32], %k: Tensor[(6, 5, 4), float32]"
    src = f"""
        def @main({sig}) {{
          %0 = multiply(transpose(%k, axes=[0, 2, 1]), 0.5f);
          (nn.matmul(%q, %0), %0)
        }}"""
    check(passes.FoldMatmulLayout(), src, src)


SIG5 = "%x: Tensor[(4, 3, 2, 5), float32]"
X5 = np.arange(120, dtype=np.float32).reshape(4, 3, 2, 5)


@pytest.mark.parametrize(
    "before, after",
    [
        (
            "take(transpose(%x, axes=[2, 0, 3, 1]), 1i64, axis=0)",
            "transpose(take(%x, 1i64, axis=2), axes=[0, 2, 1])",
        ),
        (
            "take(transpose(%x, axes=[1, 0, 2, 3]), 2i64, axis=-4)",
            "take(%x, 2i64, axis=1)",
        ),
        (
            "take(squeeze(expand_dims(%x, axis=2), axis=[2]), 3i64, axis=0)",
            "take(%x, 3i64, axis=0)",
        ),
        (
            "take(squeeze(reshape(%x, newshape=[4, 1, 3, 2, 5]), axis=[1]), 1i64, axis=3)",
            "squeeze(take(reshape(%x, newshape=[4, 1, 3, 2, 5]), 1i64, axis=4), axis=[1])",
        ),
        (
            "take(expand_dims(%x, axis=1, num_newaxis=2), 1i64, axis=3)",
            "expand_dims(take(%x, 1i64, axis=1), axis=1, num_newaxis=2)",
        ),
        (
            "take(expand_dims(%x, axis=1, num_newaxis=2), 4i64, axis=4)",
            "expand_dims(take(%x, 4i64, axis=2), axis=1, num_newaxis=2)",
        ),
        (
            "take(expand_dims(%x, axis=2, num_newaxis=2), 0i64, axis=3)",
            "expand_dims(%x, axis=2)",
        ),
        (
            "take(expand_dims(%x, axis=-1), 0i64, axis=0)",
            "expand_dims(take(%x, 0i64, axis=0), axis=3)",
        ),
    ],
)
def test_take_through_layout_ops(before, after):
    check(
        passes.SimplifyExpr(),
        f"def @main({SIG5}) {{ {before} }}",
        f"def @main({SIG5}) {{ {after} }}",
        inputs=[X5],
    )


def test_take_of_an_index_tensor_stays():
    sig = f"{SIG5}, %i: Tensor[(2), int64]"
    src = f"def @main({sig}) {{ take(transpose(%x, axes=[2, 0, 3, 1]), %i, axis=0) }}"
    check(passes.SimplifyExpr(), src, src)


def _vit_attention(L=7, N=2, H=3, D=4):
    """torchvision's MultiheadAttention as exported: qkv (L, N, 3E) -> (3, L, N, E) -> q, k, v
    per head, q and k scaled by D**-0.25, softmax(q k^T) v, heads merged back to (L*N, E)."""
    E = H * D
    x = var("x", (L, N, 3 * E))
    t = call("reshape", x, newshape=[L, N, 3, E])
    t = call("transpose", call("expand_dims", t, axis=0), axes=[3, 1, 2, 0, 4])
    t = call("squeeze", t, axis=[3])
    s = const(np.float32(D**-0.25))

    def part(i, perm, shape, scale=True):
        p = call("take", t, const(np.int64(i)), axis=0, mode="fast")
        p = call("transpose", call("reshape", p, newshape=[L, N * H, D]), axes=perm)
        return call("reshape", call("multiply", p, s) if scale else p, newshape=shape)

    q = part(0, [1, 0, 2], [N, H, L, D])
    k = part(1, [1, 2, 0], [N, H, D, L])
    v = part(2, [1, 0, 2], [N, H, L, D], scale=False)
    a = call("nn.matmul", call("nn.softmax", call("nn.matmul", q, k), axis=3), v)
    out = call("reshape", call("transpose", a, axes=[2, 0, 1, 3]), newshape=[L * N, E])

    def ref(xv):
        qkv = xv.reshape(L, N, 3, H, D).transpose(2, 1, 3, 0, 4)  # (3, N, H, L, D)
        sc = qkv[0] @ qkv[1].transpose(0, 1, 3, 2) / np.sqrt(D)
        p = np.exp(sc - sc.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        return (p @ qkv[2]).transpose(2, 0, 1, 3).reshape(L * N, E)

    return IRModule.from_expr(Function((x,), out)), ref, (L, N, 3 * E)


def test_compiled_attention_against_numpy():
    mod, ref, shape = _vit_attention()
    opt = passes.optimize(relay_core.infer_type(mod)).astext()
    # no transpose moves the last axis any more, the scales are one multiply after the product
    assert "transpose_b=True" in opt
    assert "axes=[1, 2, 0]" not in opt and "axes=[3, 1, 2, 0, 4]" not in opt
    lib = relay_core.build(relay_core.infer_type(mod), num_threads=2, cache=False)
    xv = RNG.standard_normal(shape).astype("float32")
    np.testing.assert_allclose(lib(xv)[0], ref(xv), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "split, parts",
    [
        ("split(%x, indices_or_sections=2, axis=0)", [(0, 2, 0), (2, 4, 0)]),
        ("split(%x, indices_or_sections=[1, 4], axis=-1)", [(0, 1, 3), (1, 4, 3), (4, 5, 3)]),
    ],
)
def test_parts_of_a_split_are_slices(split, parts):
    # GPT-2's q, k, v = split(qkv): each consumer reads its part where it lies
    n = len(parts)
    before = f"def @main({SIG5}) {{ %0 = {split}; ({', '.join(f'%0.{i}' for i in range(n))}) }}"
    sl = [
        f"strided_slice(%x, begin=[{a}], end=[{b}], strides=[1], axes=[{ax}])" for a, b, ax in parts
    ]
    after = f"def @main({SIG5}) {{ ({', '.join(sl)}) }}"
    check(passes.SimplifyExpr(), before, after, inputs=[X5])


def test_16_bit_scales_stay():
    # in float16 (q*s)(k*s) and (q k)*s^2 round apart by more than a unit in the last place:
    # only the swap moves
    sig = "%q: Tensor[(2, 5, 4), float16], %k: Tensor[(2, 5, 4), float16]"
    before = f"""
        def @main({sig}) {{
          nn.matmul(multiply(%q, 0.5f16), multiply(transpose(%k, axes=[0, 2, 1]), 0.5f16))
        }}"""
    after = f"""
        def @main({sig}) {{
          nn.matmul(multiply(%q, 0.5f16), multiply(%k, 0.5f16), transpose_b=True)
        }}"""
    check(passes.FoldMatmulLayout(), before, after)
