"""Op cases: convolutions, matrix products, normalisation, attention, embedding bags."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .harness import fn_case, module_case
from .inputs import I, R

CASES = []
add = CASES.append
A = torch.ops.aten
nn = torch.nn


def _seeded(factory):
    def make():
        torch.manual_seed(0)
        m = factory()
        with torch.no_grad():  # non-trivial statistics for norms
            for name, b in m.named_buffers():
                if name.endswith("running_mean"):
                    b.uniform_(-0.5, 0.5)
                elif name.endswith("running_var"):
                    b.uniform_(0.5, 1.5)
            for name, p in m.named_parameters():
                if name.endswith("weight") and p.dim() == 1:
                    p.uniform_(0.5, 1.5)
                elif name.endswith("bias"):
                    p.uniform_(-0.5, 0.5)
        return m

    return make


TOL = dict(rtol=1e-4, atol=1e-5)

add(
    module_case(
        "conv2d",
        _seeded(lambda: nn.Conv2d(3, 4, 3)),
        R(2, 3, 8, 8),
        expect=("aten.conv2d.default", "aten.convolution.default"),
        **TOL,
    )
)
add(
    module_case(
        "conv2d_stride_pad_dil",
        _seeded(lambda: nn.Conv2d(4, 6, 3, 2, 2, 2, bias=False)),
        R(1, 4, 11, 9),
        expect=("aten.conv2d.default",),
        **TOL,
    )
)
add(
    module_case(
        "conv2d_groups",
        _seeded(lambda: nn.Conv2d(4, 8, 3, padding=1, groups=2)),
        R(2, 4, 6, 6),
        expect=("aten.conv2d.default",),
        **TOL,
    )
)
add(
    module_case(
        "conv2d_depthwise",
        _seeded(lambda: nn.Conv2d(6, 6, 3, padding=1, groups=6)),
        R(1, 6, 7, 7),
        expect=("aten.conv2d.default",),
        **TOL,
    )
)
add(
    module_case(
        "conv2d_same",
        _seeded(lambda: nn.Conv2d(3, 2, (3, 4), padding="same")),
        R(1, 3, 7, 8),
        expect=("aten.conv2d.padding",),
        decomposed=False,
        **TOL,
    )
)
add(
    module_case(
        "conv2d_valid",
        _seeded(lambda: nn.Conv2d(3, 2, 3, padding="valid")),
        R(1, 3, 7, 8),
        expect=("aten.conv2d.padding",),
        decomposed=False,
        **TOL,
    )
)
add(
    module_case(
        "conv2d_unbatched",
        _seeded(lambda: nn.Conv2d(3, 2, 3)),
        R(3, 6, 6),
        expect=("aten.conv2d.default",),
        **TOL,
    )
)
add(
    module_case(
        "conv1d",
        _seeded(lambda: nn.Conv1d(3, 5, 3, stride=2, padding=1)),
        R(2, 3, 10),
        expect=("aten.conv1d.default",),
        **TOL,
    )
)
add(
    module_case(
        "conv3d",
        _seeded(lambda: nn.Conv3d(2, 3, 3, padding=1)),
        R(1, 2, 4, 5, 5),
        expect=("aten.conv3d.default",),
        **TOL,
    )
)
add(
    module_case(
        "conv_transpose2d",
        _seeded(lambda: nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1)),
        R(2, 4, 5, 5),
        expect=("aten.conv_transpose2d.input",),
        **TOL,
    )
)
add(
    module_case(
        "conv_transpose2d_groups",
        _seeded(lambda: nn.ConvTranspose2d(4, 6, 3, groups=2)),
        R(1, 4, 5, 5),
        expect=("aten.conv_transpose2d.input",),
        **TOL,
    )
)
add(
    module_case(
        "conv_transpose1d",
        _seeded(lambda: nn.ConvTranspose1d(3, 2, 4, stride=2)),
        R(2, 3, 6),
        expect=("aten.conv_transpose1d.default",),
        **TOL,
    )
)
add(
    module_case(
        "conv_transpose3d",
        _seeded(lambda: nn.ConvTranspose3d(2, 2, 3, stride=2)),
        R(1, 2, 3, 3, 3),
        expect=("aten.conv_transpose3d.input",),
        **TOL,
    )
)
add(
    fn_case(
        "convolution",
        lambda x, w: A.convolution.default(x, w, None, [1, 1], [1, 0], [1, 1], False, [0, 0], 1),
        R(1, 2, 5, 5),
        R(3, 2, 3, 3),
        expect=("aten.convolution.default",),
        **TOL,
    )
)
add(
    module_case(
        "linear",
        _seeded(lambda: nn.Linear(5, 3)),
        R(4, 5),
        expect=("aten.linear.default", "aten.addmm.default"),
        **TOL,
    )
)
add(
    module_case(
        "linear_3d",
        _seeded(lambda: nn.Linear(5, 3, bias=False)),
        R(2, 4, 5),
        expect=("aten.linear.default", "aten.mm.default"),
        **TOL,
    )
)
add(
    fn_case(
        "linear_vec_weight",
        lambda x, w: F.linear(x, w),
        R(2, 5),
        R(5),
        expect=("aten.linear.default",),
        decomposed=False,
        **TOL,
    )
)
add(fn_case("mm", torch.mm, R(3, 4), R(4, 5), expect=("aten.mm.default",), **TOL))
add(
    fn_case(
        "addmm",
        lambda b, x, y: torch.addmm(b, x, y, beta=0.5, alpha=2.0),
        R(3, 5),
        R(3, 4),
        R(4, 5),
        expect=("aten.addmm.default",),
        **TOL,
    )
)
add(fn_case("bmm", torch.bmm, R(2, 3, 4), R(2, 4, 5), expect=("aten.bmm.default",), **TOL))
add(
    fn_case(
        "matmul_nd", torch.matmul, R(2, 1, 3, 4), R(3, 4, 5), expect=("aten.matmul.default",), **TOL
    )
)
add(fn_case("matmul_vec", torch.matmul, R(3, 4), R(4), expect=("aten.matmul.default",), **TOL))
add(
    fn_case(
        "baddbmm",
        lambda b, x, y: torch.baddbmm(b, x, y, alpha=0.5),
        R(2, 3, 5),
        R(2, 3, 4),
        R(2, 4, 5),
        expect=("aten.baddbmm.default",),
        decomposed=False,
        **TOL,
    )
)
add(
    fn_case(
        "addmv",
        torch.addmv,
        R(3),
        R(3, 4),
        R(4),
        expect=("aten.addmv.default",),
        decomposed=False,
        **TOL,
    )
)
add(fn_case("mv", torch.mv, R(3, 4), R(4), expect=("aten.mv.default",), decomposed=False, **TOL))
add(fn_case("dot", torch.dot, R(4), R(4), expect=("aten.dot.default",), decomposed=False, **TOL))
add(fn_case("outer", torch.outer, R(3), R(4), expect=("aten.outer.default",), decomposed=False))
add(
    fn_case(
        "einsum",
        lambda a, b: torch.einsum("bij, bjk -> bik", a, b),
        R(2, 3, 4),
        R(2, 4, 5),
        expect=("aten.einsum.default",),
        decomposed=False,
        **TOL,
    )
)
add(
    fn_case(
        "tensordot",
        lambda a, b: torch.tensordot(a, b, dims=([1, 2], [0, 1])),
        R(2, 3, 4),
        R(3, 4, 5),
        expect=("aten.tensordot.default",),
        decomposed=False,
        **TOL,
    )
)

add(
    module_case(
        "batch_norm",
        _seeded(lambda: nn.BatchNorm2d(4)),
        R(2, 4, 5, 5),
        expect=("aten.batch_norm.default", "aten._native_batch_norm_legit_no_training.default"),
        **TOL,
    )
)
add(
    module_case(
        "batch_norm_1d",
        _seeded(lambda: nn.BatchNorm1d(4, affine=False)),
        R(3, 4),
        expect=("aten.batch_norm.default",),
        **TOL,
    )
)
add(
    module_case(
        "batch_norm_no_stats",
        _seeded(lambda: nn.BatchNorm2d(3, track_running_stats=False)),
        R(2, 3, 4, 4),
        expect=("aten.batch_norm.default", "aten._native_batch_norm_legit.no_stats"),
        **TOL,
    )
)
add(
    fn_case(
        "native_batch_norm_train",
        lambda x, w, b, m, v: A._native_batch_norm_legit.default(x, w, b, m, v, True, 0.1, 1e-5),
        R(2, 3, 4),
        R(3),
        R(3),
        R(3),
        R(3, lo=0.5, hi=1.5),
        expect=("aten._native_batch_norm_legit.default",),
        decomposed=False,
        **TOL,
    )
)
# The functional forms a program that updates its running statistics becomes once functionalised:
# every output compared, the updated running mean and (unbiased) variance included.
for _train in (True, False):
    add(
        fn_case(
            f"native_batch_norm_functional_{'train' if _train else 'eval'}",
            lambda x, w, b, m, v, _t=_train: A._native_batch_norm_legit_functional.default(
                x, w, b, m, v, _t, 0.1, 1e-5
            ),
            R(2, 3, 4),
            R(3),
            R(3),
            R(3),
            R(3, lo=0.5, hi=1.5),
            expect=("aten._native_batch_norm_legit_functional.default",),
            decomposed=False,
            **TOL,
        )
    )
add(
    fn_case(
        "batch_norm_with_update_functional",
        lambda x, w, b, m, v: tuple(
            o
            for k, o in enumerate(
                A._batch_norm_with_update_functional.default(x, w, b, m, v, 0.1, 1e-5)
            )
            if k != 3  # the reserve buffer (empty on CPU)
        ),
        R(2, 3, 4),
        R(3),
        R(3),
        R(3),
        R(3, lo=0.5, hi=1.5),
        expect=("aten._batch_norm_with_update_functional.default",),
        decomposed=False,
        **TOL,
    )
)
add(
    fn_case(
        "native_batch_norm_eval",
        lambda x, w, b, m, v: A._native_batch_norm_legit.default(x, w, b, m, v, False, 0.1, 1e-5)[
            0
        ],
        R(2, 3, 4),
        R(3),
        R(3),
        R(3),
        R(3, lo=0.5, hi=1.5),
        expect=("aten._native_batch_norm_legit.default",),
        decomposed=False,
        **TOL,
    )
)
add(
    module_case(
        "layer_norm",
        _seeded(lambda: nn.LayerNorm(6)),
        R(2, 3, 6),
        expect=("aten.layer_norm.default", "aten.native_layer_norm.default"),
        **TOL,
    )
)
add(
    module_case(
        "layer_norm_2d_noaffine",
        _seeded(lambda: nn.LayerNorm((3, 6), elementwise_affine=False)),
        R(2, 3, 6),
        expect=("aten.layer_norm.default",),
        **TOL,
    )
)
add(
    fn_case(
        "native_layer_norm_stats",
        lambda x, w, b: A.native_layer_norm.default(x, [4], w, b, 1e-5),
        R(2, 3, 4),
        R(4),
        R(4),
        expect=("aten.native_layer_norm.default",),
        **TOL,
    )
)
add(
    module_case(
        "group_norm",
        _seeded(lambda: nn.GroupNorm(2, 6)),
        R(2, 6, 3, 3),
        expect=("aten.group_norm.default", "aten.native_group_norm.default"),
        **TOL,
    )
)
add(
    fn_case(
        "native_group_norm_stats",
        lambda x, w, b: A.native_group_norm.default(x, w, b, 2, 6, 9, 3, 1e-5),
        R(2, 6, 3, 3),
        R(6),
        R(6),
        expect=("aten.native_group_norm.default",),
        **TOL,
    )
)
add(
    module_case(
        "instance_norm",
        _seeded(lambda: nn.InstanceNorm2d(3, affine=True)),
        R(2, 3, 4, 5),
        expect=("aten.instance_norm.default",),
        decomposed=False,
        **TOL,
    )
)
add(
    module_case(
        "rms_norm",
        _seeded(lambda: nn.RMSNorm(6)),
        R(2, 3, 6),
        expect=("aten.rms_norm.default",),
        decomposed=False,
        **TOL,
    )
)

add(
    fn_case(
        "sdpa",
        F.scaled_dot_product_attention,
        R(2, 3, 5, 8),
        R(2, 3, 6, 8),
        R(2, 3, 6, 4),
        expect=("aten.scaled_dot_product_attention.default",),
        **TOL,
    )
)
add(
    fn_case(
        "sdpa_causal",
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        R(2, 2, 5, 8),
        R(2, 2, 5, 8),
        R(2, 2, 5, 8),
        expect=("aten.scaled_dot_product_attention.default",),
        **TOL,
    )
)
add(
    fn_case(
        "sdpa_mask",
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
        R(1, 2, 4, 8),
        R(1, 2, 6, 8),
        R(1, 2, 6, 8),
        R(4, 6),
        expect=("aten.scaled_dot_product_attention.default",),
        **TOL,
    )
)
add(
    fn_case(
        "sdpa_bool_mask",
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.3),
        R(1, 2, 4, 8),
        R(1, 2, 6, 8),
        R(1, 2, 6, 8),
        torch.rand(4, 6) < 0.7,
        expect=("aten.scaled_dot_product_attention.default",),
        **TOL,
    )
)
add(
    fn_case(
        "embedding_bag_sum",
        lambda w, i, o: F.embedding_bag(i, w, o, mode="sum"),
        R(10, 3),
        torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]),
        torch.tensor([0, 4]),
        expect=("aten.embedding_bag.padding_idx", "aten._embedding_bag_forward_only.default"),
        **TOL,
    )
)
add(
    fn_case(
        "embedding_bag_mean",
        lambda w, i, o: F.embedding_bag(i, w, o, mode="mean"),
        R(10, 3),
        torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]),
        torch.tensor([0, 3, 3]),
        expect=("aten.embedding_bag.padding_idx",),
        **TOL,
    )
)
add(
    fn_case(
        "embedding_bag_max",
        lambda w, i, o: F.embedding_bag(i, w, o, mode="max"),
        R(10, 3),
        torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]),
        torch.tensor([0, 2, 5]),
        expect=("aten.embedding_bag.padding_idx",),
        **TOL,
    )
)
add(
    fn_case(
        "embedding_bag_2d",
        lambda w, i: F.embedding_bag(i, w, mode="mean"),
        R(10, 3),
        I(2, 4, lo=0, hi=9),
        expect=("aten.embedding_bag.padding_idx",),
        **TOL,
    )
)
add(
    fn_case(
        "embedding_bag_core",
        lambda w, i, o, p: A._embedding_bag.default(w, i, o, False, 0, False, p)[0],
        R(10, 3),
        torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]),
        torch.tensor([0, 4, 6]),
        R(8),
        expect=("aten._embedding_bag.default",),
        **TOL,
    )
)
add(
    fn_case(
        "embedding_bag_last_offset",
        lambda w, i, o: A._embedding_bag.default(w, i, o, False, 1, False, None, True)[:3],
        R(10, 3),
        torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]),
        torch.tensor([0, 4, 6, 8]),
        expect=("aten._embedding_bag.default",),
        **TOL,
    )
)

# recurrent layers: a recursive function over time steps (raw), unrolled ops (core ATen)
add(
    module_case(
        "lstm",
        _seeded(lambda: nn.LSTM(4, 5, num_layers=2, batch_first=True)),
        R(2, 3, 4),
        expect=("aten.lstm.input",),
        **TOL,
    )
)
add(
    module_case(
        "lstm_bidirectional",
        _seeded(lambda: nn.LSTM(4, 5, bidirectional=True)),
        R(3, 2, 4),
        expect=("aten.lstm.input",),
        **TOL,
    )
)
add(
    module_case(
        "lstm_unbatched",
        _seeded(lambda: nn.LSTM(4, 3, bias=False)),
        R(5, 4),
        expect=("aten.lstm.input",),
        **TOL,
    )
)
add(
    module_case(
        "gru",
        _seeded(lambda: nn.GRU(4, 5, num_layers=2, batch_first=True)),
        R(2, 3, 4),
        expect=("aten.gru.input",),
        **TOL,
    )
)
add(
    module_case(
        "gru_bidirectional",
        _seeded(lambda: nn.GRU(4, 5, bidirectional=True)),
        R(3, 4),
        expect=("aten.gru.input",),
        **TOL,
    )
)
add(
    module_case(
        "rnn_tanh",
        _seeded(lambda: nn.RNN(4, 5, num_layers=2)),
        R(3, 2, 4),
        expect=("aten.rnn_tanh.input",),
        **TOL,
    )
)
add(
    module_case(
        "rnn_relu",
        _seeded(lambda: nn.RNN(4, 5, nonlinearity="relu", bias=False)),
        R(3, 2, 4),
        expect=("aten.rnn_relu.input",),
        **TOL,
    )
)

# half precision: compared at the precision of the format
for _dt, _tol in ((torch.float16, 2e-3), (torch.bfloat16, 2e-2)):
    _name = str(_dt).removeprefix("torch.")
    add(
        module_case(
            f"mlp_{_name}",
            (
                lambda d: (
                    lambda: _seeded(
                        lambda: nn.Sequential(
                            nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 4)
                        )
                    )().to(d)
                )
            )(_dt),
            R(3, 8, dtype=_dt),
            expect=("aten.linear.default",),
            rtol=_tol,
            atol=_tol,
        )
    )
