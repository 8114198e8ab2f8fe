"""Ops of TVM's Relay that its passes and printers produce (issue 18): layout_transform,
nn.batch_flatten, and the lowered-form ops TVM prints after its device and memory passes
(on_device, device_copy, vm.reshape_tensor, memory.alloc_tensor), so that such text parses,
typechecks and runs. There is one device here: placement ops are the identity.
(`call_lowered(f, (args), ...)` is read by the parser as the call `f(args)`.)
"""

from __future__ import annotations

import re

import numpy as np

from ..errors import OpTypeError
from ..ir import dtype as dt
from ..ir.types import Any, GlobalTypeVar, TensorType, TupleType, TypeCall
from . import relations as R
from .factories import random_array
from .registry import OpDef, OpPattern, Rule, Sample, attrs, declare, register

# -- layout_transform ---------------------------------------------------------------------------

_AXIS_RE = re.compile(r"(\d*)([A-Za-z])")


def parse_layout(layout: str) -> list[tuple[str, int]]:
    """`NCHW16c` -> [("N", 0), ("C", 0), ("H", 0), ("W", 0), ("c", 16)]: primal axes are upper
    case; a lower-case axis is a sub-axis of the primal one of its letter, with its factor."""
    out, pos = [], 0
    for m in _AXIS_RE.finditer(layout):
        if m.start() != pos:
            break
        pos = m.end()
        n, c = m.group(1), m.group(2)
        if c.isupper() and n:
            raise OpTypeError(f"layout {layout!r}: a primal axis {c} has no factor")
        if c.islower() and not (n and int(n) > 0):
            raise OpTypeError(f"layout {layout!r}: sub-axis {c} needs a positive factor")
        out.append((c, int(n) if n else 0))
    letters = [c for c, _ in out]
    if pos != len(layout) or not out or len(set(letters)) != len(letters):
        raise OpTypeError(f"malformed layout {layout!r}: expected axes such as NCHW or NCHW4c")
    for c, _ in out:
        if c.islower() and c.upper() not in letters:
            raise OpTypeError(f"layout {layout!r}: sub-axis {c} without primal axis {c.upper()}")
    return out


def _factors(layout) -> dict[str, int]:
    return {c.upper(): f for c, f in layout if c.islower()}


def _plan(attrs, shape):
    """(src layout, dst layout, logical size per primal axis, output shape)."""
    src, dst = parse_layout(attrs.src_layout), parse_layout(attrs.dst_layout)
    prim = sorted(c for c, _ in src if c.isupper())
    if prim != sorted(c for c, _ in dst if c.isupper()):
        raise OpTypeError(
            f"layout_transform: {attrs.src_layout} and {attrs.dst_layout} have different axes"
        )
    if len(shape) != len(src):
        raise OpTypeError(
            f"layout_transform: layout {attrs.src_layout} needs rank {len(src)}, got {len(shape)}"
        )
    fs, fd = _factors(src), _factors(dst)
    logical: dict[str, object] = {}
    for (c, f), d in zip(src, shape):
        if c.islower() and isinstance(d, int) and d != f:
            raise OpTypeError(f"layout_transform: axis {f}{c} has size {d}")
        if c.isupper() and c in fs:
            logical[c] = d * fs[c] if isinstance(d, int) else Any
        elif c.isupper():
            logical[c] = d
    out = []
    for c, f in dst:
        if c.islower():
            out.append(f)
            continue
        n = logical[c]
        if isinstance(n, int) and c in fd:
            if n % fd[c]:
                raise OpTypeError(
                    f"layout_transform: axis {c} of size {n} does not split by {fd[c]}"
                )
            n //= fd[c]
        elif c in fd:
            n = Any
        out.append(n)
    return src, dst, tuple(out)


def _src_index(src, dst, out_index, mul, add, div, mod):
    """The source index of an output index (ints or tensor-expression indices)."""
    fs, fd = _factors(src), _factors(dst)
    pos = {c: i for i, (c, _) in enumerate(dst)}
    logical = {}
    for c, _ in dst:
        if c.isupper():
            v = out_index[pos[c]]
            if c in fd:
                v = add(mul(v, fd[c]), out_index[pos[c.lower()]])
            logical[c] = v
    idx = []
    for c, _ in src:
        if c.isupper():
            idx.append(div(logical[c], fs[c]) if c in fs else logical[c])
        else:
            idx.append(mod(logical[c.upper()], fs[c.upper()]))
    return tuple(idx)


@attrs
class LayoutTransformAttrs:
    src_layout: str = "NCHW"
    dst_layout: str = "NCHW"


def _layout_rel(args, a):
    x = R.tensor(args[0])
    _, _, shape = _plan(a, x.shape)
    return TensorType(shape, x.dtype)


def _layout_ref(xs, a):
    x = xs[0]
    src, dst, shape = _plan(a, x.shape)
    grid = np.indices(shape, dtype=np.int64) if shape else np.zeros((0,), np.int64)
    idx = _src_index(
        src,
        dst,
        tuple(grid),
        lambda u, f: u * f,
        lambda u, v: u + v,
        lambda u, f: u // f,
        lambda u, f: u % f,
    )
    return np.ascontiguousarray(x[idx])


