"""The pass manager.

A pass is `IRModule -> IRModule`, named, with its options as dataclass fields and an
`opt_level`. `Sequential` runs a pipeline, skipping passes above the context's opt_level. With
RELAY_CHECK_TYPES=1 in the environment (or `PassContext(check_types=True)`) the type checker runs
after every pass and an error names the pass that broke typing.

    >>> from relay_core import passes
    >>> mod = passes.Sequential([passes.InferType(), passes.FoldConstant()])(mod)
    >>> mod = passes.pipeline("InferType,FoldConstant,FuseOps(fuse_opt_level=2)")(mod)
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from ..errors import RelayError, RelayTypeError
from ..ir.expr import Function
from ..ir.module import IRModule

_PASSES: dict[str, type] = {}


def register_pass(cls: type) -> type:
    """Class decorator: makes the pass constructible by name in pipeline strings."""
    if not dataclasses.is_dataclass(cls):
        cls = dataclass(cls)
    _PASSES[cls.__name__] = cls
    return cls


def get_pass(name: str) -> type:
    try:
        return _PASSES[name]
    except KeyError:
        raise RelayError(
            f"unknown pass {name!r}; known passes: {', '.join(sorted(_PASSES))}"
        ) from None


def all_passes() -> dict[str, type]:
    return dict(_PASSES)


@dataclass
class PassContext:
    """Options for a pipeline run."""

    opt_level: int = 2
    disabled: tuple[str, ...] = ()
    check_types: bool = field(default_factory=lambda: os.environ.get("RELAY_CHECK_TYPES") == "1")
    # Called after each pass as dump_ir(pass_name, module); e.g. for `relay --dump-ir`.
    dump_ir: Callable[[str, IRModule], None] | None = None
    # Per-pass wall time in seconds, filled as passes run.
    timings: dict[str, float] = field(default_factory=dict)
    config: dict = field(default_factory=dict)


@dataclass
class Pass:
    """Base class. Subclasses set `opt_level` and implement `run(mod, ctx)`."""

    opt_level: ClassVar[int] = 0

    @property
    def name(self) -> str:
        return type(self).__name__

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        raise NotImplementedError

    def __call__(self, mod: IRModule, ctx: PassContext | None = None) -> IRModule:
        ctx = ctx or PassContext()
        if not isinstance(mod, IRModule):
            raise TypeError(f"{self.name} takes an IRModule, not {type(mod).__name__}")
        t0 = time.perf_counter()
        out = self.run(mod, ctx)
        ctx.timings[self.name] = ctx.timings.get(self.name, 0.0) + time.perf_counter() - t0
        if ctx.check_types and not isinstance(self, Sequential):
            from ..typing import infer_type

            try:
                infer_type(out)
            except RelayTypeError as e:
                raise RelayTypeError(f"after pass {self.name}: {e}") from None
        if ctx.dump_ir is not None and not isinstance(self, Sequential):
            ctx.dump_ir(self.name, out)
        return out

    def __repr__(self) -> str:
        fields = (
            ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self))
            if dataclasses.is_dataclass(self)
            else ""
        )
        return f"{self.name}({fields})"


@dataclass
class FunctionPass(Pass):
    """A pass applied to each global function independently."""

    def transform_function(self, func: Function, mod: IRModule, ctx: PassContext) -> Function:
        raise NotImplementedError

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        funcs = {}
        changed = False
        for gv, f in mod.functions.items():
            nf = self.transform_function(f, mod, ctx)
            changed |= nf is not f
            funcs[gv] = nf
        return mod.with_functions(funcs) if changed else mod


@dataclass
class Sequential(Pass):
    """Run passes in order, skipping those above the opt_level or disabled. The opt_level is
    `level` when given (a pipeline built for a level keeps it), else the context's."""

    passes: Sequence[Pass] = ()
    level: int | None = None

    def run(self, mod: IRModule, ctx: PassContext) -> IRModule:
        limit = ctx.opt_level if self.level is None else self.level
        for p in self.passes:
            if p.opt_level > limit or p.name in ctx.disabled:
                continue
            mod = p(mod, ctx)
        return mod

    def __repr__(self) -> str:
        lvl = f", level={self.level}" if self.level is not None else ""
        return "Sequential(" + ", ".join(repr(p) for p in self.passes) + lvl + ")"


_ITEM = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(\((.*?)\))?\s*(,|$)")


def pipeline(spec: str | Sequence) -> Sequential:
    """A Sequential from `"InferType,FoldConstant,FuseOps(fuse_opt_level=2)"` or a list of
    passes / names."""
    if not isinstance(spec, str):
        return Sequential([get_pass(p)() if isinstance(p, str) else p for p in spec])
    passes = []
    pos = 0
    spec = spec.strip()
    while pos < len(spec):
        m = _ITEM.match(spec, pos)
        if not m or m.end() == pos:
            raise RelayError(f"cannot read pass pipeline at {spec[pos:]!r}")
        name, args = m.group(1), m.group(3)
        kwargs = {}
        if args:
            call = ast.parse(f"f({args})", mode="eval").body
            for kw in call.keywords:  # type: ignore[attr-defined]
                kwargs[kw.arg] = ast.literal_eval(kw.value)
        passes.append(get_pass(name)(**kwargs))
        pos = m.end()
    return Sequential(passes)
