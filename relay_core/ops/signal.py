"""Signal ops with ONNX semantics: dft, stft, mel_weight_matrix.

Complex values use ONNX's real layout: a trailing axis of 2 (real, imaginary); a real signal
may have a trailing axis of 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import EvalError, OpTypeError
from ..ir import dtype as dt
from ..ir.types import Any, TensorType
from . import relations as R
from .factories import check_kind, random_array
from .registry import OpDef, OpPattern, Rule, Sample, declare, register


def _complex(x: np.ndarray) -> np.ndarray:
    """(..., 1|2) real layout -> complex (...), in the input's precision (numpy's FFT runs
    single precision for complex64, as ONNX's runtimes do)."""
    ct = np.complex128 if x.dtype == np.float64 else np.complex64
    x = x.astype(np.float64 if ct is np.complex128 else np.float32)
    if x.shape[-1] == 1:
        return x[..., 0].astype(ct)
    return (x[..., 0] + 1j * x[..., 1]).astype(ct)


def _real_layout(z: np.ndarray, dtype) -> np.ndarray:
    return np.stack([z.real, z.imag], axis=-1).astype(dtype)


def _scalar_int(x) -> int:
    return int(np.asarray(x).reshape(-1)[0])


# -- dft -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DftAttrs:
    axis: int = -2  # an axis of the signal (the trailing real / complex axis excluded)
    inverse: bool = False
    onesided: bool = False


def _dft_axis(ndim: int, axis: int) -> int:
    if not -ndim <= axis < ndim:
        raise OpTypeError(f"dft: axis {axis} is out of range for rank {ndim}")
    a = axis + ndim if axis < 0 else axis
    if a == ndim - 1:
        raise OpTypeError("dft: the axis cannot be the trailing (real, imaginary) axis")
    return a


def _dft_rel(args, attrs):
    x = R.tensor(args[0], "signal")
    check_kind(x, "float", "dft")
    if x.ndim < 2 or R.dim_eq(x.shape[-1], 1) is False and R.dim_eq(x.shape[-1], 2) is False:
        raise OpTypeError(f"dft: the signal's last axis must be 1 or 2, got {x.shape}")
    if len(args) > 2:  # the axis is a tensor: only the rank is known
        R.tensor(args[2], "axis")
        shape = (Any,) * (x.ndim - 1) + (1 if attrs.inverse and attrs.onesided else 2,)
        return TensorType(shape, x.dtype)
    a = _dft_axis(x.ndim, attrs.axis)
    n = x.shape[a]
    if len(args) > 1:
        R.tensor(args[1], "dft_length")
        n = Any
    elif attrs.inverse and attrs.onesided:
        n = 2 * (n - 1) if isinstance(n, int) else Any
    if attrs.onesided and not attrs.inverse:
        n = n // 2 + 1 if isinstance(n, int) else Any
    last = 1 if attrs.inverse and attrs.onesided else 2
    shape = list(x.shape)
    shape[a] = n
    shape[-1] = last
    return TensorType(tuple(shape), x.dtype)


