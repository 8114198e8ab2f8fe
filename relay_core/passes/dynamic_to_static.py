"""DynamicToStatic: dyn.* ops whose shape inputs became constants turn into static ops."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import RelayError
from ..ir.expr import Call, Op
from ..ir.module import IRModule
from ..typing import infer_expr, infer_type
from ._util import Rewriter, ensure_typed, map_functions
from .fold_constant import FoldConstant, _Folder
from .manager import Pass, PassContext, register_pass


@register_pass
@dataclass
class DynamicToStatic(Pass):
    """Replace each call of an op with `OpDef.to_static` (the dyn.* ops) by the static call it
    returns once its shape / parameter inputs are constants, then re-infer types so the
    static shapes flow on. Between rounds, constant shape computations are folded
    (`shape_of` of a now-static tensor, arithmetic on it), which can make more shape inputs
    constant: `dyn.reshape(%x, shape_of(%y))` becomes `reshape(%x, newshape=[...])`.

    Rounds repeat until one changes nothing: a chain of dyn ops, each shaped by the one before
    (ShuffleNet's channel shuffles: reshape and slices per block, 16 blocks deep), becomes
    static one link per round. Every round that continues removes a dyn call, so this ends;
    `max_iterations` caps the rounds when set.

    >>> mod = DynamicToStatic()(mod)
    """

    max_iterations: int | None = None
    fold_constants: bool = True
    opt_level = 1

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        mod = ensure_typed(mod)
        rounds = 0
        while self.max_iterations is None or rounds < self.max_iterations:
            rounds += 1
            folder = None
            if self.fold_constants:
                fold = FoldConstant(on_limit="skip")
                mod = ensure_typed(fold(mod, PassContext(opt_level=ctx.opt_level)))
                folder = _Folder(fold, mod)
            sweep = _Static(mod, folder)
            mod = map_functions(mod, lambda gv, f, sweep=sweep: sweep.mutate(f))
            if sweep.changed or sweep.touched:
                mod = infer_type(mod)
            if not sweep.changed:
                break
        return mod


class _Static(Rewriter):
    """One round: dyn calls with `to_static` become static calls. Children first: a node
    whose children changed is re-typed on the spot and folded / made static in the same
    sweep, so a chain of dyn ops each shaped by the one before (Swin's window partitions: 64
    links) takes one round, not one round (a fold and a typing of the whole module) per link."""

    def __init__(self, mod: IRModule, folder):
        super().__init__()
        self.mod, self.folder = mod, folder
        self.changed = False  # a dyn call became static
        self.touched = False  # anything was rebuilt

    def rewrite(self, orig, new):
        if new is not orig:
            self.touched = True
            _retype(new, self.mod)
        if type(new) is not Call or type(new.op) is not Op:
            return new
        if self.folder is not None and new is not orig and new.has_type:
            folded = self.folder.fold_call(new, new)
            if folded is not new:
                return folded
        to_static = new.op.opdef.to_static
        if to_static is not None:
            static = to_static(new)
            if static is not None:
                self.changed = self.touched = True
                _retype(static, self.mod)
                return static
        return new


def _retype(e, mod) -> None:
    """Type a rebuilt call from its typed children (incremental: rebuilt tuples below it too);
    left untyped when that fails (a let-bound variable, ...): the round's final inference
    types it."""
    if type(e) is Call and not e.has_type:
        try:
            infer_expr(e, mod)
        except RelayError:
            pass
