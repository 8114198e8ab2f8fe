"""From what the user has to one frozen GraphDef: SavedModel directories, `.keras` files, Keras
models, tf.functions, concrete functions and GraphDefs.

Variables are frozen into constants with `convert_variables_to_constants_v2(...,
lower_control_flow=False)`, which keeps functional `While` / `If` nodes with their bodies in
`graph_def.library` (the form that maps onto Relay functions).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from relay_core.errors import InputError, ModelLoadError

from .quiet import quiet
from .safety import prescan_saved_model


@dataclass
class GraphInput:
    node: str  # the Placeholder's node name in the graph
    name: str  # the name the user knows (signature key, spec or placeholder name)
    shape: tuple | None  # ints and None (unknown); None: unknown rank
    dtype: str


@dataclass
class FrozenGraph:
    graph_def: object
    inputs: list[GraphInput]
    outputs: list[str]  # tensor names "node:index"
    output_names: list[str] = field(default_factory=list)
    shared_batch: bool = False  # a Keras model: every input's axis 0 is the one batch


def load(
    obj, input_signature=None, signature: str = "serving_default", outputs=None
) -> FrozenGraph:
    """Freeze `obj` into a FrozenGraph (see `from_tensorflow` for what `obj` may be).
    TF's own log lines are dropped meanwhile (quiet.py)."""
    with quiet():
        return _load(obj, input_signature, signature, outputs)


def _load(obj, input_signature, signature: str, outputs) -> FrozenGraph:
    if isinstance(obj, (str, os.PathLike)):
        return _load_path(os.fspath(obj), input_signature, signature, outputs)
    if type(obj).__name__ == "GraphDef" and hasattr(obj, "node"):
        return from_graph_def(obj, input_signature, outputs)
    if _is_keras_model(obj):
        return _freeze_keras(obj, input_signature)
    if hasattr(obj, "graph") and hasattr(obj, "structured_outputs"):  # ConcreteFunction
        return specialize(_freeze(obj), input_signature)
    if hasattr(obj, "get_concrete_function"):  # tf.function
        return _freeze(_concrete(obj, input_signature))
    raise InputError(
        f"from_tensorflow cannot convert a {type(obj).__name__}: pass a SavedModel directory, a "
        ".keras file, a Keras model, a tf.function, a concrete function or a GraphDef"
    )


# -- paths ---------------------------------------------------------------------------------------
def _load_path(path: str, input_signature, signature: str, outputs) -> FrozenGraph:
    if os.path.isdir(path):
        if not os.path.isfile(os.path.join(path, "saved_model.pb")):
            raise ModelLoadError(f"{path} is a directory without saved_model.pb: not a SavedModel")
        return specialize(_load_saved_model(path, signature), input_signature)
    if not os.path.isfile(path):
        raise ModelLoadError(f"no such file or directory: {path}")
    if path.endswith(".keras"):
        from ..archive import check_zip

        check_zip(path, f"Keras file {path}")
        keras = _keras()
        try:
            model = keras.models.load_model(path, safe_mode=True, compile=False)
        except Exception as e:  # keras raises many kinds for bad archives
            raise ModelLoadError(f"cannot load Keras file {path}: {e}") from None
        return _freeze_keras(model, input_signature)
    if path.endswith(".pb"):
        tf = _tf()
        gd = tf.compat.v1.GraphDef()
        try:
            with open(path, "rb") as f:
                gd.ParseFromString(f.read())
        except Exception as e:
            raise ModelLoadError(f"{path} is not a valid GraphDef: {e}") from None
        return from_graph_def(gd, input_signature, outputs)
    raise ModelLoadError(
        f"{path}: expected a SavedModel directory, a .keras file or a frozen GraphDef (.pb)"
    )