def _dft_ref(xs, attrs):
    x = xs[0]
    axis = _scalar_int(xs[2]) if len(xs) > 2 else attrs.axis
    try:
        a = _dft_axis(x.ndim, axis)
    except OpTypeError as e:
        raise EvalError(str(e)) from None
    z = _complex(x)
    if len(xs) > 1 and np.asarray(xs[1]).size:
        n = _scalar_int(xs[1])
    elif attrs.inverse and attrs.onesided:
        n = 2 * (x.shape[a] - 1)
    else:
        n = x.shape[a]
    if n <= 0:
        raise EvalError(f"dft: the length must be positive, got {n}")
    if attrs.inverse:
        if attrs.onesided:
            return np.fft.irfft(z, n=n, axis=a)[..., None].astype(x.dtype)
        return _real_layout(np.fft.ifft(z, n=n, axis=a), x.dtype)
    out = np.fft.fft(z, n=n, axis=a)
    if attrs.onesided:
        out = np.take(out, np.arange(n // 2 + 1), axis=a)
    return _real_layout(out, x.dtype)


def _dft_samples(rng):
    real = random_array(rng, (2, 6, 1), "float32")
    cplx = random_array(rng, (2, 5, 2), "float32")
    yield Sample([real])
    yield Sample([real], {"onesided": True})
    yield Sample([cplx], {"inverse": True})
    yield Sample([random_array(rng, (3, 4, 2), "float64")], {"axis": 0})
    yield Sample([cplx, np.array(8, np.int64)])
    yield Sample([random_array(rng, (1, 4, 2), "float32")], {"inverse": True, "onesided": True})
    yield Sample([cplx, np.zeros(0, np.int64), np.array(0, np.int64)])


register(
    OpDef(
        "dft",
        _dft_rel,
        _dft_ref,
        OpPattern.OPAQUE,
        DftAttrs,
        (1, 3),
        "dft(signal[, length[, axis]]): discrete Fourier transform along `axis` (ONNX "
        "DFT-20; an empty length means the axis' size, an axis tensor overrides the "
        "attribute); inverse and one-sided variants",
        samples=_dft_samples,
    )
)
declare(
    "dft",
    lower=Rule("relay_core.te.lower_signal:_dft"),
    grad=Rule("relay_core.ops.grads_misc:_g_dft"),
)


# -- stft ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StftAttrs:
    onesided: bool = True


def _stft_rel(args, attrs):
    x = R.tensor(args[0], "signal")
    check_kind(x, "float", "stft")
    if x.ndim != 3:
        raise OpTypeError(f"stft: the signal must be (batch, length, 1|2), got {x.shape}")
    for i, what in ((1, "frame_step"), (2, "window"), (3, "frame_length")):
        if len(args) > i:
            R.tensor(args[i], what)
    return TensorType((x.shape[0], Any, Any, 2), x.dtype)


def _stft_ref(xs, attrs):
    x = xs[0]
    step = _scalar_int(xs[1])
    window = xs[2] if len(xs) > 2 and np.asarray(xs[2]).size else None
    if len(xs) > 3 and np.asarray(xs[3]).size:
        length = _scalar_int(xs[3])
    else:
        length = window.shape[0] if window is not None else x.shape[1]
    if window is None:
        window = np.ones(length, x.dtype)
    if step <= 0 or length <= 0 or len(window) != length:
        raise EvalError(f"stft: invalid frame step {step} / length {length} / window")
    frames = 1 + (x.shape[1] - length) // step
    z = _complex(x)
    out = []
    for f in range(max(frames, 0)):
        seg = z[:, f * step : f * step + length]
        seg = seg * window.astype(seg.real.dtype)
        spec = np.fft.fft(seg, n=length, axis=1)
        if attrs.onesided:
            spec = spec[:, : length // 2 + 1]
        out.append(spec)
    bins = length // 2 + 1 if attrs.onesided else length
    res = np.stack(out, axis=1) if out else np.zeros((x.shape[0], 0, bins), np.complex128)
    return _real_layout(res, x.dtype)


def _stft_samples(rng):
    x = random_array(rng, (1, 16, 1), "float32")
    yield Sample([x, np.array(4, np.int64), np.hanning(8).astype(np.float32)])
    yield Sample(
        [x, np.array(3, np.int64), np.zeros(0, np.float32), np.array(5, np.int64)],
        {"onesided": False},
    )


register(
    OpDef(
        "stft",
        _stft_rel,
        _stft_ref,
        OpPattern.OPAQUE,
        StftAttrs,
        (2, 4),
        "stft(signal, frame_step[, window[, frame_length]]): short-time Fourier "
        "transform (ONNX STFT; an empty window means none)",
        samples=_stft_samples,
    )
)
declare(
    "stft",
    lower=Rule("relay_core.te.lower_signal:_stft"),
    decompose=Rule("relay_core.ops.grads_misc:_stft"),
)


# -- mel_weight_matrix -------------------------------------------------------------------------
@dataclass(frozen=True)
class MelAttrs:
    dtype: str = "float32"


def _mel_rel(args, attrs):
    for i, what in enumerate(
        ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz")
    ):
        R.tensor(args[i], what)
    return TensorType((Any, Any), attrs.dtype)


def mel_weight_matrix(num_mel_bins, dft_length, sample_rate, lower, upper) -> np.ndarray:
    """Triangular filters from linear frequency bins to mel bins (ONNX MelWeightMatrix)."""
    n_spec = dft_length // 2 + 1
    k = np.arange(num_mel_bins + 2)

    def to_mel(f):
        return 2595.0 * np.log10(1.0 + f / 700.0)

    lo, hi = to_mel(lower), to_mel(upper)
    # ONNX spaces num_mel_bins + 2 edges by (hi - lo) / (num_mel_bins + 2).
    mel = lo + k * (hi - lo) / (num_mel_bins + 2)
    hz = 700.0 * (10.0 ** (mel / 2595.0) - 1.0)
    edges = (((dft_length + 1) * hz) // sample_rate).astype(np.int64)
    out = np.zeros((n_spec, num_mel_bins))
    for i in range(num_mel_bins):
        left, center, right = edges[i], edges[i + 1], edges[i + 2]
        if center == left:
            out[center, i] = 1.0
        else:
            j = np.arange(left, center + 1)
            out[j, i] = (j - left) / (center - left)
        if right > center:
            j = np.arange(center, right)
            out[j, i] = (right - j) / (right - center)
    return out


def _mel_ref(xs, attrs):
    vals = [np.asarray(v).reshape(-1)[0] for v in xs]
    m = mel_weight_matrix(int(vals[0]), int(vals[1]), int(vals[2]), float(vals[3]), float(vals[4]))
    return m.astype(dt.to_numpy(attrs.dtype))


def _mel_samples(rng):
    yield Sample(
        [
            np.array(8, np.int64),
            np.array(16, np.int64),
            np.array(8192, np.int64),
            np.array(0, np.float32),
            np.array(4096, np.float32),
        ]
    )


register(
    OpDef(
        "mel_weight_matrix",
        _mel_rel,
        _mel_ref,
        OpPattern.OPAQUE,
        MelAttrs,
        (5, 5),
        "mel_weight_matrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, "
        "upper_edge_hertz): ONNX MelWeightMatrix",
        samples=_mel_samples,
        data_dependent_shape=True,
    )
)
declare(
    "mel_weight_matrix",
    lower=Rule("relay_core.te.lower_signal:_mel"),
    grad=Rule("relay_core.ops.grads_tensor:nondiff", "mel_weight_matrix"),
)
