"""IRModule -> IRModule transformations and the pass manager.

Every pass is reachable as `relay_core.passes.<Name>()` and callable on a module.
"""

from .infer_type import InferType
from .manager import (
    FunctionPass,
    Pass,
    PassContext,
    Sequential,
    all_passes,
    get_pass,
    pipeline,
    register_pass,
)

__all__ = [
    "FunctionPass",
    "InferType",
    "Pass",
    "PassContext",
    "Sequential",
    "all_passes",
    "get_pass",
    "pipeline",
    "register_pass",
]