def _layout_samples(rng):
    for dtype in ("float32", "int32"):
        for shape, s, d in [
            ((2, 3, 4, 5), "NCHW", "NHWC"),
            ((2, 8, 3, 3), "NCHW", "NCHW4c"),
            ((2, 2, 3, 3, 4), "NCHW4c", "NCHW"),
            ((2, 2, 3, 3, 4), "NCHW4c", "NHWC"),
            ((2, 4, 3, 3, 2), "NCHW2c", "NCHW4c"),
            ((3, 6), "NC", "CN"),
        ]:
            yield Sample([random_array(rng, shape, dtype)], {"src_layout": s, "dst_layout": d})


register(
    OpDef(
        "layout_transform",
        _layout_rel,
        _layout_ref,
        OpPattern.INJECTIVE,
        LayoutTransformAttrs,
        (1, 1),
        "data from src_layout to dst_layout (NCHW, NHWC, NCHW4c, ...), as in TVM",
        samples=_layout_samples,
    )
)
declare("layout_transform", lower=Rule("relay_core.te.lower_tvm_compat:_layout_transform"))


def _layout_grad(c, g, ctx):
    from ..ir.expr import call

    a = ctx.attrs
    return [call("layout_transform", g, src_layout=a.dst_layout, dst_layout=a.src_layout)]


declare("layout_transform", grad=_layout_grad)


# -- nn.batch_flatten ---------------------------------------------------------------------------


def _batch_flatten_rel(args, a):
    x = R.tensor(args[0])
    if x.ndim < 1:
        raise OpTypeError("nn.batch_flatten needs an input of rank >= 1")
    rest = 1
    for d in x.shape[1:]:
        rest = R.dim_mul(rest, d)
    return TensorType((x.shape[0], rest), x.dtype)


def _batch_flatten_samples(rng):
    for shape in [(2, 3, 4), (3,), (1, 2, 1, 5), (0, 3)]:
        yield Sample([random_array(rng, shape, "float32")])


register(
    OpDef(
        "nn.batch_flatten",
        _batch_flatten_rel,
        lambda xs, a: xs[0].reshape(xs[0].shape[0], int(np.prod(xs[0].shape[1:]))),
        OpPattern.INJECTIVE,
        None,
        (1, 1),
        "(N, d1, d2, ...) -> (N, d1 * d2 * ...)",
        samples=_batch_flatten_samples,
    )
)
declare("nn.batch_flatten", lower=Rule("relay_core.te.lower_tvm_compat:_batch_flatten"), view=True)


def _batch_flatten_grad(c, g, ctx):
    from ..ir.expr import call

    return [call("reshape_like", g, c.args[0])]


declare("nn.batch_flatten", grad=_batch_flatten_grad)


# -- placement: one device here, so the identity --------------------------------------------------


@attrs
class OnDeviceAttrs:
    virtual_device: str | None = None  # TVM's VirtualDevice, kept as its text
    constrain_body: bool = True
    constrain_result: bool = False
    device_type: int = 0  # older TVM


@attrs
class DeviceCopyAttrs:
    src_virtual_device: str | None = None
    dst_virtual_device: str | None = None
    src_dev_type: int = 0  # older TVM
    dst_dev_type: int = 0


def _identity_samples(rng):
    for shape, dtype in [((2, 3), "float32"), ((), "int32"), ((0, 2), "float32")]:
        yield Sample([random_array(rng, shape, dtype)])


for _name, _attrs, _doc in [
    ("on_device", OnDeviceAttrs, "TVM's placement annotation: the identity here"),
    ("device_copy", DeviceCopyAttrs, "TVM's copy between devices: the identity here"),
]:
    register(
        OpDef(
            _name,
            lambda args, a: args[0],
            lambda xs, a: xs[0],
            OpPattern.ELEMWISE,
            _attrs,
            (1, 1),
            _doc,
            samples=_identity_samples,
            type_identity=True,  # any value: the type checker unifies directly
            grad=lambda c, g, ctx: [g],
        )
    )


# -- the VM's memory ops --------------------------------------------------------------------------


@attrs
class VmShapeOfAttrs:
    dtype: str = "int64"


def _vm_shape_of_samples(rng):
    for shape in [(2, 3), (), (0, 4, 1)]:
        yield Sample([random_array(rng, shape, "float32")])


register(
    OpDef(
        "vm.shape_of",
        lambda args, a: TensorType((R.tensor(args[0]).ndim,), dt.check_dtype(a.dtype)),
        lambda xs, a: np.array(xs[0].shape, dt.to_numpy(a.dtype)),
        OpPattern.OPAQUE,
        VmShapeOfAttrs,
        (1, 1),
        "the VM's shape_of: the shape of a tensor as a 1-D tensor",
        shape_only=True,
        samples=_vm_shape_of_samples,
    )
)
declare("vm.shape_of", lower=Rule("relay_core.te.lower_misc:_shape_of"))


