"""TensorList ops (what RNN layers and tf.TensorArray emit) as stacked tensors.

A list of n elements of shape S is a tensor of shape (n, *S). Element dims unknown when the list
is reserved (a dynamic batch) start as 1 ("placeholder" dims) and broadcast to the real size at
the first write; the context remembers which dims are placeholders (`list_elems`), so a loop
carrying the list types them as `Any`. A list reserved with an unknown element rank is a
`PendingList` until its first write tells the element type (a While loop probes its body once
to learn it).
"""

from __future__ import annotations

import numpy as np

from relay_core.ir import Any, Expr, TensorType
from relay_core.ir import dtype as dt

from .table import TF
from .util import cast_to, refine, shape_dims


class PendingList:
    """A reserved list whose element type is not known yet (unknown element rank)."""

    def __init__(self, n, dtype: str):
        self.n = n  # Expr: the number of elements
        self.dtype = dtype
        self.item_type: TensorType | None = None  # set by a write seen while probing

    def __repr__(self) -> str:
        return f"PendingList({self.dtype}, item={self.item_type})"


def list_elems(ctx) -> dict:
    return ctx.memo.setdefault("list_elems", {})


def elem_dims(ctx, lst) -> tuple:
    """Element dims of a list: ints where known, None for placeholder dims."""
    info = list_elems(ctx).get(lst)
    if info is not None:
        return info
    shape = ctx.shape_of(lst)[1:]
    return tuple(d if isinstance(d, int) else None for d in shape)


def remember(ctx, lst, dims) -> Expr:
    list_elems(ctx)[lst] = tuple(dims)
    return lst


def list_type(ctx, lst) -> TensorType:
    """The type a loop variable holding `lst` gets: placeholder element dims become Any."""
    t = ctx.tensor_type(lst)
    dims = elem_dims(ctx, lst)
    return TensorType((t.shape[0],) + tuple(Any if d is None else d for d in dims), t.dtype)


def materialize(ctx, pending: PendingList, item_type: TensorType):
    """A real (placeholder-filled) list for a pending one, from the type of an element."""
    dims = tuple(d if isinstance(d, int) else None for d in item_type.shape)
    return _reserve(ctx, pending.n, dims, item_type.dtype)


def _reserve(ctx, n, dims, dtype: str):
    ph = tuple(1 if d is None else d for d in dims)
    nv = ctx.value(n)
    if nv is not None:
        out = ctx.call("zeros", shape=(int(nv.reshape(-1)[0]),) + ph, dtype=dtype)
    else:
        n64 = ctx.call("reshape", cast_to(ctx, n, "int64"), newshape=(1,))
        shape = ctx.call("concatenate", n64, ctx.const(np.asarray(ph, np.int64)), axis=0)
        out = ctx.call("dyn.zeros", shape, dtype=dtype)
        out = ctx.call("reshape", out, newshape=(-1,) + ph) if ph else out
    return remember(ctx, out, dims)


def _element_dims(ctx, element_shape):
    """Element dims from a TF element_shape tensor; None for an unknown rank."""
    dims = shape_dims(ctx, element_shape)
    if dims is None or ctx.ndim(element_shape) == 0:
        return None  # scalar -1: unknown rank
    return tuple(None if d is None or d < 0 else d for d in dims)


def _need_list(ctx, lst, what: str):
    if isinstance(lst, PendingList):
        if lst.item_type is None:
            raise ctx.error(f"{what} of a TensorList whose element shape is still unknown")
        return materialize(ctx, lst, lst.item_type)
    return lst


@TF.register("TensorListReserve")
def TensorListReserve(ctx, element_shape, num_elements, element_dtype="float32"):
    dims = _element_dims(ctx, element_shape)
    if dims is None:
        return PendingList(num_elements, element_dtype)
    return _reserve(ctx, num_elements, dims, element_dtype)


