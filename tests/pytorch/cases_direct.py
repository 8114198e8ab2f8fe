"""Op cases that call ATen overloads directly (variants, aliases, rarely traced forms), each
checked in the graph as exported."""

from __future__ import annotations

import torch

from .harness import fn_case
from .inputs import B, I, R

A = torch.ops.aten
CASES = []


def direct(overload: str, fn, *inputs, name=None, **kw):
    kw.setdefault("decomposed", False)
    CASES.append(
        fn_case(
            name or "direct_" + overload.replace(".", "_"),
            fn,
            *inputs,
            expect=("aten." + overload,),
            **kw,
        )
    )


X = R(3, 4)
direct(
    "_batch_norm_with_update.default",
    lambda x, w, b, m, v: A._batch_norm_with_update.default(
        x, w, b, m.clone(), v.clone(), 0.1, 1e-5
    )[0],
    R(2, 3, 4),
    R(3),
    R(3),
    R(3),
    R(3, lo=0.5, hi=1.5),
    rtol=1e-4,
)
direct(
    "_convolution.default",
    lambda x, w: A._convolution.default(
        x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, False, False, True, True
    ),
    R(1, 2, 5, 5),
    R(3, 2, 3, 3),
    rtol=1e-4,
)
direct("_local_scalar_dense.default", lambda x: x * A._local_scalar_dense.default(x[0]), R(3))
direct("_pad_circular.default", lambda x: A._pad_circular.default(x, [1, 2]), R(2, 3, 4))
direct("_prelu_kernel.default", lambda x, w: A._prelu_kernel.default(x, w), R(2, 3, 4), R(3, 1))
direct(
    "_unsafe_index.Tensor",
    lambda x, i: A._unsafe_index.Tensor(x, [None, i]),
    R(3, 4),
    torch.tensor([3, 0, 1]),
)
direct(
    "_unsafe_index_put.default",
    lambda x, i, v: A._unsafe_index_put.default(x, [i], v, False),
    R(5, 2),
    torch.tensor([4, 1]),
    R(2, 2),
)
direct(
    "_upsample_nearest_exact1d.vec",
    lambda x: A._upsample_nearest_exact1d.vec(x, [7], None),
    R(1, 2, 4),
)
direct(
    "_upsample_nearest_exact3d.vec",
    lambda x: A._upsample_nearest_exact3d.vec(x, [3, 5, 4], None),
    R(1, 1, 2, 3, 2),
)
direct(
    "_upsample_nearest_exact2d.default",
    lambda x: A._upsample_nearest_exact2d.default(x, [5, 7]),
    R(1, 2, 3, 4),
)
direct(
    "adaptive_max_pool3d.default",
    lambda x: A.adaptive_max_pool3d.default(x, [2, 2, 1])[0],
    R(1, 2, 4, 5, 3),
)
direct("alias_copy.default", lambda x: A.alias_copy.default(x) + 1, X)
direct("all.dims", lambda x: A.all.dims(x, [0, 2]), B(2, 3, 4))
direct(
    "argsort.stable",
    lambda x: A.argsort.stable(x, stable=True, dim=0, descending=True),
    I(5, 3, lo=0, hi=2).float(),
)
direct("as_strided_copy.default", lambda x: A.as_strided_copy.default(x, [2, 2], [1, 2]), X)
for _n in ("and", "or", "xor"):
    direct(
        f"bitwise_{_n}.Scalar_Tensor",
        (lambda n: lambda x: getattr(A, f"bitwise_{n}").Scalar_Tensor(6, x))(_n),
        I(3, 4),
    )
