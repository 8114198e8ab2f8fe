"""unique and vision.non_max_suppression: the C runtime (c/relay_select.c) computes a fixed-size
int64 `info` array [count, results...] from the inputs; the count sizes the outputs (read by
the caller after a pre-kernel runs the same extern), and compute rules gather the results.
"""

from __future__ import annotations

from llvmlite import ir

from .. import te
from ..te import expr as E
from ..te.lower_transform import unravel
from ..te.tensor import compute
from .codegen import I32, I64, VOID, storage_type
from .lower_loops import _dims, _size, _static
from .schedule import extern


def _declare(llmod, name, args):
    if name not in llmod.globals:
        ir.Function(llmod, ir.FunctionType(VOID, args), name)


# -- unique -------------------------------------------------------------------------------------
def _unique(inputs, attrs, out_type):
    x = inputs[0]
    shape = _dims(x.shape)  # run-time dims: extents to the runtime
    if attrs.axis is None:
        ax, items, before, after = 0, _size(shape), (), ()
    else:
        ax = attrs.axis % len(shape)
        items, before, after = shape[ax], shape[:ax], shape[ax + 1 :]
    width = _size(before) * _size(after)
    kind = "f64" if E.is_float(x.dtype) else "i64"
    kdt = "float64" if kind == "f64" else "int64"

    def key(k, j):
        if attrs.axis is None:
            return E.cast(kdt, x[unravel(k, shape)])
        w = _size(after)
        w = max(w, 1) if isinstance(w, int) else E.max_(E.index(w), E.index(1))
        o, i = E.floordiv(j, w), E.floormod(j, w)
        idx = unravel(o, before) + (k,) + unravel(i, after)
        return E.cast(kdt, x[idx])

    keys = compute((items, width), key, "unique_key")
    fn = f"relay_unique_{kind}"

    def emit(llmod, name, epilogue=None):
        _declare(
            llmod, name, [storage_type(kdt).as_pointer(), I64.as_pointer(), I64, I64, I32, I32]
        )

    scalars = [E.index(items), E.index(width), E.as_expr(int(attrs.sorted), "int32")]
    info = extern(fn, [((1 + 3 * items,), "int64")], [keys], emit, scalars)[0]
    g = te.value_of(info, (0,))

    def first(j):
        return info[(1 + j,)]

    if attrs.axis is None:
        y = compute((g,), lambda j: x[unravel(first(j), shape)], "unique_values")
    else:
        y = compute(
            before + (g,) + after,
            lambda *i: x[i[:ax] + (first(i[ax]),) + i[ax + 1 :]],
            "unique_values",
        )
    idx = compute((g,), first, "unique_first")
    inv = compute((items,), lambda k: info[(1 + items + k,)], "unique_inverse")
    counts = compute((g,), lambda j: info[(1 + 2 * items + j,)], "unique_counts")
    return (y, idx, inv, counts)


# -- non-maximum suppression -----------------------------------------------------------------
def _scalar_input(inputs, i, dtype: str, default):
    """Optional scalar input i as a 0-d `dtype` tensor (`default` when absent or empty); the C
    helper reads it, so it may be computed in the same kernel."""
    t = inputs[i] if len(inputs) > i else None
    if t is None or _size(_static(t.shape, "nms scalar argument")) == 0:
        return compute((), lambda: E.const(default, dtype), f"nms_arg{i}")
    return compute((), lambda: E.cast(dtype, t[(0,) * t.ndim]), f"nms_arg{i}")


def _nms(inputs, attrs, out_type):
    boxes, scores = inputs[0], inputs[1]
    bs, ss = _dims(boxes.shape), _dims(scores.shape)  # run-time dims: extents to the runtime
    f = "float64" if boxes.dtype == "float64" else "float32"
    if boxes.dtype != f:  # half precision: the reference computes in float32
        b0, s0 = boxes, scores
        boxes = compute(bs, lambda *i: E.cast(f, b0[i]), "nms_boxes")
        scores = compute(ss, lambda *i: E.cast(f, s0[i]), "nms_scores")
    nb, nc, n = ss
    max_out = _scalar_input(inputs, 2, "int64", attrs.max_output_boxes_per_class)
    # thresholds compare in the boxes' precision, like the reference
    iou = _scalar_input(inputs, 3, f, attrs.iou_threshold)
    has_score = (len(inputs) > 4 and _size(inputs[4].shape) > 0) or (
        attrs.score_threshold is not None
    )
    st = _scalar_input(inputs, 4, f, attrs.score_threshold or 0.0)
    scalars = [
        E.index(nb),
        E.index(nc),
        E.index(n),
        E.as_expr(int(has_score), "int32"),
        E.as_expr(int(attrs.center_point_box), "int32"),
    ]
    sfx = "f64" if f == "float64" else "f32"
    fn = f"relay_nms_{sfx}"

    def emit(llmod, name, epilogue=None):
        p = storage_type(f).as_pointer()
        args = [p, p, I64.as_pointer(), p, p, I64.as_pointer(), I64, I64, I64, I32, I32, I32]
        _declare(llmod, name, args)

    ins = [boxes, scores, max_out, iou, st]
    info = extern(fn, [((1 + 3 * nb * nc * n,), "int64")], ins, emit, scalars)[0]
    k = te.value_of(info, (0,))
    return compute((k, 3), lambda r, c: info[(1 + r * 3 + c,)], "nms")
