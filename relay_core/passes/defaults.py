"""The standard optimisation pipeline used before code generation."""

from __future__ import annotations

from ..ir.module import IRModule
from .channels_first import ChannelsFirst
from .cse import EliminateCommonSubexpr
from .dead_code import DeadCodeElimination
from .dynamic_to_static import DynamicToStatic
from .fold_constant import FoldConstant
from .fold_scale_axis import FoldScaleAxis
from .infer_type import InferType
from .manager import PassContext, Sequential
from .matmul_layout import FoldMatmulLayout
from .simplify_expr import SimplifyExpr, SinkReshape
from .simplify_inference import SimplifyInference


def default_pipeline(opt_level: int = 3) -> Sequential:
    """The passes the backend runs before fusion, those up to `opt_level`:

    InferType, SimplifyInference, FoldConstant, DynamicToStatic, SimplifyExpr, FoldScaleAxis,
    ChannelsFirst, FoldMatmulLayout, SinkReshape, FoldConstant, EliminateCommonSubexpr,
    DeadCodeElimination, InferType.

    >>> mod = default_pipeline(3)(mod)
    """
    passes = [
        InferType(),
        SimplifyInference(),
        FoldConstant(),
        DynamicToStatic(),
        SimplifyExpr(),
        FoldScaleAxis(),
        ChannelsFirst(),
        FoldMatmulLayout(),
        SinkReshape(),
        FoldConstant(),
        EliminateCommonSubexpr(),
        DeadCodeElimination(),
        InferType(),
    ]
    return Sequential(passes, level=opt_level)


def optimize(mod: IRModule, opt_level: int = 3, ctx: PassContext | None = None) -> IRModule:
    """Run `default_pipeline(opt_level)` on `mod` (typed afterwards)."""
    return default_pipeline(opt_level)(mod, ctx or PassContext(opt_level=opt_level))
