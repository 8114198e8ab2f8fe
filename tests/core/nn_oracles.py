"""Oracles shared by the op tests: run an OpDef's reference, its type relation, one ONNX node in
onnx.reference or onnxruntime, and small array helpers."""

from __future__ import annotations

import numpy as np

from relay_core.ops import lookup
from tests.require import require

torch = require("torch")
F = torch.nn.functional


def run(name, *inputs, **attrs):
    op = lookup(name)
    return op.ref(list(inputs), op.make_attrs(**attrs))


def rel(name, *types, **attrs):
    op = lookup(name)
    return op.type_rel(list(types), op.make_attrs(**attrs))


def _node_model(op_type, inputs, n_out, opset, attrs):
    """A one-node ONNX model; `None` inputs are omitted optional inputs."""
    from onnx import helper

    names = [f"i{k}" if x is not None else "" for k, x in enumerate(inputs)]
    outs = [f"o{k}" for k in range(n_out)]
    node = helper.make_node(op_type, names, outs, **attrs)
    vi = [
        helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)
        for n, x in zip(names, inputs)
        if n
    ]
    vo = [helper.make_empty_tensor_value_info(n) for n in outs]
    graph = helper.make_graph([node], "g", vi, vo)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    feeds = {n: x for n, x in zip(names, inputs) if n}
    return model, feeds


def onnx_run(op_type, inputs, n_out=1, opset=23, **attrs):
    """Run one ONNX node with onnx.reference."""
    from onnx.reference import ReferenceEvaluator

    model, feeds = _node_model(op_type, inputs, n_out, opset, attrs)
    return ReferenceEvaluator(model).run(None, feeds)


def ort_run(op_type, inputs, n_out=1, opset=22, **attrs):
    """Run one ONNX node with onnxruntime (for ops the ONNX reference lacks)."""
    import onnxruntime as ort

    model, feeds = _node_model(op_type, inputs, n_out, opset, attrs)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def T(x):
    return torch.from_numpy(np.ascontiguousarray(x))


RNG = np.random.default_rng(1234)


def randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)
