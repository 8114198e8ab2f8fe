"""An epilogue fused into a product whose dimensions are all unknown at compile time: its
indices choose between broadcast and per-element reads with conditions on the run-time extents
(a dimension of 1 or not), which must stay scalar beside the vector of values (MobileViT
exported with a dynamic batch: attention scores divided by sqrt(d) did not compile, the LLVM IR
selected between two indices with a vector of conditions). ONNX MatMul + Div / Mul / Add of
a bias, compiled with every dimension symbolic, run at shapes that broadcast or not, against
onnxruntime."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import relay_import as ri


def _model(rank: int, op: str, bias: bool):
    dims = lambda t: [f"{t}{i}" for i in range(rank)]  # noqa: E731
    nodes = [helper.make_node("MatMul", ["a", "b"], ["m"])]
    inits = [numpy_helper.from_array(np.array(2.828427, np.float32), "c")]
    nodes.append(helper.make_node(op, ["m", "c"], ["s" if bias else "y"]))
    inputs = [
        helper.make_tensor_value_info("a", TensorProto.FLOAT, dims("a")),
        helper.make_tensor_value_info("b", TensorProto.FLOAT, dims("b")),
    ]
    if bias:
        nodes.append(helper.make_node("Add", ["s", "bias"], ["y"]))
        inputs.append(helper.make_tensor_value_info("bias", TensorProto.FLOAT, ["z"]))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, dims("y"))
    g = helper.make_graph(nodes, "g", inputs, [y], initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("op,bias", [("Div", False), ("Mul", False), ("Div", True)])
def test_product_epilogue_all_dims_unknown(rank, op, bias):
    model = _model(rank, op, bias)
    lib = ri.compile(ri.load(model))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(3)
    lead_a, lead_b = [(2, 3), (1, 3), (2, 1)], [(2, 3), (2, 3), (2, 3)]
    for la, lb in zip(lead_a, lead_b):
        la, lb = la[2 - (rank - 2) :], lb[2 - (rank - 2) :]
        feed = {
            "a": rng.standard_normal((*la, 5, 19)).astype("float32"),
            "b": rng.standard_normal((*lb, 19, 21)).astype("float32"),
        }
        if bias:
            feed["bias"] = rng.standard_normal(21).astype("float32")
        want = sess.run(None, feed)[0]
        got = lib(**feed)[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_invalid_kernel_ir_names_the_kernel():
    """Generated code that is not valid LLVM IR (a compiler bug) is reported as such, naming the
    kernel and what to do, not as a page of IR."""
    from relay_core.backend.llvm_target import host
    from relay_core.backend.split import Unit
    from relay_core.backend.units import InvalidKernelIR, build_objects

    good = "define void @relay_main() {\n  ret void\n}\n"
    bad = (
        "define void @k7() {\n  %a = select <4 x i1> zeroinitializer, i64 1, i64 2\n  ret void\n}\n"
    )
    units = [Unit("k7", bad, "kernel", ["k7"])]
    with pytest.raises(InvalidKernelIR) as e:
        build_objects(Unit("", good, "main"), units, lambda u: 3, host(), None, 1)
    msg = str(e.value)
    assert "k7" in msg and "bug" in msg and "opt_level=0" in msg
    assert "select" in msg and "define void" not in msg  # the diagnostic, not the module
