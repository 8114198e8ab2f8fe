"""Lowerings that are not pure compute rules: scatter (ordered writes) and sorting (the C
runtime's stable argsort). They produce loop IR (`schedule.loop_op`) or runtime calls
(`schedule.extern`); ops name them in their declaration (`lower=Rule("relay_core.backend.
lower_loops:_sort")`) like the TE rules.
"""

from __future__ import annotations

from llvmlite import ir

from .. import te
from ..te import expr as E
from ..te.expr import Load, select
from ..te.lower_transform import ravel
from ..te.tensor import compute
from . import tir as T
from .codegen import I32, I64, VOID, storage_type
from .schedule import extern, loop_op


def _static(shape, op):
    if not all(isinstance(d, int) for d in shape):
        raise NotImplementedError(f"{op} with run-time dims")
    return tuple(shape)


def _dims(shape) -> tuple:
    """A shape whose run-time dims stay index expressions (loop extents may be expressions)."""
    return tuple(d if isinstance(d, int) else E.index(d) for d in shape)


def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _fix(v, n, mode: str = "fast"):
    """fast: negative indices count from the end, outside [-n, n) is a run-time error;
    strict: outside [0, n) is."""
    v = E.index(v)
    if mode == "strict":
        return E.check_index(v, n)
    return E.check_index(select(v < 0, v + n, v), n, v)


def _combine(mode: str, old, new):
    if mode in ("update", "none"):
        return new
    if mode == "add":
        return old + new
    if mode == "mul":
        return old * new
    if mode == "min":
        return E.min_(old, new)
    if mode == "max":
        return E.max_(old, new)
    raise NotImplementedError(f"scatter reduction {mode}")


def _copy(src: T.Buffer, dst: T.Buffer, n: int) -> T.Stmt:
    f = T.index_var("cp")
    kind = "parallel" if isinstance(n, int) and n >= (1 << 16) else "serial"
    return T.For(f, n, T.Store(dst, f, Load(src, f, src.dtype)), kind)


def _nest(shape, name):
    vs = [T.index_var(f"{name}{k}") for k in range(len(shape))]
    return vs, lambda body: T.loop_nest(list(zip(vs, shape)), body)


def _scatter_elements(inputs, attrs, out_type):
    data, idx, upd = inputs
    dshape = _dims(data.shape)
    ishape = _dims(idx.shape)
    ax = attrs.axis % len(dshape)

    def build(ins, outs):
        d, i, u = ins
        out = outs[0]
        vs, nest = _nest(ishape, "s")
        j = _fix(Load(i, ravel(vs, ishape), i.dtype), dshape[ax], attrs.index_mode)
        tgt = list(vs)
        tgt[ax] = j
        pos = ravel(tgt, dshape)
        val = _combine(
            attrs.reduction, Load(out, pos, out.dtype), Load(u, ravel(vs, ishape), u.dtype)
        )
        return T.seq(_copy(d, out, _size(dshape)), nest(T.Store(out, pos, val)))

    return loop_op("scatter_elements", [(dshape, data.dtype)], inputs, build)[0]


def _scatter_nd(inputs, attrs, out_type):
    data, idx, upd = inputs
    dshape = _dims(data.shape)
    ishape = _dims(idx.shape)
    ushape = _dims(upd.shape)
    m = ishape[0]
    if not isinstance(m, int):
        raise NotImplementedError("scatter_nd with a run-time index depth")
    ny = len(ishape) - 1

    def build(ins, outs):
        d, i, u = ins
        out = outs[0]
        vs, nest = _nest(ushape, "s")
        ys, rest = vs[:ny], vs[ny:]
        coords = [
            _fix(Load(i, ravel([E.index(k)] + ys, ishape), i.dtype), dshape[k], attrs.index_mode)
            for k in range(m)
        ]
        pos = ravel(coords + rest, dshape)
        val = _combine(attrs.mode, Load(out, pos, out.dtype), Load(u, ravel(vs, ushape), u.dtype))
        return T.seq(_copy(d, out, _size(dshape)), nest(T.Store(out, pos, val)))

    return loop_op("scatter_nd", [(dshape, data.dtype)], inputs, build)[0]


# -- sorting: the C runtime's stable argsort -------------------------------------------------------
_SORT_SUFFIX = {
    "float32": "f32",
    "float64": "f64",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "bool": "u8",
}


def argsort_positions(x: te.Tensor, axis: int, k: int, descending: bool) -> te.Tensor:
    """int64 positions along `axis` of the first k elements of a stable sort."""
    shape = _dims(x.shape)  # run-time dims: the extents are passed to the runtime's sort
    if x.dtype not in _SORT_SUFFIX:  # float16 / bfloat16 sort by their float32 values
        src = x
        x = compute(shape, lambda *i: E.cast("float32", src[i]), "sort_key")
    fn = f"relay_argsort_{_SORT_SUFFIX[x.dtype]}"
    outer = _size(shape[:axis])
    inner = _size(shape[axis + 1 :])
    n = shape[axis]
    oshape = shape[:axis] + (k,) + shape[axis + 1 :]

    def emit(llmod, name, epilogue=None):
        if name not in llmod.globals:
            elem = storage_type(x.dtype).as_pointer()
            ir.Function(
                llmod,
                ir.FunctionType(VOID, [elem, I64.as_pointer(), I64, I64, I64, I64, I32, I32]),
                name,
            )

    scalars = [
        E.index(outer),
        E.index(n),
        E.index(inner),
        E.index(k),
        E.as_expr(int(descending), "int32"),
    ]
    return extern(fn, [(oshape, "int64")], [x], emit, scalars)[0]


def _gather_along(x, pos, axis):
    return compute(pos.shape, lambda *i: x[i[:axis] + (pos[i],) + i[axis + 1 :]], "sorted")


