"""`from_onnx`: an ONNX model as a typed Relay module."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from converters.common import check_supported
from relay_core.errors import ModelLoadError
from relay_core.ir import IRModule

from .graph import GraphConverter
from .loader import DEFAULT_BYTE_BUDGET, load_model
from .table import SUPPORTED_OPSETS, norm_domain

CLEANUP = ("InferType", "FoldConstant", "DynamicToStatic", "InferType")


def from_onnx(
    model,
    shapes: dict | None = None,
    custom_convert_map: dict[str, Callable] | None = None,
    byte_budget: int = DEFAULT_BYTE_BUDGET,
    *,
    base_dir: str | None = None,
    cleanup: bool = True,
) -> IRModule:
    """Convert an ONNX model (a ModelProto, a path or bytes) to a typed Relay IRModule.

    >>> mod = from_onnx("resnet50.onnx", shapes={"data": (1, 3, 224, 224)})
    >>> relay_core.evaluate(mod, x)

    - `shapes`: {input name: shape} overrides the model's input shapes (a str dim is a
      shape variable, None or "?" unknown).
    - `custom_convert_map`: {op name or (domain, op name): fn} adds or overrides converters.
      `fn(ctx, *inputs, **attributes)` gets an `OnnxContext`, the node's inputs as Relay
      expressions (None for a missing optional input) and its attributes by name (numbers,
      str, lists, numpy arrays for tensors, GraphProto for graphs); it returns one Relay
      expression or a list with one per node output. Build calls with `ctx.call(op, ...)`.
    - `byte_budget`: the largest total of tensor bytes the model may hold; larger tensors are
      refused before they are allocated (ResourceLimitError).
    - `base_dir`: where external data lives for an in-memory model (default: the model's
      directory when given a path).
    - `cleanup`: run InferType, FoldConstant, DynamicToStatic, InferType afterwards.

    Errors: ModelLoadError (malformed / unsafe / unsupported opset), UnsupportedOpsError
    (listing every unsupported operator at once), ConversionError (naming the node).
    """
    proto = load_model(model, byte_budget=byte_budget, base_dir=base_dir)
    check_opsets(proto)
    gc = GraphConverter(proto, custom_convert_map, shapes, byte_budget)
    check_supported("onnx", gc.unsupported(), lambda entry: False)
    mod = gc.convert_model()
    return run_cleanup(mod, byte_budget) if cleanup else _infer(mod)


def check_opsets(proto) -> None:
    """Refuse opsets outside what the converters support (the checker accepts opset 999)."""
    for o in proto.opset_import:
        d = norm_domain(o.domain)
        rng = SUPPORTED_OPSETS.get(d)
        if rng is not None and not rng[0] <= o.version <= rng[1]:
            raise ModelLoadError(
                f"the model imports opset {o.version} of domain {d}; the converter supports "
                f"opsets {rng[0]} to {rng[1]}"
            )
    if not any(norm_domain(o.domain) == "ai.onnx" for o in proto.opset_import):
        if any(norm_domain(n.domain) == "ai.onnx" for n in proto.graph.node):
            raise ModelLoadError("the model uses ai.onnx operators but imports no ai.onnx opset")


def _infer(mod: IRModule) -> IRModule:
    from relay_core import infer_type

    return infer_type(mod)


def run_cleanup(mod: IRModule, byte_budget: int = DEFAULT_BYTE_BUDGET) -> IRModule:
    """The cleanup pipeline, with the passes that exist (FoldConstant gets the byte budget)."""
    from relay_core import passes

    known = passes.all_passes()
    seq = []
    for name in CLEANUP:
        cls = known.get(name)
        if cls is None:
            continue
        fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else ()
        kw = {k: byte_budget for k in ("max_bytes", "byte_budget") if k in fields}
        seq.append(cls(**kw))
    return passes.Sequential(seq)(mod)