direct(
    "bitwise_left_shift.Tensor",
    lambda x, y: A.bitwise_left_shift.Tensor(x, y),
    I(3, 4, lo=0, hi=9),
    I(3, 4, lo=0, hi=3),
)
direct(
    "bitwise_left_shift.Tensor_Scalar",
    lambda x: A.bitwise_left_shift.Tensor_Scalar(x, 2),
    I(3, 4, lo=0, hi=9),
)
direct(
    "bitwise_right_shift.Tensor",
    lambda x, y: A.bitwise_right_shift.Tensor(x, y),
    I(3, 4, lo=0, hi=99),
    I(3, 4, lo=0, hi=3),
)
direct(
    "bitwise_right_shift.Tensor_Scalar",
    lambda x: A.bitwise_right_shift.Tensor_Scalar(x, 1),
    I(3, 4, lo=0, hi=99),
)
direct("clamp_max.Tensor", lambda x, m: A.clamp_max.Tensor(x, m), X, R(4))
direct("clamp_max.default", lambda x: A.clamp_max.default(x, 0.2), X)
direct("clamp_min.Tensor", lambda x, m: A.clamp_min.Tensor(x, m), X, R(4))
direct("clamp_min.default", lambda x: A.clamp_min.default(x, 0.2), X)
direct(
    "copysign.Tensor", lambda x, y: A.copysign.Tensor(x, y), X, torch.tensor([1.0, -0.0, 0.0, -2.0])
)
direct("copysign.Scalar", lambda x: A.copysign.Scalar(x, -1.0), X)
direct("detach_copy.default", lambda x: A.detach_copy.default(x) * 2, X)
direct("diagonal_copy.default", lambda x: A.diagonal_copy.default(x, 1), R(4, 5))
direct("expand_copy.default", lambda x: A.expand_copy.default(x, [2, 3, 4]), R(3, 1))
direct(
    "fmax.default",
    lambda x, y: A.fmax.default(x, y),
    torch.tensor([1.0, float("nan"), 2.0]),
    torch.tensor([float("nan"), 1.0, 3.0]),
)
direct(
    "fmin.default",
    lambda x, y: A.fmin.default(x, y),
    torch.tensor([1.0, float("nan"), 2.0]),
    torch.tensor([float("nan"), 1.0, 3.0]),
)
direct("floor_divide.Scalar", lambda x: A.floor_divide.Scalar(x, 3), I(3, 4, lo=-9, hi=9))
direct(
    "index_fill.int_Tensor",
    lambda x, i, v: A.index_fill.int_Tensor(x, 0, i, v),
    R(3, 4),
    torch.tensor([2]),
    R(),
)
direct(
    "isfinite.default",
    lambda x: A.isfinite.default(x),
    torch.tensor([1.0, float("nan"), float("inf"), -2.0]),
)
direct("lerp.Scalar", lambda x, y: A.lerp.Scalar(x, y, 0.3), X, R(3, 4))
direct(
    "native_batch_norm.default",
    lambda x, w, b, m, v: A.native_batch_norm.default(x, w, b, m, v, False, 0.1, 1e-5)[0],
    R(2, 3, 4),
    R(3),
    R(3),
    R(3),
    R(3, lo=0.5, hi=1.5),
    rtol=1e-4,
)
direct("native_dropout.default", lambda x: A.native_dropout.default(x, 0.5, False), X)
direct(
    "normal.Tensor_Tensor",
    lambda m, s: A.normal.Tensor_Tensor(m, s),
    X,
    R(3, 4, lo=0, hi=1),
    compare="shape",
)
direct("normal.Tensor_float", lambda m: A.normal.Tensor_float(m, 2.0), X, compare="shape")
direct(
    "normal.float_Tensor",
    lambda s: A.normal.float_Tensor(1.0, s),
    R(3, 4, lo=0, hi=1),
    compare="shape",
)
direct("permute_copy.default", lambda x: A.permute_copy.default(x, [1, 0]), X)
direct("bernoulli.p", lambda x: A.bernoulli.p(x, 0.3), X, compare="shape")
direct("randint.default", lambda x: A.randint.default(5, [3, 2]) + x * 0, I(1), compare="shape")
direct(
    "remainder.Scalar_Tensor", lambda x: A.remainder.Scalar_Tensor(5.0, x), R(3, 4, lo=0.5, hi=3)
)
direct("rsub.Tensor", lambda x, y: A.rsub.Tensor(x, y, alpha=2), X, R(4))
direct(
    "scatter.value_reduce",
    lambda x, i: A.scatter.value_reduce(x, 1, i, 2.0, reduce="multiply"),
    R(3, 4),
    torch.tensor([[0, 0], [1, 3], [2, 2]]),
)
direct("select_copy.int", lambda x: A.select_copy.int(x, 1, -1), X)
direct("slice_copy.Tensor", lambda x: A.slice_copy.Tensor(x, 1, 1, 3), X)
direct("split_copy.Tensor", lambda x: A.split_copy.Tensor(x, 3, 1), R(2, 7))
direct(
    "split_with_sizes_copy.default",
    lambda x: A.split_with_sizes_copy.default(x, [2, 5], 1),
    R(2, 7),
)
direct("square.default", lambda x: A.square.default(x), X)
direct("squeeze_copy.default", lambda x: A.squeeze_copy.default(x), R(1, 3, 1))
direct("squeeze_copy.dim", lambda x: A.squeeze_copy.dim(x, 0), R(1, 3, 1))
direct("squeeze_copy.dims", lambda x: A.squeeze_copy.dims(x, [0, 2]), R(1, 3, 1))
direct("std.correction", lambda x: A.std.correction(x, [1], correction=0), X)
direct("t_copy.default", lambda x: A.t_copy.default(x), X)
direct("transpose_copy.int", lambda x: A.transpose_copy.int(x, 0, 1), X)
direct("unbind_copy.int", lambda x: A.unbind_copy.int(x, 1), X)
direct("unsqueeze_copy.default", lambda x: A.unsqueeze_copy.default(x, 1), X)
direct("view_copy.default", lambda x: A.view_copy.default(x, [2, 6]), X)
direct(
    "upsample_bicubic2d.default",
    lambda x: A.upsample_bicubic2d.default(x, [6, 8], False),
    R(1, 2, 3, 4),
    rtol=1e-4,
)
direct("upsample_linear1d.default", lambda x: A.upsample_linear1d.default(x, [7], True), R(1, 2, 4))
direct("upsample_nearest1d.default", lambda x: A.upsample_nearest1d.default(x, [7]), R(1, 2, 4))
direct(
    "upsample_nearest3d.default",
    lambda x: A.upsample_nearest3d.default(x, [4, 5, 2]),
    R(1, 1, 2, 3, 2),
)
direct(
    "upsample_trilinear3d.default",
    lambda x: A.upsample_trilinear3d.default(x, [4, 5, 2], False),
    R(1, 1, 2, 3, 2),
)
direct("var.default", lambda x: A.var.default(x, False), X)
direct("where.Scalar", lambda c: A.where.Scalar(c, 1.0, 0.0), B(3, 4))
direct("where.ScalarOther", lambda c, x: A.where.ScalarOther(c, x, -1.0), B(3, 4), X)
direct("where.ScalarSelf", lambda c, x: A.where.ScalarSelf(c, -1.0, x), B(3, 4), X)
direct("xlogy.Scalar_Other", lambda x: A.xlogy.Scalar_Other(x, 2.0), X)
direct("xlogy.Scalar_Self", lambda x: A.xlogy.Scalar_Self(2.0, x), R(3, 4, lo=0.1, hi=2))
direct("view.dtype", lambda x: A.view.dtype(x, torch.float32) * 2, X)
direct("to.dtype", lambda x: A.to.dtype(x, torch.float64), X)
direct("to.other", lambda x, y: A.to.other(x, y), X, I(2))
direct("type_as.default", lambda x, y: A.type_as.default(x, y), X, I(2))
direct("relu6.default", lambda x: A.relu6.default(x), R(3, 4, lo=-3, hi=9))
direct("selu.default", lambda x: A.selu.default(x), X)
direct("rrelu.default", lambda x: A.rrelu.default(x), X)
direct("cdist.default", lambda x, y: A.cdist.default(x, y), R(3, 2), R(4, 2), rtol=1e-4)
direct("pdist.default", lambda x: A.pdist.default(x), R(4, 2), rtol=1e-4)
direct("inner.default", lambda x, y: A.inner.default(x, y), R(3, 4), R(2, 4), rtol=1e-4)
direct("vdot.default", lambda x, y: A.vdot.default(x, y), R(4), R(4), rtol=1e-4)
direct("ger.default", lambda x, y: A.ger.default(x, y), R(3), R(4))
direct("fix.default", lambda x: A.fix.default(x), X)
direct("dropout.default", lambda x: A.dropout.default(x, 0.5, False), X)
direct("feature_dropout.default", lambda x: A.feature_dropout.default(x, 0.5, False), X)
direct("alpha_dropout.default", lambda x: A.alpha_dropout.default(x, 0.5, False), X)
direct("feature_alpha_dropout.default", lambda x: A.feature_alpha_dropout.default(x, 0.5, False), X)
direct("empty_like.default", lambda x: A.empty_like.default(x).zero_(), X)
direct("new_empty.default", lambda x: A.new_empty.default(x, [2]).fill_(3.0), X)
direct("eye.default", lambda x: x + A.eye.default(3), R(3, 3))
direct("concat.default", lambda x, y: A.concat.default([x, y]), X, X)
direct("concatenate.default", lambda x, y: A.concatenate.default([x, y], 1), X, X)
direct("broadcast_to.default", lambda x: A.broadcast_to.default(x, [2, 3, 4]), R(3, 1))
direct("clip.default", lambda x: A.clip.default(x, -0.5, 0.5), X)
direct("clip.Tensor", lambda x, lo: A.clip.Tensor(x, lo), X, R(4))
direct("contiguous.default", lambda x: A.contiguous.default(x) + 1, X)
direct("lift_fresh_copy.default", lambda x: x + A.lift_fresh_copy.default(torch.tensor(2.0)), X)
direct("split.sizes", lambda x: A.split.sizes(x, [3, 4], 1), R(2, 7))
direct("movedim.intlist", lambda x: A.movedim.intlist(x, [0, 1], [2, 0]), R(2, 3, 4))
direct("moveaxis.int", lambda x: A.moveaxis.int(x, 0, 1), R(2, 3, 4))
direct("moveaxis.intlist", lambda x: A.moveaxis.intlist(x, [0], [2]), R(2, 3, 4))
direct("swapaxes.default", lambda x: A.swapaxes.default(x, 0, 2), R(2, 3, 4))
direct("swapdims.default", lambda x: A.swapdims.default(x, 0, 2), R(2, 3, 4))
direct("numpy_T.default", lambda x: A.numpy_T.default(x), R(2, 3, 4))
direct("rand.generator", lambda x: A.rand.generator([3], generator=None) + x, R(3), compare="shape")
direct(
    "randn.generator", lambda x: A.randn.generator([3], generator=None) + x, R(3), compare="shape"
)
direct(
    "randperm.generator",
    lambda x: A.randperm.generator(5, generator=None) + x * 0,
    I(5),
    compare="sorted",
)
direct("uniform.default", lambda x: A.uniform.default(x, -1.0, 2.0), X, compare="shape")
direct(
    "_scaled_dot_product_flash_attention_for_cpu.default",
    lambda q, k, v: A._scaled_dot_product_flash_attention_for_cpu.default(q, k, v)[0],
    R(1, 2, 4, 8),
    R(1, 2, 5, 8),
    R(1, 2, 5, 8),
    rtol=1e-4,
)
direct(
    "grid_sampler.default",
    lambda x, g: A.grid_sampler.default(x, g, 0, 0, False),
    R(1, 2, 5, 6),
    R(1, 4, 3, 2, lo=-1.1, hi=1.1),
    rtol=1e-4,
)
direct(
    "conv1d.padding",
    lambda x, w: A.conv1d.padding(x, w, None, [1], "same"),
    R(1, 2, 7),
    R(3, 2, 4),
    rtol=1e-4,
)
direct(
    "conv3d.padding",
    lambda x, w: A.conv3d.padding(x, w, None, [1], "valid"),
    R(1, 2, 4, 4, 4),
    R(3, 2, 2, 2, 2),
    rtol=1e-4,
)
direct("item.default", lambda x: x * A.item.default(x[1]), R(3))
direct("std.default", lambda x: A.std.default(x, False), X)
direct("to.dtype_layout", lambda x: A.to.dtype_layout(x, dtype=torch.float64), X)
direct(
    "to.device", lambda x: A.to.device(x, torch.device("cpu"), torch.int32), R(3, 4, lo=-4, hi=4)
)
direct("detach_.default", lambda x: x + torch.tensor([1.0, 2.0, 3.0, 4.0]), X)

