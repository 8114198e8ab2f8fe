"""Nodes a closure shares with its enclosing scope are computed once, outside the closure
(relay_core/backend/vm_hoist.py): an ONNX Loop body reading an outer tensor recomputed it, and
what it depends on, at every iteration (Mask R-CNN ran its NMS once per detection)."""

from __future__ import annotations

import numpy as np

import relay_core
from relay_core.backend.vm_hoist import hoist_shared
from relay_core.ir import Call, Function, post_order

SRC = """
#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) -> (Tensor[(4), float32], Tensor[(4), float32]) {
  %0 = nn.relu(%x);
  %1 = exp(%0);
  let %loop = fn (%i: int64, %acc: Tensor[(4), float32]) -> Tensor[(4), float32] {
    if (less(%i, 3i64)) {
      %loop(add(%i, 1i64), add(%acc, %1))
    } else {
      %acc
    }
  };
  (%loop(0i64, %x), %1)
}
"""


def _closures(e):
    return [n for n in post_order(e) if type(n) is Function and not n.attr("Primitive")]


def _ops(e):
    return {n.op.name for n in post_order(e) if type(n) is Call and hasattr(n.op, "name")}


def test_a_shared_node_leaves_the_loop_body():
    mod = relay_core.infer_type(relay_core.parse(SRC))
    (loop,) = _closures(mod["main"].body)
    assert "exp" in _ops(loop.body)  # graph form: the body reads the outer exp(relu(x)) node
    body = hoist_shared(mod["main"].body)
    (loop,) = _closures(body)
    assert "exp" not in _ops(loop.body) and "nn.relu" not in _ops(loop.body)


def test_nodes_only_the_closure_reads_stay_inside():
    src = SRC.replace("(%loop(0i64, %x), %1)", "%loop(0i64, %x)").replace(
        "-> (Tensor[(4), float32], Tensor[(4), float32])", "-> Tensor[(4), float32]"
    )
    mod = relay_core.infer_type(relay_core.parse(src))
    assert hoist_shared(mod["main"].body) is mod["main"].body


def test_compiled_loop_with_a_shared_node_matches_numpy():
    mod = relay_core.parse(SRC)
    lib = relay_core.build(mod)
    x = np.array([-1.0, 0.5, 2.0, -3.0], np.float32)
    loop_out, shared = lib(x)
    e = np.exp(np.maximum(x, 0))
    np.testing.assert_allclose(loop_out, x + 3 * e, rtol=1e-6)
    np.testing.assert_allclose(shared, e, rtol=1e-6)
