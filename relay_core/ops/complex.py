"""Complex tensors (used by the PyTorch frontend's torch.fft support): complex.make (from real and
imaginary parts), complex.real, complex.imag, complex.abs. Transforms themselves are built from
real matrix products by the frontend; these ops only carry results in and out of complex dtype."""

from __future__ import annotations

import numpy as np

from ..errors import OpTypeError
from ..ir.types import TensorType
from . import relations as R
from .factories import random_array
from .registry import OpDef, OpPattern, Rule, Sample, declare, register

_TO_COMPLEX = {"float32": "complex64", "float64": "complex128"}
_TO_REAL = {v: k for k, v in _TO_COMPLEX.items()}


def _make_rel(args, attrs):
    re, im = R.tensor(args[0], "real part"), R.tensor(args[1], "imaginary part")
    if re.dtype != im.dtype or re.dtype not in _TO_COMPLEX:
        raise OpTypeError(
            f"complex.make needs float32 or float64 parts of one dtype, got {re.dtype} and "
            f"{im.dtype}"
        )
    return TensorType(R.broadcast_shapes(re.shape, im.shape), _TO_COMPLEX[re.dtype])


def _make(xs, attrs):
    re, im = np.broadcast_arrays(*xs)
    out = np.empty(re.shape, dtype=_TO_COMPLEX[re.dtype.name])
    out.real, out.imag = re, im
    return out


def _part_rel(name):
    def rel(args, attrs):
        t = R.tensor(args[0])
        if t.dtype not in _TO_REAL:
            raise OpTypeError(f"{name} needs a complex64 or complex128 input, got {t.dtype}")
        return TensorType(t.shape, _TO_REAL[t.dtype])

    return rel


def _make_samples(rng):
    for dtype in ("float32", "float64"):
        for a, b in [((), ()), ((3,), (3,)), ((2, 4), (4,)), ((0, 2), (0, 2))]:
            yield Sample([random_array(rng, a, dtype), random_array(rng, b, dtype)])


def _part_samples(rng):
    for dtype in ("complex64", "complex128"):
        for shape in [(), (5,), (2, 3), (0, 4)]:
            re = rng.uniform(-3, 3, shape)
            im = rng.uniform(-3, 3, shape)
            yield Sample([(re + 1j * im).astype(dtype)])


register(
    OpDef(
        "complex.make",
        _make_rel,
        _make,
        OpPattern.BROADCAST,
        None,
        (2, 2),
        "complex.make(real, imag): a complex tensor (float32 -> complex64, float64 -> complex128)",
        samples=_make_samples,
    )
)
declare("complex.make", lower=Rule("relay_core.te.lower_signal:_complex_make"))
for _name, _fn in [("complex.real", np.real), ("complex.imag", np.imag), ("complex.abs", np.abs)]:
    register(
        OpDef(
            _name,
            _part_rel(_name),
            (lambda f: lambda xs, attrs: np.asarray(f(xs[0])).copy())(_fn),
            OpPattern.ELEMWISE,
            None,
            (1, 1),
            f"{_name}(z): the {_name.split('.')[1]} of a complex tensor, as a real tensor",
            samples=_part_samples,
        )
    )

# -- how each op is computed (JAX lax style: declared beside the ops; a Rule / Kernel names a
# function of relay_core/te or relay_core/backend, imported on first use) ------------------
declare("complex.real", lower=Rule("relay_core.te.lower_signal:_part", 0))
declare("complex.imag", lower=Rule("relay_core.te.lower_signal:_part", 1))
declare("complex.abs", lower=Rule("relay_core.te.lower_signal:_complex_abs"))
