"""Loading ONNX models safely.

Order of checks, so that nothing unsafe is opened or allocated:
1. bytes -> ModelProto (a parse failure or an empty message is "not a valid ONNX model");
2. every tensor (initializers, Constant attributes, subgraphs, local functions) is checked:
   known element type, non-negative dims, declared size within the byte budget, and the bytes it
   holds match what its dims declare;
3. external data: the location must stay inside the model's directory (no absolute paths, no
   `..`, no symlink out of it) and the file must hold offset + length bytes; only then is it read,
   by us, into the tensor (onnx never opens a path);
4. onnx.checker with full_check.
"""

from __future__ import annotations

import os
import re
import stat

from relay_core.errors import ModelLoadError, ResourceLimitError

from .dtypes import _ONNX_DTYPES, declared_nbytes

DEFAULT_BYTE_BUDGET = 4 << 30  # 4 GiB


def _onnx():
    try:
        import onnx
    except ImportError:  # pragma: no cover
        raise ModelLoadError(
            "converting ONNX models needs the onnx package: pip install onnx"
        ) from None
    return onnx


def load_model(
    model,
    *,
    byte_budget: int = DEFAULT_BYTE_BUDGET,
    base_dir: str | None = None,
    check: bool = True,
):
    """A checked ModelProto from a path, bytes or a ModelProto; external data inlined.

    >>> m = load_model("model.onnx")
    Raises ModelLoadError (malformed / unsafe) or ResourceLimitError (over `byte_budget`).
    """
    onnx = _onnx()
    source = "model"
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        source = repr(path)
        try:
            st = os.stat(path)
        except OSError as e:
            raise ModelLoadError(f"cannot open ONNX model {path!r}: {e.strerror}") from None
        if not stat.S_ISREG(st.st_mode):
            raise ModelLoadError(f"{path!r} is not a file")
        if st.st_size > byte_budget:
            raise ResourceLimitError(
                f"ONNX model {path!r} is {st.st_size:,} bytes, over the byte budget of "
                f"{byte_budget:,}"
            )
        with open(path, "rb") as f:
            data = f.read()
        proto = _parse(onnx, data, source)
        if base_dir is None:
            base_dir = os.path.dirname(os.path.abspath(path))
    elif isinstance(model, (bytes, bytearray, memoryview)):
        proto = _parse(onnx, bytes(model), source)
    elif isinstance(model, onnx.ModelProto):
        proto = model
        if _has_external_data(proto):  # we inline data: do not modify the caller's proto
            proto = onnx.ModelProto()
            proto.CopyFrom(model)
    else:
        raise ModelLoadError(
            f"expected an ONNX ModelProto, a path or bytes, not {type(model).__name__}"
        )
    if not proto.HasField("graph") or not proto.opset_import:
        raise ModelLoadError(
            f"{source} is not a valid ONNX model: it has no graph or no opset_import "
            "(empty, truncated or not an ONNX file)"
        )
    check_tensors(proto, byte_budget, base_dir)
    if check:
        run_checker(proto, source)
    return proto


def _parse(onnx, data: bytes, source: str):
    if not data:
        raise ModelLoadError(f"{source} is not a valid ONNX model: it is empty")
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except Exception as e:  # google.protobuf.message.DecodeError and friends
        raise ModelLoadError(
            f"{source} is not a valid ONNX model: it cannot be parsed ({type(e).__name__}: "
            f"{e}); the file may be truncated or not an ONNX file"
        ) from None
    return proto


def run_checker(proto, source: str = "model") -> None:
    """onnx.checker with full_check (structure, then strict shape inference)."""
    onnx = _onnx()
    try:
        onnx.checker.check_model(proto, full_check=True)
    except Exception as e:  # ValidationError, InferenceError, ...
        msg = str(e).strip()
        if _in_function_body(msg):
            return
        lines = msg.splitlines()
        text = "; ".join(line.strip() for line in lines[:6] if line.strip())
        raise ModelLoadError(f"{source} is not a valid ONNX model: {text}") from None


def _in_function_body(msg: str) -> bool:
    # onnx's strict inference fails inside some standard ops' own function bodies (e.g.
    # MeanVarianceNormalization at opset 9-12); the model is fine, the converter does not
    # use those bodies.
    return _NESTED.search(msg) is not None


_NESTED = re.compile(
    r"\(op_type:\w+[^)]*\): \[ShapeInferenceError\] Inference error\(s\): \(op_type:"
)


# ---------------------------------------------------------------------------------------------
# Tensors.


def iter_tensors(proto):
    """(where, TensorProto) for every tensor in the model, subgraphs and functions included."""
    graphs = [("graph", proto.graph)]
    for f in proto.functions:
        graphs.append((f"function {f.name}", f))
    while graphs:
        where, g = graphs.pop()
        for t in getattr(g, "initializer", ()):
            yield f"{where} initializer {t.name!r}", t
        for sp in getattr(g, "sparse_initializer", ()):
            yield f"{where} sparse initializer {sp.values.name!r}", sp.values
            yield f"{where} sparse initializer {sp.values.name!r} indices", sp.indices
        for node in g.node:
            label = f"node {node.name or node.op_type!r} ({node.op_type})"
            for a in node.attribute:
                if a.HasField("t"):
                    yield f"{label} attribute {a.name}", a.t
                for t in a.tensors:
                    yield f"{label} attribute {a.name}", t
                if a.HasField("sparse_tensor"):
                    yield f"{label} attribute {a.name}", a.sparse_tensor.values
                    yield f"{label} attribute {a.name} indices", a.sparse_tensor.indices
                if a.HasField("g"):
                    graphs.append((f"{label} {a.name}", a.g))
                for sg in a.graphs:
                    graphs.append((f"{label} {a.name}", sg))


