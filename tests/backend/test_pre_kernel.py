"""Ops whose output size depends on values (non-maximum suppression, nonzero, unique) first run a
pre-kernel that computes what sizes the outputs; the kernel then reads that result instead of
computing it again (a detector's NMS over 90,000 boxes ran twice per call)."""

from __future__ import annotations

import numpy as np

import relay_core
from relay_core.backend.lower import GroupLowering
from relay_core.backend.tir import CallKernel, stmt_children
from relay_core.ir import Any, Function, IRModule, TensorType, Var, call
from relay_core.ops import all_ops


def _stmts(root):
    out, stack = [], [root]
    while stack:
        s = stack.pop()
        out.append(s)
        stack.extend(stmt_children(s))
    return out


def _called(kernel) -> set:
    return {s.name for s in _stmts(kernel.body) if type(s) is CallKernel}


def _lowered(params, body):
    mod = relay_core.infer_type(IRModule.from_expr(Function(tuple(params), body)))
    return mod, GroupLowering(mod["main"], "k", None).run()


def _boxes(rng, n):
    xy = rng.uniform(0, 50, (n, 2))
    wh = rng.uniform(5, 30, (n, 2))
    return np.concatenate([xy, xy + wh], 1)[None].astype(np.float32)


def test_nms_runs_once_per_call():
    b = Var("b", TensorType((1, Any, 4), "float32"))
    s = Var("s", TensorType((1, 2, Any), "float32"))
    attrs = {"max_output_boxes_per_class": 100, "iou_threshold": 0.4}
    body = call("vision.non_max_suppression", b, s, **attrs)
    mod, lk = _lowered([b, s], body)
    assert lk.pre is not None
    assert {"relay_nms_f32"} <= _called(lk.pre[0])
    assert not any(n.startswith("relay_nms") for n in _called(lk.kernel))
    # the kernel takes the pre-kernel's result after its outputs
    assert [p.name for p in lk.kernel.params[:4]] == ["in0", "in1", "out0", "pre0"]

    lib = relay_core.build(mod, cache=False)
    op = all_ops()["vision.non_max_suppression"]
    rng = np.random.default_rng(0)
    for n in (0, 5, 200):  # the boxes overlap: the classes keep different ones
        boxes, scores = _boxes(rng, n), rng.uniform(0, 1, (1, 2, n)).astype(np.float32)
        want = op.ref([boxes, scores], op.make_attrs(**attrs))
        got = np.asarray(lib(boxes, scores)[0])
        np.testing.assert_array_equal(got, want)
    assert 0 < len(want) < 2 * 100  # the last case suppressed boxes below the cap


def test_unique_runs_once_per_call():
    x = Var("x", TensorType((Any,), "int32"))
    mod, lk = _lowered([x], call("unique", x))
    assert {"relay_unique_i64"} <= _called(lk.pre[0])
    assert not any(n.startswith("relay_unique") for n in _called(lk.kernel))

    lib = relay_core.build(mod, cache=False)
    op = all_ops()["unique"]
    for n in (0, 1, 30):
        v = np.random.default_rng(n).integers(-4, 5, n).astype(np.int32)
        want = op.ref([v], op.make_attrs())
        for g, w in zip(lib(v), want):
            np.testing.assert_array_equal(np.asarray(g), w)