@TF.register("EmptyTensorList")
def EmptyTensorList(ctx, element_shape, max_num_elements, element_dtype="float32"):
    dims = _element_dims(ctx, element_shape)
    if dims is None:
        return PendingList(ctx.const(np.asarray(0, np.int32)), element_dtype)
    return _reserve(ctx, ctx.const(np.asarray(0, np.int32)), dims, element_dtype)


@TF.register("TensorListFromTensor")
def TensorListFromTensor(ctx, tensor, element_shape):
    return remember(ctx, tensor, elem_dims(ctx, tensor))


def _index_mask(ctx, lst, index):
    """(n, 1, ..., 1) bool: True at `index` along the list axis."""
    t = ctx.tensor_type(lst)
    n = t.shape[0]
    idt = ctx.dtype(index)
    if isinstance(n, int):
        pos = ctx.const(np.arange(n, dtype=dt.to_numpy(idt)))
    else:
        size = ctx.call(
            "take", ctx.call("shape_of", lst, dtype=idt), ctx.const(np.asarray(0, np.int64)), axis=0
        )
        zero, one = (ctx.const(np.asarray(v, dt.to_numpy(idt))) for v in (0, 1))
        pos = ctx.call("arange", zero, size, one, dtype=idt)
    pos = ctx.call("reshape", pos, newshape=(-1,) + (1,) * (t.ndim - 1))
    return ctx.call("equal", pos, ctx.call("reshape", index, newshape=()))


@TF.register("TensorListSetItem")
def TensorListSetItem(
    ctx, lst, index, item, element_dtype=None, resize_if_index_out_of_bounds=False
):
    if isinstance(lst, PendingList):
        if lst.item_type is None:
            lst.item_type = ctx.tensor_type(item)
        lst = materialize(ctx, lst, ctx.tensor_type(item))
    dims = elem_dims(ctx, lst)
    if resize_if_index_out_of_bounds:
        lst = _resize_to(ctx, lst, index)
    if None not in dims and not resize_if_index_out_of_bounds:
        idx = ctx.call("reshape", index, newshape=(1, 1))
        out = ctx.call("scatter_nd", lst, idx, ctx.call("expand_dims", item, axis=0), mode="update")
        return remember(ctx, out, dims)
    # Placeholder dims broadcast to the item's dims.
    new = ctx.call("expand_dims", item, axis=0)
    out = ctx.call("where", _index_mask(ctx, lst, index), new, lst)
    return remember(ctx, out, dims)


def _resize_to(ctx, lst, index):
    """`lst` grown with zero elements so that `index` is inside it."""
    dims = elem_dims(ctx, lst)
    shape = ctx.call("shape_of", lst, dtype="int64")
    n = ctx.call("strided_slice", shape, begin=(0,), end=(1,))
    need = ctx.call(
        "add",
        ctx.call("reshape", cast_to(ctx, index, "int64"), newshape=(1,)),
        ctx.const(np.asarray([1], np.int64)),
    )
    extra = ctx.call("maximum", ctx.call("subtract", need, n), ctx.const(np.asarray([0], np.int64)))
    rest = ctx.call("strided_slice", shape, begin=(1,), end=(2**31 - 1,))
    pad = ctx.call("dyn.zeros", ctx.call("concatenate", extra, rest, axis=0), dtype=ctx.dtype(lst))
    out = refine(ctx, ctx.call("concatenate", lst, pad, axis=0), [None, *dims])
    return remember(ctx, out, dims)


@TF.register("TensorListGetItem")
def TensorListGetItem(ctx, lst, index, element_shape, element_dtype=None):
    lst = _need_list(ctx, lst, "TensorListGetItem")
    return ctx.call("take", lst, ctx.call("reshape", index, newshape=()), axis=0, mode="fast")


@TF.register("TensorListStack")
def TensorListStack(ctx, lst, element_shape, element_dtype=None, num_elements=-1):
    return _need_list(ctx, lst, "TensorListStack")


