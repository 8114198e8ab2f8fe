"""Hand-written LLVM kernels for opaque operators (GEMM, convolution, pooling, softmax, ...).

Each generator has the signature

    emit(llmod, name, in_types, out_types, attrs, epilogue=None, const_inputs=()) -> KernelInfo

and adds `void name(T* in0, ..., T* out0, ..., E* extra0, ..., i32 nthreads)` to `llmod`, over
contiguous row-major buffers of the (static) types given. `attrs` is the op's attrs dataclass (or
a dict, or None for defaults). `const_inputs` names inputs that are compile-time constants: the
kernel may then read them in a layout of its own, and `KernelInfo.prepack[i]` maps the constant's
numpy value to that layout (apply it once at compile time). `epilogue` is fused into the output:
a callable `f(builder, value, indices) -> value`, or an `Epilogue(fn, extra_types)` whose
`fn(builder, value, indices, extra_ptrs)` reads extra buffers passed after the outputs. `value`
is a scalar in the output's compute type (float for float16) or an <8 x float> vector whose
lanes are consecutive elements of the output's last axis; `indices` are the i64 multi-index of
the (first) element in the output's shape. It is called exactly once per output element, after
the element's final value is known, possibly from several threads at once.

Each op names its generator in its declaration, lazily: `OpDef.kernel =
Kernel("relay_core.backend.kernels.conv:emit_conv2d")`, or a generator factory with the variant's
parameters (`Kernel("relay_core.backend.kernels.pool:emit_pool", "max", 2)`); there is no table
from op names to kernels. Ops whose output shape depends on input values have bounded kernels:
see relay_core.backend.kernels.bounded.
"""

from __future__ import annotations

from .common import Epilogue, KernelInfo

__all__ = ["KernelInfo", "Epilogue"]