def _argsort(inputs, attrs, out_type):
    x = inputs[0]
    axis = attrs.axis % x.ndim
    pos = argsort_positions(x, axis, x.shape[axis], not attrs.is_ascend)
    return compute(pos.shape, lambda *i: E.cast(out_type.dtype, pos[i]), "argsort")


def _sort(inputs, attrs, out_type):
    x = inputs[0]
    axis = attrs.axis % x.ndim
    pos = argsort_positions(x, axis, x.shape[axis], not attrs.is_ascend)
    return _gather_along(x, pos, axis)


def _topk(inputs, attrs, out_type):
    x = inputs[0]
    axis = attrs.axis % x.ndim
    k = attrs.k if attrs.k >= 1 else x.shape[axis]
    pos = argsort_positions(x, axis, k, not attrs.is_ascend)
    values = _gather_along(x, pos, axis)
    idx = compute(pos.shape, lambda *i: E.cast(attrs.dtype, pos[i]), "topk_idx")
    return {"both": (values, idx), "values": values, "indices": idx}[attrs.ret_type]


def _max_unpool(nd: int):
    def lower(inputs, attrs, out_type):
        data, ind = inputs
        oshape = _static(out_type.shape, "max_unpool")
        xshape = _static(data.shape, "max_unpool")
        ishape = _static(ind.shape, "max_unpool")
        total = _size(oshape)

        def build(ins, outs):
            x, i = ins
            out = outs[0]
            f = T.index_var("z")
            zero = T.For(
                f,
                total,
                T.Store(
                    out,
                    f,
                    E.as_expr(0, out.dtype) if out.dtype != "bool" else E.Const(False, "bool"),
                ),
            )
            vs, nest = _nest(xshape, "u")
            # indices broadcast to the data's shape
            off = len(xshape) - len(ishape)
            iv = [0 if d == 1 else vs[off + k] for k, d in enumerate(ishape)]
            pos = E.index(Load(i, ravel(iv, ishape), i.dtype))
            pos = E.max_(E.min_(pos, E.index(total - 1)), E.index(0))
            return T.seq(zero, nest(T.Store(out, pos, Load(x, ravel(vs, xshape), x.dtype))))

        return loop_op("max_unpool", [(oshape, data.dtype)], inputs, build)[0]

    return lower


# -- nonzero / argwhere: count first (a kernel of its own), then a sequential scan -----------------
def _nonzero_count(x):
    n = _size(_dims(x.shape))
    flat = (
        te.compute((n,), lambda f: x[_unravel_static(f, x.shape)], "nz_flat") if x.ndim != 1 else x
    )
    k = te.reduce_axis(n, "k")
    zero = E.Const(False, "bool") if x.dtype == "bool" else E.as_expr(0, x.dtype)
    return te.compute((), lambda: te.sum(E.cast("int64", E.ne(flat[k], zero)), k), "nz_count")


def _unravel_static(f, shape):
    from ..te.lower_transform import unravel

    return unravel(f, shape)


def _nonzero_scan(x, transposed: bool):
    shape = _dims(x.shape)
    nd = len(shape)
    cnt = te.value_of(_nonzero_count(x), ())
    oshape = (cnt, nd) if transposed else (nd, cnt)

    def build(ins, outs):
        src, out = ins[0], outs[0]
        c = T.Buffer("nz_c", "int64", 1, "local")
        f = T.index_var("nz_f")
        zero = E.Const(False, "bool") if src.dtype == "bool" else E.as_expr(0, src.dtype)
        coords = _unravel_static(f, shape)
        cur = Load(c, E.index(0), "int64")
        writes = []
        for d in range(nd):
            pos = cur * nd + d if transposed else E.index(d) * cnt + cur
            writes.append(T.Store(out, pos, coords[d]))
        writes.append(T.Store(c, E.index(0), cur + 1))
        body = T.IfThenElse(E.ne(Load(src, f, src.dtype), zero), T.seq(*writes))
        return T.Allocate(
            c, T.seq(T.Store(c, E.index(0), E.index(0)), T.For(f, _size(shape), body))
        )

    return loop_op("nonzero", [(oshape, "int64")], [x], build)[0]


def _nonzero(inputs, attrs, out_type):
    return _nonzero_scan(inputs[0], False)


def _argwhere(inputs, attrs, out_type):
    return _nonzero_scan(inputs[0], True)


def _dyn_topk(inputs, attrs, out_type):
    x, kt = inputs
    axis = attrs.axis % x.ndim
    k = te.value_of(kt, (0,) * kt.ndim)
    k = E.max_(E.min_(k, E.index(x.shape[axis])), E.index(0))  # dyn.topk takes k literally
    pos = argsort_positions(x, axis, k, not attrs.is_ascend)
    values = _gather_along(x, pos, axis)
    idx = compute(pos.shape, lambda *i: E.cast(attrs.dtype, pos[i]), "topk_idx")
    return {"both": (values, idx), "values": values, "indices": idx}[attrs.ret_type]


# -- bitcast / reinterpret: the same bytes -------------------------------------------------------
def _byte_copy(inputs, attrs, out_type):
    from ..ir import dtype as _dt

    x = inputs[0]
    oshape = tuple(out_type.shape)
    nbytes = te.size(x.shape) * _dt.itemsize(x.dtype)

    def emit(llmod, name, epilogue=None):
        if name not in llmod.globals:
            p = ir.IntType(8).as_pointer()
            ir.Function(llmod, ir.FunctionType(VOID, [p, p, I64, I32]), name)

    return extern("relay_copy_bytes", [(oshape, out_type.dtype)], [x], emit, [E.index(nbytes)])[0]