def _load_saved_model(path: str, signature: str) -> FrozenGraph:
    prescan_saved_model(path)
    tf = _tf()
    try:
        loaded = tf.saved_model.load(path)
    except Exception as e:
        raise ModelLoadError(f"cannot load SavedModel {path}: {e}") from None
    sigs = getattr(loaded, "signatures", {}) or {}
    if signature not in sigs:
        have = ", ".join(sorted(sigs)) or "none"
        raise ModelLoadError(
            f"SavedModel {path} has no signature {signature!r} (available: {have})"
        )
    return _freeze(sigs[signature], keep_alive=loaded)


# -- Keras ---------------------------------------------------------------------------------------
def _is_keras_model(obj) -> bool:
    if "keras" not in sys.modules:
        return False
    import keras

    return isinstance(obj, keras.Model)


def _freeze_keras(model, input_signature) -> FrozenGraph:
    """Trace and freeze a Keras model; its outputs keep the model's names (`probs`)."""
    frozen = _freeze(_trace_keras(model, input_signature))
    frozen.shared_batch = True
    try:
        names = [str(n) for n in model.output_names]
        single = not isinstance(model.output, dict)
    except (AttributeError, ValueError, TypeError):
        return frozen
    if single and len(names) == len(frozen.outputs) and all(names):
        frozen.output_names = names
    return frozen


def _trace_keras(model, input_signature):
    tf = _tf()
    if input_signature is None or isinstance(input_signature, dict):
        given = dict(input_signature or {})
        try:
            ins = list(model.inputs)
        except (AttributeError, ValueError):
            ins = None
        if not ins:
            ins = _built_inputs(model)
        if not ins:
            raise InputError(
                "this Keras model has no defined inputs (a subclassed model never called or "
                "built): pass input_signature=[tf.TensorSpec(...)]"
            )
        specs = []
        for i, t in enumerate(ins):
            raw = str(getattr(t, "name", ""))
            name = _spec_name(raw, i)
            shape = given.pop(name, given.pop(raw, None))
            shape = tuple(t.shape) if shape is None else _as_shape(shape) or tuple(t.shape)
            shape = tuple(None if d is None or d < 0 else int(d) for d in shape)
            if len(shape) != len(t.shape):
                raise InputError(f"input {name!r} has rank {len(t.shape)}, given shape {shape}")
            specs.append(tf.TensorSpec(shape, t.dtype, name=name))
        if given:
            names = [s.name for s in specs]
            raise InputError(f"shapes name unknown inputs {sorted(given)}; the inputs are {names}")
    else:
        specs = list(input_signature)
    try:
        struct = model.input
    except (AttributeError, ValueError):
        struct = None

    def call(*xs):
        if len(xs) == 1 and not isinstance(struct, (list, tuple, dict)):
            args = xs[0]
        elif struct is not None and len(tf.nest.flatten(struct)) == len(xs):
            args = tf.nest.pack_sequence_as(struct, list(xs))
        else:
            args = list(xs)
        return model(args, training=False)

    try:
        return tf.function(call, input_signature=specs).get_concrete_function()
    except Exception as e:
        raise InputError(f"cannot trace the Keras model with inputs {specs}: {e}") from None


def _built_inputs(model) -> list:
    """A subclassed model has no symbolic inputs, but once called (or loaded from a .keras
    file) its build config records the shapes it was built with: those, batch unknown."""
    tf = _tf()
    try:
        shape = (model.get_build_config() or {}).get("input_shape")
    except Exception:  # no build config: never built
        return []
    if not isinstance(shape, (list, tuple)) or not shape:
        return []
    flat = all(d is None or isinstance(d, int) for d in shape)
    shapes = [shape] if flat else list(shape)
    if not all(isinstance(s, (list, tuple)) and s for s in shapes):
        return []
    dtype = getattr(model, "input_dtype", None)
    dtype = dtype if isinstance(dtype, str) else "float32"
    return [tf.TensorSpec((None, *s[1:]), dtype, name=f"input_{i}") for i, s in enumerate(shapes)]


def _spec_name(name: str, i: int) -> str:
    out = "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)
    return out if out and out[0].isalpha() else f"input_{i}"


