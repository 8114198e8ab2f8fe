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

`KERNELS` maps op names to generators. `BOUNDED_KERNELS` maps ops whose output shape depends on
input values (non_max_suppression) to (bound, emit): see relay_core.backend.kernels.bounded.
"""

from __future__ import annotations

from .bounded import BOUNDED_KERNELS
from .common import Epilogue, KernelInfo
from .conv import emit_conv1d, emit_conv2d, emit_conv3d
from .conv_transpose import conv_transpose_kernels
from .gemm_ops import emit_batch_matmul, emit_dense, emit_matmul
from .pool import pool_kernels
from .softmax import softmax_kernels
from .vision import vision_kernels
from .vision_grad import vision_grad_kernels

KERNELS: dict = {
    "nn.dense": emit_dense,
    "nn.matmul": emit_matmul,
    "nn.batch_matmul": emit_batch_matmul,
    "nn.conv1d": emit_conv1d,
    "nn.conv2d": emit_conv2d,
    "nn.conv3d": emit_conv3d,
    **conv_transpose_kernels(),
    **pool_kernels(),
    **softmax_kernels(),
    **vision_kernels(),
    **vision_grad_kernels(),
}

__all__ = ["KERNELS", "BOUNDED_KERNELS", "KernelInfo", "Epilogue"]
