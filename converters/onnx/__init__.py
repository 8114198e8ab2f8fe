"""The ONNX frontend: `from_onnx(model) -> IRModule`.

Converters live in one module per op family (elementwise, nn, tensor, reduce, control_flow,
sequence, rnn, quantized, ml, ...), registered in `table.TABLES` by domain, op and opset.
"""

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