# -- functions -----------------------------------------------------------------------------------
def _concrete(fn, input_signature):
    try:
        if input_signature is not None:
            return fn.get_concrete_function(*input_signature)
        return fn.get_concrete_function()
    except (TypeError, ValueError) as e:
        raise InputError(
            f"cannot get a concrete function from {getattr(fn, '__name__', fn)}: {e}. A "
            "tf.function without an input_signature needs input_signature=[tf.TensorSpec(...)]"
        ) from None


def _freeze(cf, keep_alive=None) -> FrozenGraph:
    """Freeze the variables `cf` captures into constants: the GraphDef with every captured
    variable replaced by a Const (TF's own `convert_variables_to_constants_v2` machinery), its
    placeholders for the remaining (user) inputs, and its outputs.

    `convert_variables_to_constants_v2` itself would then rebuild a ConcreteFunction from that
    GraphDef (import, prune, re-trace: over half the time of freezing a ResNet-50, and nothing
    here needs the function); the GraphDef and the input/output tensor names are the same, so
    this stops before that step. The converter walks only the nodes the outputs need."""
    from tensorflow.python.framework import convert_to_constants as c2c

    tf = _tf()
    # TF keeps While / If functional when asked, but not Case: extend its list for the call.
    saved = c2c._CONTROL_FLOW_OPS
    c2c._CONTROL_FLOW_OPS = saved | {"Case", "StatelessCase"}
    try:
        data = c2c._FunctionConverterDataInEager(
            func=cf, lower_control_flow=False, aggressive_inlining=False
        )
        gd, converted = c2c._replace_variables_by_constants(converter_data=data)
    except Exception as e:
        raise ModelLoadError(f"cannot freeze the function's variables: {e}") from None
    finally:
        c2c._CONTROL_FLOW_OPS = saved
    _register_functions(gd)
    captures = cf.graph.internal_captures
    frozen_ids = {id(captures[i]) for i in converted}
    specs = [
        s for s in tf.nest.flatten(cf.structured_input_signature) if isinstance(s, tf.TensorSpec)
    ]
    inputs = []
    kept = [t for t in cf.inputs if id(t) not in frozen_ids]
    for i, t in enumerate(kept):
        if t.dtype in (tf.resource, tf.variant):
            continue
        shape = t.shape
        user = specs[i].name if i < len(specs) and specs[i].name else t.op.name
        inputs.append(
            GraphInput(
                t.op.name,
                user,
                None if shape.rank is None else tuple(shape.as_list()),
                _dtype_name(t.dtype),
            )
        )
    outs = [t.name for t in cf.outputs]
    names = _output_names(cf.structured_outputs, len(outs))
    del keep_alive
    return FrozenGraph(gd, inputs, outs, names)


def _register_functions(gd) -> None:
    """Make the frozen library's functions (While / If bodies with their variables frozen) the
    eager context's definitions of those names, as rebuilding a ConcreteFunction would: reading
    a FunctionDef that calls another (function_def_to_graph_def) looks the callee up there."""
    if not gd.library.function:
        return
    from tensorflow.python.eager import context

    ctx = context.context()
    for f in gd.library.function:
        if ctx.has_function(f.signature.name):
            ctx.remove_function(f.signature.name)
        ctx.add_function_def(f)


def _output_names(structured, n: int) -> list[str]:
    from tensorflow.python.util import nest

    try:
        paths = [p for p, _ in nest.flatten_with_joined_string_paths(structured)]
    except Exception:
        paths = []
    if len(paths) != n or any(not p for p in paths):
        return [f"output_{i}" for i in range(n)]
    return paths


def _dtype_name(dtype) -> str:
    from .table import tf_dtype

    return tf_dtype(dtype.as_datatype_enum)


