"""The ONNX frontend: `from_onnx(model) -> IRModule`.

- loader.py: safe loading (checker, external data inside the model's directory, sizes and the
  byte budget checked before anything is allocated);
- graph.py: nodes in order, subgraph scopes, function bodies (schema and model-local) inlined,
  the unsupported-op scan;
- one module per op family, each converter registered in `table.TABLES` by domain, op and
  opset: elementwise, tensor, reduce, nn, image, control_flow, sequence, rnn, quantized,
  signal, text, misc, random, ml, training;
- ONNX's own conformance cases run from tools/onnx_conformance.py and tools/onnx_report.py
  (`python -m tools.onnx_report --folders`).
"""

# The converter families: importing each registers its converters in `table.TABLES`.
from . import (  # noqa: E402, F401, I001
    control_flow,
    elementwise,
    image,
    misc,
    ml,
    nn,
    quantized,
    random,
    reduce,
    rnn,
    sequence,
    signal,
    tensor,
    text,
    training,
)
from .frontend import from_onnx, run_cleanup
from .loader import DEFAULT_BYTE_BUDGET, load_model
from .table import MAX_OPSET, SUPPORTED_OPSETS, TABLES, converter

__all__ = [
    "from_onnx",
    "run_cleanup",
    "load_model",
    "DEFAULT_BYTE_BUDGET",
    "MAX_OPSET",
    "SUPPORTED_OPSETS",
    "TABLES",
    "converter",
]
