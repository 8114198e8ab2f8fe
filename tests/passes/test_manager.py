"""The pass manager: registry, options, pipelines, opt levels, type checking after each pass."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import relay_core
from relay_core import passes
from relay_core.errors import RelayError, RelayTypeError
from relay_core.ir import Function, IRModule, Var

from .golden import parse

EXPECTED = {
    "InferType",
    "SimplifyInference",
    "FoldConstant",
    "DeadCodeElimination",
    "EliminateCommonSubexpr",
    "SimplifyExpr",
    "ToANormalForm",
    "ToGraphNormalForm",
    "LambdaLift",
    "Inline",
    "DynamicToStatic",
    "FoldScaleAxis",
    "Gradient",
}

SRC = """
    def @main(%x: Tensor[(2), float32]) {
      let %dead = exp(%x);
      add(multiply(%x, 1f), multiply(2f, 3f))
    }
    """


def test_every_pass_is_registered_exported_and_a_dataclass():
    assert EXPECTED <= set(passes.all_passes())
    for name in EXPECTED:
        cls = getattr(passes, name)
        assert cls is passes.get_pass(name)
        assert dataclasses.is_dataclass(cls) and cls.__doc__
        p = cls()
        assert isinstance(p, passes.Pass) and p.name == name
        out = p(parse(SRC))  # callable on a module
        assert isinstance(out, IRModule)


def test_infer_type_golden():
    # InferType changes no structure; it fills every node's checked_type.
    from .golden import check

    mod = check(passes.InferType(), SRC, SRC)
    assert str(mod["main"].body.checked_type) == "Tensor[(2), float32]"


def test_pipeline_strings_and_lists():
    pl = passes.pipeline(
        "InferType, FoldConstant(max_bytes=1024), SimplifyExpr, "
        "DeadCodeElimination(remove_unused_functions=True)"
    )
    assert [p.name for p in pl.passes] == [
        "InferType",
        "FoldConstant",
        "SimplifyExpr",
        "DeadCodeElimination",
    ]
    assert pl.passes[1].max_bytes == 1024 and pl.passes[3].remove_unused_functions
    out = pl(parse(SRC), passes.PassContext(opt_level=3))
    want = parse("def @main(%x: Tensor[(2), float32]) { add(%x, 6f) }")
    assert relay_core.structural_equal(out, want)
    assert passes.pipeline(["InferType", passes.FoldConstant()]).passes[1].name == "FoldConstant"
    with pytest.raises(RelayError, match="unknown pass 'Nope'"):
        passes.pipeline("InferType, Nope")


def test_opt_level_and_disabled_passes():
    pl = passes.Sequential([passes.FoldConstant(), passes.FoldScaleAxis()])
    ctx = passes.PassContext(opt_level=0)
    pl(parse(SRC), ctx)
    assert set(ctx.timings) == {"Sequential"}  # both passes are above level 0
    ctx = passes.PassContext(opt_level=3, disabled=("FoldScaleAxis",))
    pl(parse(SRC), ctx)
    assert set(ctx.timings) == {"Sequential", "FoldConstant"}
    # A pipeline built for a level keeps it, whatever the context says.
    ctx = passes.PassContext(opt_level=0)
    passes.default_pipeline(3)(parse(SRC), ctx)
    assert "FoldScaleAxis" in ctx.timings and "EliminateCommonSubexpr" in ctx.timings
    ctx = passes.PassContext(opt_level=3)
    passes.default_pipeline(1)(parse(SRC), ctx)
    assert "FoldScaleAxis" not in ctx.timings


def test_default_pipeline_order():
    names = [p.name for p in passes.default_pipeline(3).passes]
    assert names == [
        "InferType",
        "SimplifyInference",
        "FoldConstant",
        "DynamicToStatic",
        "SimplifyExpr",
        "FoldScaleAxis",
        "ChannelsFirst",
        "FoldMatmulLayout",
        "SinkReshape",
        "FoldConstant",
        "EliminateCommonSubexpr",
        "DeadCodeElimination",
        "InferType",
    ]


def test_optimize_simplifies_and_preserves_values():
    mod = parse(SRC)
    out = passes.optimize(mod)
    want = parse("def @main(%x: Tensor[(2), float32]) { add(%x, 6f) }")
    assert relay_core.structural_equal(out, want)
    x = np.array([1.0, -1.0], np.float32)
    np.testing.assert_array_equal(relay_core.evaluate(out, x), relay_core.evaluate(mod, x))


@dataclasses.dataclass
class _Breaks(passes.Pass):
    """A broken pass: returns a main that adds a float to a bool."""

    def run(self, mod, ctx):
        x = Var("x", relay_core.ir.TensorType((2,), "float32"))
        body = relay_core.ir.call("add", x, relay_core.ir.const(True))
        return IRModule.from_expr(Function((x,), body))


def test_check_types_names_the_pass_that_broke_typing(monkeypatch):
    pl = passes.Sequential([passes.FoldConstant(), _Breaks()])
    with pytest.raises(RelayTypeError, match="after pass _Breaks"):
        pl(parse(SRC), passes.PassContext(check_types=True))
    monkeypatch.setenv("RELAY_CHECK_TYPES", "1")
    with pytest.raises(RelayTypeError, match="after pass _Breaks"):
        pl(parse(SRC), passes.PassContext())
    monkeypatch.setenv("RELAY_CHECK_TYPES", "0")
    pl(parse(SRC), passes.PassContext())  # unchecked: no error here


def test_dump_ir_and_timings():
    seen = []
    ctx = passes.PassContext(opt_level=3, dump_ir=lambda name, mod: seen.append(name))
    passes.default_pipeline(3)(parse(SRC), ctx)
    assert seen[0] == "InferType" and "SimplifyExpr" in seen and len(seen) == 13
    assert all(t >= 0 for t in ctx.timings.values())


def test_pass_needs_a_module():
    with pytest.raises(TypeError, match="takes an IRModule"):
        passes.FoldConstant()(parse(SRC)["main"])
