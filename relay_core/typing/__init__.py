"""Type inference: unification plus per-op type relations."""

from .infer import TypeInferencer, infer_expr, infer_type

__all__ = ["TypeInferencer", "infer_expr", "infer_type"]
