"""Type inference: unification plus per-op type relations."""

from ..ir.hooks import install_type_checker
from .infer import TypeInferencer, infer_expr, infer_type

install_type_checker(infer_type)  # `parse(typecheck=True)` runs it

__all__ = ["TypeInferencer", "infer_expr", "infer_type"]
