"""The front door: load, convert, compile, load compiled artifacts.

>>> import relay_import as ri
>>> mod = ri.load("model.onnx")            # or a ModelProto, SavedModel dir, .keras file,
...                                        # Keras model, tf.function, ExportedProgram, .pt2,
...                                        # nn.Module with example_inputs=(x,)
>>> lib = ri.compile(mod)                  # CompiledModule, opt_level=3
>>> outs = lib(x)                          # list of numpy arrays in output order
>>> outs = lib.run(None, {"image": x})     # or as with an onnxruntime InferenceSession
>>> lib.export("model.relaylib"); lib2 = ri.load_compiled("model.relaylib")
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from relay_core import IRModule, events
from relay_core.errors import ModelLoadError

if TYPE_CHECKING:
    from relay_core.backend.runtime import CompiledModule

ModelSource = Any  # a path, or an in-memory model of any supported framework
Shapes = Mapping[str, Sequence[int]]


def from_onnx(model: ModelSource, shapes: Shapes | None = None, **kw: Any) -> IRModule:
    """Convert an ONNX ModelProto or .onnx path. `shapes={"input": (1, 3, 224, 224)}` fixes
    dynamic dims; see converters.onnx.from_onnx for the other options."""
    from converters.onnx import from_onnx as _from_onnx

    with events.stage(f"converting {_display_name(model)}"):
        return name_io(_from_onnx(model, shapes=shapes, **kw))


def from_pytorch(
    obj: ModelSource,
    example_inputs: Sequence[Any] | None = None,
    dynamic_shapes: Any = None,
    **kw: Any,
) -> IRModule:
    """Convert a torch.export ExportedProgram, a .pt2 path, or an nn.Module + example inputs.
    `shapes={"x": (1, 3, 16, 16)}` re-exports it at those input shapes (see converters.pytorch)."""
    from converters.pytorch import from_pytorch as _from_pytorch

    with events.stage(f"converting {_display_name(obj)}"):
        return name_io(
            _from_pytorch(obj, example_inputs=example_inputs, dynamic_shapes=dynamic_shapes, **kw)
        )


def from_tensorflow(obj: ModelSource, input_signature: Any = None, **kw: Any) -> IRModule:
    """Convert a SavedModel dir, .keras file, Keras model, tf.function or GraphDef.
    `shapes={"x": (1, 16, 16, 3)}` fixes input shapes (a dict input_signature)."""
    from converters.tensorflow import from_tensorflow as _from_tensorflow

    with events.stage(f"converting {_display_name(obj)}"):
        return name_io(_from_tensorflow(obj, input_signature=input_signature, **kw))


def _display_name(source) -> str:
    if isinstance(source, (str, os.PathLike)):
        return Path(source).name or str(source)
    return f"a {type(source).__name__}"


def name_io(mod: IRModule) -> IRModule:
    """Record the framework's input and output names on @main (as function attributes, so that
    they survive the text format and reach the compiled module's manifest). Input names are
    recorded only where a parameter had to be renamed (`input.1` -> `%input_1`)."""
    main = mod.functions and mod["main"]
    if not main:
        return mod
    attrs = {}
    outs = mod.attrs.get("output_names")
    if outs and main.attr("output_names") is None:
        attrs["output_names"] = tuple(str(n) for n in outs)
    ins = mod.attrs.get("input_names")
    params = [p.name_hint for p in main.params]
    if ins and len(ins) <= len(params) and main.attr("input_names") is None:
        if any(a != b for a, b in zip(ins, params)):
            attrs["input_names"] = tuple(str(n) for n in ins)
    if not attrs:
        return mod
    new = main
    for k, v in attrs.items():
        new = new.with_attr(k, v)
    if main.has_type:
        new._set_type(main.checked_type)
    mod["main"] = new
    return mod


def detect_framework(source: ModelSource) -> str:
    """'onnx', 'pytorch', 'tensorflow' or 'relay' for anything `load` accepts."""
    if isinstance(source, IRModule):
        return "relay"
    if isinstance(source, (str, os.PathLike)):
        p = Path(source)
        if not p.exists():
            raise ModelLoadError(f"{p}: no such file or directory")
        if p.is_dir():
            if (p / "saved_model.pb").exists() or (p / "saved_model.pbtxt").exists():
                return "tensorflow"
            if (p / "manifest.json").exists():
                return "compiled"
            raise ModelLoadError(
                f"{p}: a directory that is neither a SavedModel (no saved_model.pb) "
                "nor a compiled artifact (no manifest.json)"
            )
        suffix = p.suffix.lower()
        if suffix == ".onnx":
            return "onnx"
        if suffix == ".pt2":
            return "pytorch"
        if suffix in (".pt", ".pth"):
            return "pytorch"
        if suffix in (".keras", ".h5", ".pb"):
            return "tensorflow"
        if suffix in (".relay", ".rly", ".txt"):
            return "relay"
        with open(p, "rb") as f:
            head = f.read(4)
        if head[:2] == b"PK":
            return "pytorch"
        return "onnx"  # ONNX files are bare protobuf; from_onnx says clearly if it is not one
    mod = type(source).__module__ or ""
    name = type(source).__name__
    if mod.startswith("onnx"):
        return "onnx"
    if mod.startswith("torch"):
        return "pytorch"
    if mod.startswith(("tensorflow", "keras", "tf_keras")):
        return "tensorflow"
    if name == "ModelProto":
        return "onnx"
    try:  # nn.Module subclasses defined by users live in the user's module
        import sys

        torch = sys.modules.get("torch")
        if torch is not None and isinstance(
            source, (torch.nn.Module, torch.export.ExportedProgram)
        ):
            return "pytorch"
        keras = sys.modules.get("keras")
        if keras is not None and isinstance(source, keras.Model):
            return "tensorflow"
        tf = sys.modules.get("tensorflow")
        if tf is not None and callable(getattr(source, "get_concrete_function", None)):
            return "tensorflow"
    except Exception:
        pass
    raise ModelLoadError(
        f"cannot tell which framework a {mod}.{name} comes from; use from_onnx, from_pytorch "
        "or from_tensorflow"
    )


def load(source: ModelSource, cache: bool = True, **kw: Any) -> IRModule:
    """Convert a model from any supported framework to a typed Relay module.

    Keyword arguments go to the framework's converter (`shapes=` for all three, `example_inputs=`
    for an nn.Module, `input_signature=` for a tf.function, `custom_convert_map=` for all).
    A `.relay` text file is parsed.

    A model file (or SavedModel directory) converted before with the same options is read back
    from the conversion cache in the relay cache directory (`cache=False` or
    `RELAY_CACHE_DIR=` empty: always convert; see relay_import.convert_cache).
    """
    fw = detect_framework(source)
    entry = None
    if cache and fw in ("onnx", "pytorch", "tensorflow"):
        from . import convert_cache

        entry = convert_cache.cache_path(source, fw, kw)
        if entry is not None:
            # one progress line either way: a miss says nothing and the conversion reports
            t0 = time.perf_counter()
            mod = convert_cache.get(entry)
            if mod is not None:
                with events.stage(f"converting {_display_name(source)}") as st:
                    st.t0 = t0  # the line's time includes the read
                    st.note("cache hit")
                return mod
    mod = _convert(source, fw, **kw)
    if entry is not None:
        convert_cache.put(entry, mod)
    return mod


def _convert(source: ModelSource, fw: str, **kw: Any) -> IRModule:
    if fw == "relay":
        if isinstance(source, IRModule):
            return source
        import relay_core

        p = Path(source)
        with events.stage(f"parsing {p.name}"):
            return relay_core.parse(p.read_text(encoding="utf-8"), source_name=str(p))
    if fw == "onnx":
        return from_onnx(source, **kw)
    if fw == "pytorch":
        return from_pytorch(source, **kw)
    if fw == "tensorflow":
        return from_tensorflow(source, **kw)
    raise ModelLoadError(f"{source}: a compiled artifact; load it with load_compiled")


def compile(mod: IRModule, opt_level: int = 3, **kw: Any) -> CompiledModule:  # noqa: A001
    """Compile a Relay module to native code: a callable CompiledModule.

    `num_threads=`, `pass_context=` (a relay_core.passes.PassContext), `max_tensor_bytes=` (the
    compile-time byte budget of any one tensor) and `cache=False` go to
    relay_core.build.

    >>> lib = ri.compile(ri.load("model.onnx"))
    >>> lib.run(None, {"image": x})[0]
    """
    import relay_core

    return relay_core.build(mod, target="llvm", opt_level=opt_level, **kw)


def load_compiled(path: str | os.PathLike, num_threads: int | None = None) -> CompiledModule:
    """Load an artifact written by CompiledModule.export (needs only numpy).

    >>> lib = ri.load_compiled("model.relaylib"); lib.get_inputs()[0].shape
    """
    import relay_core

    return relay_core.load_module(os.fspath(path), num_threads)