# -- torch.fft (complex results come back as complex64) -----------------------------------------
direct(
    "_fft_r2c.default", lambda x: torch.fft.rfft(x), R(3, 8), decomposed=True, rtol=1e-4, atol=1e-5
)
direct(
    "_fft_r2c.default",
    lambda x: torch.fft.rfft2(x, norm="ortho").abs(),
    R(2, 6, 5),
    decomposed=True,
    rtol=1e-4,
    atol=1e-5,
    name="rfft2_abs",
)
direct(
    "_fft_r2c.default",
    lambda x: torch.fft.fft(x, norm="forward"),
    R(2, 7),
    decomposed=True,
    rtol=1e-4,
    atol=1e-5,
    name="fft_real_input",
)
direct(
    "_fft_c2r.default",
    lambda x: torch.fft.irfft(torch.fft.rfft(x)),
    R(3, 8),
    decomposed=True,
    rtol=1e-4,
    atol=1e-5,
)
direct(
    "_fft_c2r.default",
    lambda x: torch.fft.irfft(torch.fft.rfft(x), n=9),
    R(3, 9),
    decomposed=True,
    rtol=1e-4,
    atol=1e-5,
    name="irfft_odd",
)
direct(
    "_fft_c2r.default",
    lambda x: torch.fft.irfftn(torch.fft.rfftn(x)),
    R(2, 4, 6),
    decomposed=True,
    rtol=1e-4,
    atol=1e-5,
    name="irfftn",
)
direct(
    "_fft_c2c.default",
    lambda x: torch.fft.ifft(torch.fft.fft(x) * 2.0).real,
    R(2, 6),
    decomposed=True,
    rtol=1e-4,
    atol=1e-5,
)
direct(
    "view_as_real.default",
    lambda x: torch.view_as_real(torch.fft.rfft(x)),
    R(2, 6),
    rtol=1e-4,
    atol=1e-5,
)
direct(
    "view_as_complex.default",
    lambda x: torch.view_as_real(torch.view_as_complex(x) * torch.view_as_complex(x)),
    R(3, 2),
    rtol=1e-5,
)
direct("angle.default", lambda x: torch.view_as_complex(x).angle(), R(3, 4, 2), rtol=1e-5)
direct("imag.default", lambda x: torch.fft.rfft(x).imag * 1.0, R(2, 6), rtol=1e-4, atol=1e-5)
