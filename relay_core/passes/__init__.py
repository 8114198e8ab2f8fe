"""IRModule -> IRModule transformations and the pass manager.

Every pass is reachable as `relay_core.passes.<Name>()` and callable on a module.
"""

from .channels_first import ChannelsFirst
from .cse import EliminateCommonSubexpr
from .dead_code import DeadCodeElimination
from .defaults import default_pipeline, optimize
from .dynamic_to_static import DynamicToStatic
from .fold_constant import FoldConstant
from .fold_scale_axis import FoldScaleAxis
from .fuse_ops import FuseOps
from .gradient import Gradient, GradientError, gradient
from .infer_type import InferType
from .inline import Inline
from .lambda_lift import LambdaLift
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
from .matmul_layout import FoldMatmulLayout
from .normal_form import ToANormalForm, ToGraphNormalForm
from .simplify_expr import SimplifyExpr, SinkReshape
from .simplify_inference import SimplifyInference

__all__ = [
    "ChannelsFirst",
    "DeadCodeElimination",
    "DynamicToStatic",
    "EliminateCommonSubexpr",
    "FoldConstant",
    "FoldMatmulLayout",
    "FoldScaleAxis",
    "FuseOps",
    "Gradient",
    "GradientError",
    "FunctionPass",
    "InferType",
    "Inline",
    "LambdaLift",
    "Pass",
    "PassContext",
    "Sequential",
    "SimplifyExpr",
    "SinkReshape",
    "SimplifyInference",
    "ToANormalForm",
    "ToGraphNormalForm",
    "all_passes",
    "default_pipeline",
    "get_pass",
    "gradient",
    "optimize",
    "pipeline",
    "register_pass",
]