def specialize(frozen: FrozenGraph, input_signature) -> FrozenGraph:
    """Refine the inputs' shapes from `input_signature` (a dict name -> shape, or a list in
    input order; TensorSpecs or tuples), e.g. to fix a dynamic batch. Known dims must agree."""
    if input_signature is None:
        return frozen
    if isinstance(input_signature, dict):
        given = {k: _as_shape(v) for k, v in input_signature.items()}
    else:
        sig = list(input_signature)
        if len(sig) != len(frozen.inputs):
            raise InputError(
                f"input_signature has {len(sig)} entries, the model has {len(frozen.inputs)} "
                f"inputs ({', '.join(i.name for i in frozen.inputs)})"
            )
        given = {i.name: _as_shape(s) for i, s in zip(frozen.inputs, sig)}
    names = {i.name for i in frozen.inputs} | {i.node for i in frozen.inputs}
    unknown = sorted(set(given) - names)
    if unknown:
        raise InputError(f"input_signature names unknown inputs {unknown}")
    for inp in frozen.inputs:
        shape = given.get(inp.name, given.get(inp.node))
        if shape is None:
            continue
        old = inp.shape
        if old is not None and (
            len(old) != len(shape)
            or any(a is not None and b is not None and a != b for a, b in zip(old, shape))
        ):
            raise InputError(f"input {inp.name!r} has shape {old}; {shape} does not fit it")
        inp.shape = tuple(shape)
    return frozen


# -- GraphDef ------------------------------------------------------------------------------------
def from_graph_def(gd, input_signature=None, outputs=None) -> FrozenGraph:
    """A FrozenGraph from a GraphDef: inputs are its Placeholders (shapes from their `shape`
    attribute, or from `input_signature`: a dict name -> shape or a list in placeholder order);
    outputs are `outputs` (tensor names) or every tensor no other node consumes."""
    from .table import decode_attr

    placeholders = [n for n in gd.node if n.op == "Placeholder"]
    shapes: dict[str, tuple | None] = {}
    if isinstance(input_signature, dict):
        shapes = {k: _as_shape(v) for k, v in input_signature.items()}
    elif input_signature is not None:
        sig = list(input_signature)
        if len(sig) != len(placeholders):
            raise InputError(
                f"input_signature has {len(sig)} entries but the graph has "
                f"{len(placeholders)} placeholders ({', '.join(p.name for p in placeholders)})"
            )
        shapes = {p.name: _as_shape(s) for p, s in zip(placeholders, sig)}
    inputs = []
    for p in placeholders:
        shape = shapes.get(p.name, decode_attr(p.attr["shape"]) if "shape" in p.attr else None)
        inputs.append(GraphInput(p.name, p.name, shape, decode_attr(p.attr["dtype"])))
    if outputs is None:
        used = set()
        for n in gd.node:
            for i in n.input:
                if not i.startswith("^"):
                    used.add(i.split(":")[0])
        skip = {"NoOp", "Const", "Placeholder", "Assert"}
        outputs = [f"{n.name}:0" for n in gd.node if n.name not in used and n.op not in skip]
        if not outputs:
            raise InputError("the GraphDef has no output tensors; pass outputs=[...]")
    outputs = [o if ":" in o else o + ":0" for o in outputs]
    return FrozenGraph(gd, inputs, outputs, [o.split(":")[0] for o in outputs])


def _as_shape(s):
    if hasattr(s, "shape") and hasattr(s, "dtype"):  # TensorSpec
        s = s.shape
    if hasattr(s, "as_list"):
        return None if s.rank is None else tuple(s.as_list())
    return None if s is None else tuple(s)


def _tf():
    # TF's start-up chatter (oneDNN, CPU features) is noise for a converter's user.
    try:
        with quiet():
            import tensorflow as tf
    except ImportError:
        raise ModelLoadError("converting TensorFlow models needs tensorflow installed") from None
    return tf


def _keras():
    try:
        with quiet():  # keras imports TF
            import keras
    except ImportError:
        raise ModelLoadError("loading .keras files needs keras installed") from None
    return keras
