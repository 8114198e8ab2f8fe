"""InferType as a pass."""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.module import IRModule
from ..typing import infer_type
from .manager import Pass, PassContext, register_pass


@register_pass
@dataclass
class InferType(Pass):
    """Typecheck the module; every node gets its checked_type."""

    opt_level = 0

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return infer_type(mod)
