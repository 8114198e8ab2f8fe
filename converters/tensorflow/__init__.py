"""TensorFlow frontend: SavedModels, `.keras` files, Keras models, tf.functions and GraphDefs to
Relay, functional control flow included.

    >>> from converters.tensorflow import from_tensorflow
    >>> mod = from_tensorflow(keras_model)                       # inputs from model.inputs
    >>> mod = from_tensorflow("saved_model_dir", signature="serving_default")
    >>> mod = from_tensorflow(tf_fn, [tf.TensorSpec([None, 3], tf.float32)])

TensorFlow is imported only when a model is converted.
"""

from __future__ import annotations

from relay_core.errors import InputError
from relay_core.ir import IRModule

# The converter families: importing each registers its converters on `TF`.
from . import (  # noqa: E402, F401, I001
    control_flow,
    ops_array,
    ops_image,
    ops_index,
    ops_math,
    ops_misc,
    ops_nn,
    tensor_list,
)
from .table import TF


def from_tensorflow(
    obj,
    input_signature=None,
    signature: str = "serving_default",
    custom_convert_map: dict | None = None,
    outputs: list[str] | None = None,
    cleanup: bool = True,
    shapes: dict | None = None,
) -> IRModule:
    """Convert a TensorFlow model to a typed Relay module whose `@main` takes the model's inputs
    (dims that are None in the signature become `Any`) and returns its output (a tuple if there
    are several, in the order of `mod.attrs["output_names"]`).

    `obj`: a SavedModel directory (its `signature`), a `.keras` file (loaded with safe_mode), a
    Keras model, a tf.function (with an input_signature, or pass `input_signature`), a concrete
    function, a GraphDef (or a frozen `.pb` file; `outputs` names the tensors to return).
    `input_signature` traces Keras models and tf.functions; for SavedModels, concrete functions
    and GraphDefs it refines the inputs' shapes (a dict name -> shape, or a list), e.g. to fix
    a dynamic batch. `shapes={"x": (1, 16, 16, 3)}` (input name -> shape, as the ONNX and
    PyTorch frontends take it) is the same as a dict `input_signature`.

    Variables are frozen to constants; While / If / PartitionedCall stay control flow: a While is a
    recursive global function, an If a Relay `If`, a call a global function. TensorList values
    (RNN layers) are stacked tensors. Graphs with file, Python or other I/O ops are refused, and
    every op without a converter is listed in one UnsupportedOpsError; `custom_convert_map`
    ({"OpType": fn(ctx, *inputs, **attrs)}) supplies or overrides converters. With `cleanup`,
    the FoldConstant and DynamicToStatic passes run afterwards (when they exist).

    The inputs of a SavedModel signature come in the order of their sorted names, the outputs
    of a dict in sorted key order. `mod.attrs` records "input_names", "output_names",
    "source_outputs" (TF tensor name -> Relay expression) and "source_nodes" ((name, op,
    inputs, outputs) in topological order).
    """
    from relay_core.typing import infer_type

    from .graph import GraphDriver
    from .loader import load

    if shapes:
        if input_signature is not None:
            raise InputError("pass either shapes= or input_signature=, not both")
        input_signature = dict(shapes)
    frozen = load(obj, input_signature, signature, outputs)
    driver = GraphDriver(frozen.graph_def, custom_convert_map)
    mod = driver.convert_main(frozen)
    mod.attrs["source_outputs"] = dict(driver.ctx.source_outputs)
    mod.attrs["source_nodes"] = list(driver.source_nodes)
    infer_type(mod)
    return _cleanup(mod) if cleanup else mod


CLEANUP = ("FoldConstant", "DynamicToStatic")


def _cleanup(mod: IRModule) -> IRModule:
    """Run the cleanup passes that exist (FoldConstant, DynamicToStatic), then InferType."""
    from relay_core import passes

    known = passes.all_passes()
    seq = [known[name]() for name in CLEANUP if name in known]
    if not seq:
        return mod
    attrs = dict(mod.attrs)
    out = passes.Sequential([*seq, known["InferType"]()])(mod)
    for k, v in attrs.items():
        out.attrs.setdefault(k, v)
    return out


def supported_ops() -> list[str]:
    """The TF op types with a converter."""
    return TF.names()


__all__ = ["from_tensorflow", "supported_ops", "TF"]
