"""What every kernel generator shares: KernelInfo, epilogues, the kernel's signature, attrs.

A kernel is `void name(T* in0, ..., T* out0, ..., E* extra0, ..., i32 nthreads)` over contiguous
row-major buffers of static shape. `extra*` exist only for an `Epilogue` with `extra_types`.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import llvmlite.ir as ir
import numpy as np

from .llvm_util import (
    I32,
    as_i64,
    compute_type,
    for_range,
    i64,
    llvm_type,
    load_as,
    new_function,
    ptr,
    store_from,
    vload,
    vstore,
)


@dataclass
class KernelInfo:
    """What `emit` returns.

    func:    the emitted LLVM function.
    prepack: input index -> transform applied at compile time to that (constant) input; the
             kernel reads the transformed array instead. Only for inputs named in `const_inputs`.
    variant: the algorithm (and layout choice) the generator took, for generators with several
             (convolutions: ("strips",), ("winograd", transposed), ...); `prefer_variant` asks a
             generator for it again.
    """

    func: ir.Function
    prepack: dict[int, Callable[[np.ndarray], np.ndarray]] = field(default_factory=dict)
    variant: tuple | None = None
    # the elements between consecutive images (axis-0 elements) of output 0 when the kernel
    # honoured `output_image_stride`; None: the output is contiguous
    out_image_stride: int | None = None


_PREFERRED: contextvars.ContextVar[tuple | None] = contextvars.ContextVar("variant", default=None)


@contextlib.contextmanager
def _set_within(var: contextvars.ContextVar, value) -> Iterator[None]:
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


def prefer_variant(variant: tuple | None):
    """Within the block, generators take `variant` (a KernelInfo.variant) where it can serve the
    call: the scheduler uses it to give a batch-block kernel the per-element kernel's weight
    layout, so the module stores that constant once."""
    return _set_within(_PREFERRED, variant)


def preferred_variant() -> tuple | None:
    return _PREFERRED.get()


_IMAGE_STRIDE: contextvars.ContextVar[int | None] = contextvars.ContextVar("ys", default=None)


def output_image_stride(stride: int | None):
    """Within the block, generators that can write output 0 with `stride` elements between
    images (a part of a channel concatenation at batch > 1, written in place: each image's
    channels are a contiguous run of the result's image) do so and say it in
    KernelInfo.out_image_stride; the others write contiguously."""
    return _set_within(_IMAGE_STRIDE, stride)


def requested_image_stride() -> int | None:
    return _IMAGE_STRIDE.get()


@dataclass
class Epilogue:
    """An elementwise consumer fused into a kernel's output that reads extra buffers.

    fn(builder, value, indices, extra_ptrs) -> value, where extra_ptrs are pointers to the
    `extra_types` buffers; the kernel takes them as parameters after its outputs. A plain
    callable fn(builder, value, indices) is also accepted as an epilogue (no extra buffers).
    """

    fn: Callable
    extra_types: tuple = ()


class Epi:
    """Normalised epilogue: callable as ep(builder, value, indices, extras); falsy when absent."""

    def __init__(self, epilogue):
        self.spec = epilogue
        if epilogue is None:
            self.extra_types = ()
            self._fn = None
        elif isinstance(epilogue, Epilogue):
            self.extra_types = tuple(epilogue.extra_types)
            self._fn = epilogue.fn
        else:
            self.extra_types = ()
            self._fn = lambda b, v, idx, extras: epilogue(b, v, idx)

    def __bool__(self) -> bool:
        return self._fn is not None

    def invariant_from(self, k: int) -> bool:
        """The epilogue does not depend on output axes k and after (a bias and an activation
        depend on (image, channel) only): a kernel may then apply it to a run of elements that
        spans those axes, passing 0 as their indices. False when unknown (plain callables)."""
        check = getattr(getattr(self.spec, "fn", None), "invariant_from", None)
        return bool(check(k)) if check is not None else False

    def flat_from(self, k: int, extents) -> bool:
        """The epilogue reads output axes k.. (of these extents) only as one row-major run
        (EpilogueBuilder.flat_from): a kernel may pass position q of the flattened axes as
        indices (0, ..., 0, q). False when unknown."""
        if self.invariant_from(k):
            return True
        check = getattr(getattr(self.spec, "fn", None), "flat_from", None)
        return bool(check(k, extents)) if check is not None else False

    def axes_used(self) -> set[int] | None:
        """Positions of the output axes the epilogue's indices use; None when unknown."""
        check = getattr(getattr(self.spec, "fn", None), "axes_used", None)
        return set(check()) if check is not None else None

    def permuted(self, order) -> Epi | None:
        """The epilogue taking its output axes' indices in `order`, its vector lanes along the
        last of them (EpilogueBuilder.permuted); None when unknown (plain callables)."""
        perm = getattr(getattr(self.spec, "fn", None), "permuted", None)
        return Epi(Epilogue(perm(order), self.extra_types)) if perm is not None else None

    def __call__(self, b: ir.IRBuilder, value, indices, extras):
        if self._fn is None:
            return value
        out = self._fn(b, value, [as_i64(b, i) for i in indices], list(extras))
        if out.type != value.type:
            raise TypeError(f"epilogue returned {out.type}, expected {value.type}")
        return out


@dataclass
class KernelFn:
    """The emitted top-level function and its arguments, split by role."""

    fn: ir.Function
    b: ir.IRBuilder
    ins: list
    outs: list
    extras: list
    nthreads: ir.Value
    ep: Epi
    # elements between images of output 0 (generators that honour output_image_stride set it)
    ys: int | None = None


class WithEnv:
    """An epilogue called with a run-time-shaped kernel's extents (`env`) appended to its
    indices: the group's index expressions may read them."""

    def __init__(self, ep: Epi, env: list):
        self.ep, self.env = ep, list(env)

    def __bool__(self) -> bool:
        return bool(self.ep)

    def __call__(self, b, value, indices, extras):
        return self.ep(b, value, [*indices, *self.env], extras)


def kernel_function(llmod, name, in_types, out_types, epilogue=None, in_storage=None) -> KernelFn:
    """Declare `void name(in..., out..., extra..., i32 nthreads)`.

    `in_storage` may override an input's element type (e.g. prepacked panels stay float*).
    """
    ep = Epi(epilogue)
    in_lt = [llvm_type(t.dtype) for t in in_types]
    if in_storage:
        for k, t in in_storage.items():
            in_lt[k] = t
    args = [ptr(t) for t in in_lt]
    args += [ptr(llvm_type(t.dtype)) for t in out_types]
    args += [ptr(llvm_type(t.dtype)) for t in ep.extra_types]
    args.append(I32)
    fn, b = new_function(llmod, name, args)
    names = [f"in{i}" for i in range(len(in_types))] + [f"out{i}" for i in range(len(out_types))]
    names += [f"extra{i}" for i in range(len(ep.extra_types))] + ["nthreads"]
    for a, n in zip(fn.args, names):
        a.name = n
    ni, no = len(in_types), len(out_types)
    a = list(fn.args)
    return KernelFn(fn, b, a[:ni], a[ni : ni + no], a[ni + no : -1], a[-1], ep)


def attr(attrs, name: str, default):
    """An attribute from an attrs dataclass, a dict or None (then `default`)."""
    if attrs is None:
        return default
    if isinstance(attrs, dict):
        v = attrs.get(name, default)
    else:
        v = getattr(attrs, name, default)
    return default if v is None else v


def shape_of(t) -> tuple[int, ...]:
    shape = tuple(t.shape)
    if not all(isinstance(d, int) for d in shape):
        raise NotImplementedError(f"kernels need static shapes, got {shape}")
    return shape


def static_size(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


# Lanes per vector of epilogue_row: 16 (one zmm with AVX-512, two ymm otherwise), then one
# 8-lane step and scalars. A SiLU epilogue at 8 lanes took 0.75 ns per float, at 16 lanes
# 0.48 (Zen 4, 1 thread, data in L2): the sigmoid's 35 instructions per vector, not its
# arithmetic, were the limit. 8: the previous behaviour.
EPILOGUE_LANES = 16


def epilogue_row(
    b: ir.IRBuilder,
    ep: Epi,
    extras,
    p: ir.Value,
    length,
    prefix: Sequence,
    start=0,
    dtype: str = "float32",
) -> None:
    """Apply `ep` in place to p[0:length], a contiguous run of the output's last axis whose
    first element has multi-index (*prefix, start): EPILOGUE_LANES-wide vectors, an 8-wide
    one, then a scalar tail."""
    if not ep:
        return
    length = as_i64(b, length)
    start = as_i64(b, start)
    if dtype == "float32" and EPILOGUE_LANES == 16:
        nvec = b.and_(length, i64(~15))
        with for_range(b, 0, nvec, 16, name="ev") as j:
            v = ep(b, vload(b, p, j, 16), [*prefix, b.add(start, j)], extras)
            vstore(b, v, p, j)
        with b.if_then(b.icmp_signed(">=", b.sub(length, nvec), i64(8))):
            v = ep(b, vload(b, p, nvec), [*prefix, b.add(start, nvec)], extras)
            vstore(b, v, p, nvec)
        lo = b.and_(length, i64(~7))
    elif dtype == "float32":
        nvec = b.and_(length, i64(~7))
        with for_range(b, 0, nvec, 8, name="ev") as j:
            v = ep(b, vload(b, p, j), [*prefix, b.add(start, j)], extras)
            vstore(b, v, p, j)
        lo = nvec
    else:
        lo = i64(0)
    with for_range(b, lo, length, name="es") as j:
        v = ep(b, load_as(b, p, j, dtype), [*prefix, b.add(start, j)], extras)
        store_from(b, v, p, j, dtype)


def epilogue_plane(b, ep: Epi, extras, p, length, prefix: Sequence, ntrail: int) -> None:
    """Apply `ep` in place to p[0:length], a contiguous run spanning the output's last
    `ntrail` axes (whose indices are passed as 0): only for an epilogue invariant along them
    (ep.invariant_from); one vector loop over the whole run, a scalar tail at its end."""
    epilogue_row(b, ep, extras, p, length, [*prefix, *([0] * (ntrail - 1))], 0)


def value_type(dtype: str) -> ir.Type:
    """The LLVM type of the values an epilogue receives for an output of `dtype`."""
    return compute_type(dtype)


def epilogue_run(b, ep: Epi, extras, p, length, first_index: Sequence, dtype: str = "float32"):
    """Like epilogue_row, with the full multi-index of p[0] (empty for a scalar output)."""
    if not ep:
        return
    if not first_index:
        v = ep(b, load_as(b, p, 0, dtype), [], extras)
        store_from(b, v, p, 0, dtype)
        return
    epilogue_row(b, ep, extras, p, length, list(first_index[:-1]), first_index[-1], dtype)


def epilogue_block(b, ep: Epi, extras, y, start, count: int, shape: Sequence[int], dtype="float32"):
    """Apply `ep` to y[start : start + count] (flat, whole rows of the last axis of `shape`)."""
    if not ep:
        return
    if not shape:
        epilogue_run(b, ep, extras, y, 1, [], dtype)
        return
    last = int(shape[-1])
    if last == 0:
        return
    from .llvm_util import gep as _gep
    from .llvm_util import udiv_const, unravel

    start = as_i64(b, start)
    r0 = udiv_const(b, start, last)
    with for_range(b, 0, count // last, name="eb") as r:
        row = b.add(r0, r)
        prefix = unravel(b, row, list(shape[:-1])) if len(shape) > 1 else []
        p = _gep(b, y, b.mul(row, i64(last)))
        epilogue_row(b, ep, extras, p, last, prefix, 0, dtype)
