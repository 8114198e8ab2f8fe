"""Signal processing: DFT, STFT, MelWeightMatrix (window functions convert through their
function bodies)."""

from __future__ import annotations

import numpy as np

from relay_core.ir import dtype as dt

from .dtypes import relay_dtype
from .table import converter
from .util import cast


@converter("DFT", 17)
def DFT_17(ctx, x, dft_length=None, *, axis=1, inverse=0, onesided=0):
    return _dft(ctx, x, dft_length, None, axis, inverse, onesided)


@converter("DFT", 20)
def DFT(ctx, x, dft_length=None, axis=None, *, inverse=0, onesided=0):
    return _dft(ctx, x, dft_length, axis, -2, inverse, onesided)


def _dft(ctx, x, length, axis_input, axis, inverse, onesided):
    if axis_input is not None and ctx.value(axis_input) is not None:
        axis, axis_input = ctx.ints(axis_input, "axis")[0], None
    args = [x]
    if length is not None:
        args.append(ctx.call("reshape", cast(ctx, length, "int64"), newshape=()))
    elif axis_input is not None:
        args.append(ctx.const(np.zeros(0, np.int64)))
    if axis_input is not None:
        args.append(ctx.call("reshape", cast(ctx, axis_input, "int64"), newshape=()))
    return ctx.call("dft", *args, axis=axis, inverse=bool(inverse), onesided=bool(onesided))


@converter("STFT", 17)
def STFT(ctx, x, frame_step, window=None, frame_length=None, *, onesided=1):
    args = [x, cast(ctx, frame_step, "int64")]
    if window is not None or frame_length is not None:
        args.append(
            window
            if window is not None
            else ctx.const(np.zeros(0, dtype=dt.to_numpy(ctx.dtype(x))))
        )
    if frame_length is not None:
        args.append(cast(ctx, frame_length, "int64"))
    return ctx.call("stft", *args, onesided=bool(onesided))


@converter("MelWeightMatrix", 17)
def MelWeightMatrix(
    ctx,
    num_mel_bins,
    dft_length,
    sample_rate,
    lower_edge_hertz,
    upper_edge_hertz,
    *,
    output_datatype=1,
):
    return ctx.call(
        "mel_weight_matrix",
        num_mel_bins,
        dft_length,
        sample_rate,
        lower_edge_hertz,
        upper_edge_hertz,
        dtype=relay_dtype(output_datatype),
    )