@attrs
class ReshapeTensorAttrs:
    newshape: tuple = ()


def _reshape_tensor_rel(args, a):
    x = R.tensor(args[0])
    R.tensor(args[1], "shape")
    shape = tuple(int(d) for d in a.newshape)
    n = 1
    for d in shape:
        n *= d
    if all(isinstance(d, int) for d in x.shape) and int(np.prod(x.shape)) != n:
        raise OpTypeError(f"vm.reshape_tensor: {x.shape} cannot be viewed as {shape}")
    return TensorType(shape, x.dtype)


def _reshape_tensor_samples(rng):
    for shape, new in [((2, 6), (3, 4)), ((4,), (2, 2)), ((2, 3), (6,))]:
        yield Sample(
            [random_array(rng, shape, "float32"), np.array(new, "int64")], {"newshape": new}
        )


register(
    OpDef(
        "vm.reshape_tensor",
        _reshape_tensor_rel,
        lambda xs, a: xs[0].reshape(tuple(a.newshape)),
        OpPattern.INJECTIVE,
        ReshapeTensorAttrs,
        (2, 2),
        "the VM's reshape: data viewed with the static `newshape` (the shape tensor agrees)",
        samples=_reshape_tensor_samples,
    )
)
declare("vm.reshape_tensor", lower=Rule("relay_core.te.lower_tvm_compat:_view"), view=True)


def _reshape_tensor_grad(c, g, ctx):
    from ..ir.expr import call

    return [call("reshape_like", g, c.args[0]), None]


declare("vm.reshape_tensor", grad=_reshape_tensor_grad)


@attrs
class AllocTensorAttrs:
    dtype: str = "float32"
    const_shape: tuple | None = None
    assert_shape: tuple | None = None


def _alloc_shape(a) -> tuple:
    shape = a.const_shape if a.const_shape is not None else a.assert_shape
    if shape is None:
        raise OpTypeError("memory.alloc_tensor needs const_shape or assert_shape")
    return tuple(int(d) for d in shape)


def _alloc_tensor_rel(args, a):
    R.tensor(args[1], "offset")
    R.tensor(args[2], "shape")
    return TensorType(_alloc_shape(a), dt.check_dtype(a.dtype))


def _alloc_tensor_samples(rng):
    storage = np.zeros(64, "uint8")
    for shape, dtype in [((2, 3), "float32"), ((4,), "int32")]:
        yield Sample(
            [storage, np.array(0, "int64"), np.array(shape, "int64")],
            {"dtype": dtype, "assert_shape": shape},
        )


register(
    OpDef(
        "memory.alloc_tensor",
        _alloc_tensor_rel,
        lambda xs, a: np.zeros(_alloc_shape(a), dt.to_numpy(a.dtype)),
        OpPattern.OPAQUE,
        AllocTensorAttrs,
        (3, 3),
        "the VM's allocation of a tensor in a storage: a fresh zeroed tensor here",
        stateful=True,
        samples=_alloc_tensor_samples,
    )
)
declare("memory.alloc_tensor", lower=Rule("relay_core.te.lower_tvm_compat:_alloc_tensor"))


# TVM's `extern type Storage`: a block of memory tensors are allocated in. Here a byte array.
STORAGE = TypeCall(GlobalTypeVar("Storage"), ())


@attrs
class AllocStorageAttrs:
    virtual_device: str | None = None
    dtype_hint: str = "float32"
    device_type: int = 0  # older TVM
    device_id: int = 0


def _alloc_storage_rel(args, a):
    R.tensor(args[0], "size")
    R.tensor(args[1], "alignment")
    return STORAGE


def _alloc_storage_samples(rng):
    yield Sample([np.array(64, "int64"), np.array(64, "int64")])


register(
    OpDef(
        "memory.alloc_storage",
        _alloc_storage_rel,
        lambda xs, a: np.zeros(int(xs[0]), np.uint8),
        OpPattern.OPAQUE,
        AllocStorageAttrs,
        (2, 2),
        "the VM's allocation of a storage (of type Storage): interpreted only",
        stateful=True,
        samples=_alloc_storage_samples,
    )
)
register(
    OpDef(
        "memory.kill",
        lambda args, a: TupleType(()),
        lambda xs, a: (),
        OpPattern.OPAQUE,
        None,
        (1, 1),
        "the VM's end of a tensor's or storage's lifetime: nothing here, returns ()",
        stateful=True,
        samples=_identity_samples,
    )
)

__all__ = ["STORAGE", "parse_layout"]

# -- how each op is computed (JAX lax style: declared beside the ops; a Rule / Kernel names a
# function of relay_core/te or relay_core/backend, imported on first use) ------------------
declare("on_device", lower=Rule("relay_core.te.lower_tvm_compat:_identity"), view=True)
declare("device_copy", lower=Rule("relay_core.te.lower_tvm_compat:_identity"), view=True)