def _has_external_data(proto) -> bool:
    return any(t.data_location == 1 for _, t in iter_tensors(proto))


def check_tensors(proto, byte_budget: int, base_dir: str | None) -> None:
    """Validate every tensor's declared size against its bytes and the budget; inline
    external data from inside `base_dir`."""
    total = 0
    for where, t in iter_tensors(proto):
        total += check_tensor(t, where, byte_budget, base_dir)
        if total > byte_budget:
            raise ResourceLimitError(
                f"the model's tensors hold over {total:,} bytes, over the byte budget of "
                f"{byte_budget:,} (at {where})"
            )


_TYPED_FIELDS = {  # element type -> (field, values per element)
    1: ("float_data", 1),
    14: ("float_data", 2),
    11: ("double_data", 1),
    15: ("double_data", 2),
    7: ("int64_data", 1),
    12: ("uint64_data", 1),
    13: ("uint64_data", 1),
    8: ("string_data", 1),
}


def check_tensor(t, where: str, byte_budget: int, base_dir: str | None) -> int:
    """Check one TensorProto; returns its size in bytes."""
    if t.data_type not in _ONNX_DTYPES:
        raise ModelLoadError(f"{where} has unknown element type {t.data_type}")
    n = 1
    for d in t.dims:
        if d < 0:
            raise ModelLoadError(f"{where} has a negative dimension {d} in {list(t.dims)}")
        n *= int(d)
    nbytes = declared_nbytes(t.data_type, n)
    if nbytes is not None and nbytes > byte_budget:
        raise ResourceLimitError(
            f"{where} declares shape {list(t.dims)} ({nbytes:,} bytes), over the byte budget "
            f"of {byte_budget:,}"
        )
    if t.data_location == 1:  # EXTERNAL
        _inline_external(t, where, nbytes, base_dir)
    if t.HasField("raw_data") or (nbytes == 0 and not _typed_count(t)):
        if nbytes is not None and len(t.raw_data) != nbytes:
            raise ModelLoadError(
                f"{where} declares shape {list(t.dims)} ({nbytes:,} bytes) but holds "
                f"{len(t.raw_data):,} bytes"
            )
        return len(t.raw_data)
    count = _typed_count(t)
    field, per = _TYPED_FIELDS.get(t.data_type, ("int32_data", 1))
    expected = n * per
    ok = count == expected
    if not ok and t.data_type in (21, 22, 23, 25, 26):  # sub-byte types may be packed
        ok = count == nbytes or count == (nbytes + 3) // 4
    if not ok:
        raise ModelLoadError(
            f"{where} declares shape {list(t.dims)} ({expected:,} values) but holds {count:,} "
            f"values in {field}"
        )
    return nbytes if nbytes is not None else sum(len(s) for s in t.string_data)


def _typed_count(t) -> int:
    field, _ = _TYPED_FIELDS.get(t.data_type, ("int32_data", 1))
    return len(getattr(t, field))


def resolve_external_path(location: str, base_dir: str, where: str = "tensor") -> str:
    """The real path of `location` if it stays inside `base_dir`, else ModelLoadError."""
    if not location:
        raise ModelLoadError(f"{where} has external data without a location")
    if "\x00" in location:
        raise ModelLoadError(f"{where}: external data location contains a NUL byte")
    norm = location.replace("\\", "/")
    if os.path.isabs(location) or norm.startswith("/") or (len(norm) > 1 and norm[1] == ":"):
        raise ModelLoadError(
            f"{where}: external data location {location!r} is an absolute path; only paths "
            "inside the model's directory are allowed"
        )
    if ".." in norm.split("/"):
        raise ModelLoadError(
            f"{where}: external data location {location!r} leaves the model's directory"
        )
    base = os.path.realpath(base_dir)
    real = os.path.realpath(os.path.join(base, norm))
    if os.path.commonpath([base, real]) != base:
        raise ModelLoadError(
            f"{where}: external data location {location!r} resolves outside the model's "
            "directory (through a symbolic link)"
        )
    return real


def _inline_external(t, where: str, nbytes: int | None, base_dir: str | None) -> None:
    info = {e.key: e.value for e in t.external_data}
    if base_dir is None:
        raise ModelLoadError(
            f"{where} keeps its data in an external file but the model was not loaded from a "
            "path; load it by path (or pass base_dir=) so the file can be found"
        )
    path = resolve_external_path(info.get("location", ""), base_dir, where)
    try:
        offset = int(info.get("offset", 0) or 0)
        length = int(info["length"]) if info.get("length") not in (None, "") else None
    except ValueError:
        raise ModelLoadError(f"{where}: external data offset/length are not integers") from None
    if offset < 0 or (length is not None and length < 0):
        raise ModelLoadError(f"{where}: negative external data offset or length")
    try:
        st = os.stat(path)
    except OSError:
        raise ModelLoadError(
            f"{where}: external data file {info.get('location')!r} does not exist"
        ) from None
    if not stat.S_ISREG(st.st_mode):
        raise ModelLoadError(f"{where}: external data {info.get('location')!r} is not a file")
    if length is None:
        length = st.st_size - offset
    if nbytes is not None and length != nbytes:
        raise ModelLoadError(
            f"{where} declares shape {list(t.dims)} ({nbytes:,} bytes) but its external data "
            f"length is {length:,}"
        )
    if offset + length > st.st_size:
        raise ModelLoadError(
            f"{where}: external data needs bytes {offset:,}..{offset + length:,} but "
            f"{info.get('location')!r} holds only {st.st_size:,}"
        )
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read(length)
    if len(data) != length:
        raise ModelLoadError(f"{where}: external data file is shorter than declared")
    t.raw_data = data
    del t.external_data[:]
    t.data_location = 0