@TF.register("TensorListGather")
def TensorListGather(ctx, lst, indices, element_shape, element_dtype=None):
    lst = _need_list(ctx, lst, "TensorListGather")
    return ctx.call("take", lst, indices, axis=0, mode="fast")


@TF.register("TensorListLength")
def TensorListLength(ctx, lst):
    if isinstance(lst, PendingList):
        return cast_to(ctx, lst.n, "int32")
    return ctx.call(
        "take", ctx.call("shape_of", lst, dtype="int32"), ctx.const(np.asarray(0, np.int64)), axis=0
    )


@TF.register("TensorListElementShape")
def TensorListElementShape(ctx, lst, shape_type="int32"):
    lst = _need_list(ctx, lst, "TensorListElementShape")
    return ctx.call(
        "strided_slice", ctx.call("shape_of", lst, dtype=shape_type), begin=(1,), end=(2**31 - 1,)
    )


def _grow_to(ctx, lst, item):
    """`lst` with placeholder element dims broadcast to the item's dims."""
    dims = elem_dims(ctx, lst)
    if None not in dims:
        return lst
    n = ctx.call("strided_slice", ctx.call("shape_of", lst), begin=(0,), end=(1,))
    shape = ctx.call("concatenate", n, ctx.call("shape_of", item), axis=0)
    return ctx.call("dyn.broadcast_to", lst, shape)


@TF.register("TensorListPushBack")
def TensorListPushBack(ctx, lst, item, element_dtype=None):
    if isinstance(lst, PendingList):
        lst.item_type = lst.item_type or ctx.tensor_type(item)
        lst = materialize(ctx, lst, ctx.tensor_type(item))
    dims = elem_dims(ctx, lst)
    grown = _grow_to(ctx, lst, item)
    out = ctx.call("concatenate", grown, ctx.call("expand_dims", item, axis=0), axis=0)
    return remember(ctx, out, dims)


@TF.register("TensorListPopBack")
def TensorListPopBack(ctx, lst, element_shape, element_dtype=None):
    lst = _need_list(ctx, lst, "TensorListPopBack")
    dims = elem_dims(ctx, lst)
    rest = ctx.call("strided_slice", lst, begin=(0,), end=(-1,))
    last = ctx.call("take", lst, ctx.const(np.asarray(-1, np.int64)), axis=0, mode="fast")
    return [remember(ctx, rest, dims), last]


@TF.register("TensorListScatterIntoExistingList")
def TensorListScatterIntoExistingList(ctx, lst, tensor, indices, element_dtype=None):
    lst = _need_list(ctx, lst, "TensorListScatterIntoExistingList")
    dims = elem_dims(ctx, lst)
    lst = _grow_to(ctx, lst, ctx.call("take", tensor, ctx.const(np.asarray(0, np.int64)), axis=0))
    idx = ctx.call("reshape", indices, newshape=(1, -1))
    return remember(ctx, ctx.call("scatter_nd", lst, idx, tensor, mode="update"), dims)


@TF.register("TensorListConcatV2")
def TensorListConcatV2(ctx, lst, element_shape, leading_dims, element_dtype=None):
    lst = _need_list(ctx, lst, "TensorListConcatV2")
    shape = ctx.shape_of(lst)
    if len(shape) < 2 or not all(isinstance(d, int) for d in shape[2:]):
        raise ctx.error("TensorListConcatV2 needs elements of rank >= 1 with static inner dims")
    out = ctx.call("reshape", lst, newshape=(-1,) + tuple(shape[2:]))
    sizes = ctx.call(
        "take",
        ctx.call("shape_of", lst, dtype="int64"),
        ctx.const(np.asarray([1], np.int64)),
        axis=0,
    )
    n = ctx.call("strided_slice", ctx.call("shape_of", lst, dtype="int64"), begin=(0,), end=(1,))
    return [out, ctx.call("dyn.broadcast_to", sizes, n)]
