"""Getting an ExportedProgram: from a module (exported here), or from an untrusted `.pt2` file.

`torch.export.load` is not safe on files from strangers: it unpickles payloads
(`torch.load(weights_only=False)`, `pickle.loads`), evaluates symbolic-size strings with
`sympy.sympify` (which runs `eval`), and imports modules named in pytree specs. So `.pt2`
archives are read here instead: the archive is inspected first and refused when it holds
anything that could run code (pickled weights or constants, TorchScript / opaque objects,
compiled AOTInductor libraries, unknown call targets, symbolic expressions beyond arithmetic,
pytree specs that import modules); weights are decoded from their raw bytes with bounds
checks; only then does torch's JSON deserializer rebuild the graph, with no example inputs.
Plain pickles (`torch.save` of a module, `.pt`) are refused with an explanation.
"""

from __future__ import annotations

import json
import os
import re
import zipfile

from relay_core.errors import ModelLoadError

_PICKLE_ADVICE = (
    "Unpickling can run arbitrary code, so such files are refused. Export the model instead: "
    "ep = torch.export.export(model.eval(), example_inputs); torch.export.save(ep, 'model.pt2'), "
    "then convert the .pt2 file (or pass the nn.Module with example_inputs)."
)

# Limits for archive contents.
MAX_JSON_BYTES = 512 << 20
MAX_TENSOR_BYTES = 16 << 30

_EXPR_FUNCS = {
    "Max",
    "Min",
    "FloorDiv",
    "Mod",
    "PythonMod",
    "CeilToInt",
    "FloorToInt",
    "TruncToInt",
    "IntTrueDiv",
    "FloatTrueDiv",
    "ToFloat",
    "Abs",
    "sqrt",
    "Eq",
    "Ne",
    "Lt",
    "Le",
    "Gt",
    "Ge",
    "And",
    "Or",
    "Not",
    "True",
    "False",
    "oo",
    "int_oo",
    "zoo",
    "nan",
    "pi",
    "CleanDiv",
    "Pow",
    "PowByNatural",
    "FloatPow",
    "RoundToInt",
    "RoundDecimal",
    "LShift",
    "RShift",
    "BitwiseFn_bitwise_and",
    "BitwiseFn_bitwise_or",
    "BitwiseFn_bitwise_xor",
    "Identity",
    "TruncToFloat",
    "Integer",
    "Float",
    "Rational",
    "Symbol",
    "Mul",
    "Add",
    "Piecewise",
    "IsNonOverlappingAndDenseIndicator",
    "CeilDiv",
    # keyword arguments of Symbol('s0', positive=True, integer=True)
    "positive",
    "negative",
    "integer",
    "real",
    "nonnegative",
    "nonzero",
    "finite",
}
_EXPR_TOKEN = re.compile(
    r"\s*(?:([A-Za-z_][A-Za-z_0-9]*)|(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)|"
    r"('[A-Za-z_][A-Za-z_0-9]*')|(\*\*|//|==|!=|<=|>=|[-+*/%(),<>&|~=]))"
)
_SYMBOL = re.compile(r"^[a-z]\d+$")

_OPERATOR_TARGETS = {
    "getitem",
    "add",
    "sub",
    "mul",
    "truediv",
    "floordiv",
    "mod",
    "pow",
    "neg",
    "pos",
    "abs",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "and_",
    "or_",
    "xor",
    "not_",
    "invert",
    "lshift",
    "rshift",
    "matmul",
}
_MATH_TARGETS = {"sqrt", "ceil", "floor", "trunc", "exp", "log", "sin", "cos", "tan", "pow"}
_TORCH_TARGETS = re.compile(r"^torch\.(sym_[a-z_]+|_sym_sqrt|_check|_check_is_size|_assert)$")
_BAD_TREESPEC = ("__enum__", "collections.defaultdict")


def is_pickle_bytes(head: bytes) -> bool:
    """A raw pickle (protocol 2+) or legacy torch.save file."""
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5


def load_pt2(path, fast: bool = False) -> object:
    """A `torch.export.ExportedProgram` from a `.pt2` archive, refusing anything that could run
    code. Raises ModelLoadError with the reason.

    `fast=True`: where the program is within what `pt2_graph` reads (static shapes, ATen ops,
    a known schema version), a `pt2_graph.FastProgram` built without torch's deserializer: what
    conversion needs, seconds sooner on a large model; torch's ExportedProgram otherwise."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as e:
        raise ModelLoadError(f"cannot read {path}: {e.strerror or e}") from None
    if is_pickle_bytes(head):
        raise ModelLoadError(
            f"{path} is a Python pickle (torch.save), not a .pt2 archive. " + _PICKLE_ADVICE
        )
    if not zipfile.is_zipfile(path):
        raise ModelLoadError(f"{path} is not a valid .pt2 archive (not a zip file)")
    from ..archive import check_zip

    check_zip(path, f".pt2 archive {path}")
    try:
        with zipfile.ZipFile(path) as z:
            return _load_archive(z, path, fast)
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        raise ModelLoadError(f"{path} is not a valid .pt2 archive: {e}") from None


def _load_archive(z: zipfile.ZipFile, path: str, fast: bool = False):
    names = z.namelist()
    roots = {n.split("/", 1)[0] for n in names if "/" in n}
    if len(roots) != 1:
        raise ModelLoadError(f"{path} is not a valid .pt2 archive (expected one root folder)")
    root = roots.pop() + "/"
    rel = {n[len(root) :]: n for n in names if n.startswith(root)}
    if "data.pkl" in rel or any(r.endswith(".pkl") for r in rel):
        kind = "a TorchScript archive" if "code/" in " ".join(rel) else "a pickled torch.save file"
        raise ModelLoadError(
            f"{path} is {kind}, not a torch.export .pt2 archive. " + _PICKLE_ADVICE
        )
    fmt = z.read(rel["archive_format"]).strip() if "archive_format" in rel else b""
    if fmt != b"pt2":
        raise ModelLoadError(f"{path} is not a .pt2 archive (archive_format is {fmt[:16]!r})")
    bad = [r for r in rel if r.startswith("data/aotinductor/") or r.endswith((".so", ".dll"))]
    if bad:
        raise ModelLoadError(
            f"{path} holds compiled AOTInductor code ({bad[0]}); native code is never loaded. "
            "Save the ExportedProgram alone with torch.export.save."
        )
    models = sorted(r for r in rel if r.startswith("models/") and r.endswith(".json"))
    if not models:
        raise ModelLoadError(f"{path} holds no exported program (models/*.json)")
    if len(models) > 1:
        raise ModelLoadError(
            f"{path} holds several programs ({', '.join(models)}); save one program per file"
        )
    name = models[0][len("models/") : -len(".json")]
    for legacy in (f"data/weights/{name}.pt", f"data/constants/{name}.pt"):
        if legacy in rel:
            raise ModelLoadError(
                f"{path} stores {legacy} in the legacy pickled format. " + _PICKLE_ADVICE
            )
    program = _read_json(z, rel[models[0]], path)
    _check_program(program, path)
    state_dict = _read_payloads(
        z, rel, f"data/weights/{name}_weights_config.json", "data/weights/", path
    )
    constants = _read_payloads(
        z, rel, f"data/constants/{name}_constants_config.json", "data/constants/", path
    )
    if fast:
        from .pt2_graph import read_program

        prog = read_program(
            program,
            state_dict,
            constants,
            lambda: _deserialize(program, state_dict, constants, path),
        )
        if prog is not None:
            return prog
    return _deserialize(program, state_dict, constants, path)


def _read_json(z, member: str, path: str):
    info = z.getinfo(member)
    if info.file_size > MAX_JSON_BYTES:
        raise ModelLoadError(f"{path}: {member} is {info.file_size:,} bytes, over the limit")
    try:
        return json.loads(z.read(member).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise ModelLoadError(f"{path}: {member} is not valid JSON: {e}") from None


# -- what the program may contain ---------------------------------------------------------------


def _check_program(program, path: str) -> None:
    """Walk the serialized program and refuse anything the deserializer would turn into code."""
    if not isinstance(program, dict) or "graph_module" not in program:
        raise ModelLoadError(f"{path}: the program JSON has no graph_module")
    program["guards_code"] = []  # Python source for guards: never needed to convert
    for key in program.get("range_constraints", {}):
        _check_expr(key, path)
    stack = [program]
    while stack:
        obj = stack.pop()
        if isinstance(obj, dict):
            if "target" in obj and "inputs" in obj and "outputs" in obj:
                _check_target(obj["target"], path)
            for k, v in obj.items():
                if k == "expr_str":
                    _check_expr(v, path)
                elif k in ("in_spec", "out_spec") and isinstance(v, str):
                    _check_treespec(v, path)
                elif k in ("as_custom_obj", "as_custom_objs", "custom_obj"):
                    raise ModelLoadError(
                        f"{path} uses a TorchScript/custom object; such objects are unpickled "
                        "on load and are refused"
                    )
                if isinstance(v, (dict, list)):
                    stack.append(v)
        elif isinstance(obj, list):
            stack.extend(v for v in obj if isinstance(v, (dict, list)))


def _check_target(target, path: str) -> None:
    import torch

    if not isinstance(target, str):
        raise ModelLoadError(f"{path}: a node has a non-string target")
    ok = False
    if target.startswith("torch.ops."):
        parts = target.split(".")
        if len(parts) >= 4 and all(p.isidentifier() and not p.startswith("__") for p in parts):
            try:
                obj = getattr(getattr(torch.ops, parts[2]), parts[3])
                for p in parts[4:]:
                    obj = getattr(obj, p)
                ok = isinstance(
                    obj,
                    (
                        torch._ops.OpOverload,
                        torch._ops.HigherOrderOperator,
                        torch._ops.OpOverloadPacket,
                    ),
                )
            except (AttributeError, RuntimeError):
                ok = False
    elif target.startswith("_operator."):
        ok = target[len("_operator.") :] in _OPERATOR_TARGETS
    elif target.startswith("math."):
        ok = target[len("math.") :] in _MATH_TARGETS
    else:
        ok = bool(_TORCH_TARGETS.match(target))
    if not ok:
        raise ModelLoadError(
            f"{path} calls {target[:80]!r}, which is not an ATen / higher-order operator or a "
            "size arithmetic function; refusing to load it"
        )


def _check_expr(s, path: str) -> None:
    """Symbolic sizes must be arithmetic over symbols (they are parsed with sympify = eval)."""
    if not isinstance(s, str) or len(s) > 10_000:
        raise ModelLoadError(f"{path}: malformed symbolic expression")
    pos = 0
    while pos < len(s):
        m = _EXPR_TOKEN.match(s, pos)
        if m is None or m.end() == pos:
            if s[pos:].strip() == "":
                break
            raise ModelLoadError(f"{path}: symbolic expression {s[:60]!r} is not arithmetic")
        ident = m.group(1)
        if (
            ident is not None
            and ident not in _EXPR_FUNCS
            and not _SYMBOL.match(ident)
            and not ident.startswith("OpaqueUnaryFn_")
        ):
            raise ModelLoadError(
                f"{path}: symbolic expression {s[:60]!r} uses {ident!r}; only size arithmetic "
                "is accepted"
            )
        pos = m.end()


def _check_treespec(s: str, path: str) -> None:
    if any(b in s for b in _BAD_TREESPEC):
        raise ModelLoadError(
            f"{path}: an input/output spec would import Python modules; refusing to load it"
        )


# -- weights --------------------------------------------------------------------------------------


def _read_payloads(z, rel: dict, config_name: str, folder: str, path: str) -> dict:
    import torch

    from .pt2_graph import dtype_of

    if config_name not in rel:
        return {}
    config = _read_json(z, rel[config_name], path).get("config", {})
    out = {}
    for fqn, meta in config.items():
        if meta.get("use_pickle"):
            raise ModelLoadError(
                f"{path}: {fqn!r} is stored as a pickle (a tensor subclass or an object). "
                + _PICKLE_ADVICE
            )
        file = str(meta.get("path_name", ""))
        if not re.fullmatch(r"(weight|tensor)_\d+", file):
            raise ModelLoadError(
                f"{path}: {fqn!r} is stored as {file[:40]!r}; only raw tensors are accepted "
                "(custom and opaque objects are unpickled on load)"
            )
        member = rel.get(folder + file)
        if member is None:
            raise ModelLoadError(f"{path}: {fqn!r} refers to a missing file {folder + file}")
        tm = meta.get("tensor_meta") or {}
        try:
            dtype = dtype_of(tm["dtype"])
            if dtype is None:
                raise ValueError(f"unknown dtype code {tm['dtype']!r}")
            sizes = [_as_int(s) for s in tm["sizes"]]
            strides = [_as_int(s) for s in tm["strides"]]
            offset = _as_int(tm.get("storage_offset", {"as_int": 0}))
        except (KeyError, TypeError, ValueError) as e:
            raise ModelLoadError(f"{path}: bad tensor metadata for {fqn!r}: {e}") from None
        out[fqn] = _strided_tensor(z, member, dtype, sizes, strides, offset, fqn, path)
        if meta.get("is_param"):
            out[fqn] = torch.nn.Parameter(out[fqn], requires_grad=False)
    return out


def _as_int(s) -> int:
    if not isinstance(s, dict) or "as_int" not in s or not isinstance(s["as_int"], int):
        raise ValueError("sizes, strides and offsets of weights must be plain ints")
    return s["as_int"]


def _strided_tensor(z, member, dtype, sizes, strides, offset, fqn, path):
    import torch

    itemsize = torch.empty((), dtype=dtype).element_size()
    nbytes = z.getinfo(member).file_size
    if (
        len(sizes) != len(strides)
        or any(d < 0 for d in sizes)
        or any(s < 0 for s in strides)
        or offset < 0
    ):
        raise ModelLoadError(f"{path}: bad sizes/strides for {fqn!r}")
    numel = 1
    for d in sizes:
        numel *= d
    if numel * itemsize > MAX_TENSOR_BYTES:
        raise ModelLoadError(f"{path}: {fqn!r} declares {numel * itemsize:,} bytes, over the limit")
    if numel == 0:
        return torch.zeros(sizes, dtype=dtype)
    last = offset + sum((d - 1) * s for d, s in zip(sizes, strides))
    if (last + 1) * itemsize > nbytes:
        raise ModelLoadError(
            f"{path}: {fqn!r} needs {(last + 1) * itemsize:,} bytes but its file holds {nbytes:,}"
        )
    raw = bytearray(z.read(member))
    if len(raw) % itemsize:
        raise ModelLoadError(f"{path}: {fqn!r}: file size is not a multiple of the element size")
    flat = torch.frombuffer(raw, dtype=dtype) if raw else torch.zeros(0, dtype=dtype)
    dense, step = [], 1
    for d in reversed(sizes):
        dense.append(step)
        step *= d
    if offset == 0 and list(strides) == dense[::-1] and numel == flat.numel():
        return flat.view(sizes)  # the whole private buffer, in order: no copy needed
    return torch.as_strided(flat, sizes, strides, offset).clone()


def _deserialize(program: dict, state_dict: dict, constants: dict, path: str):
    from torch._export.serde import schema
    from torch._export.serde.serialize import ExportedProgramDeserializer, _dict_to_dataclass

    try:
        serialized = _dict_to_dataclass(schema.ExportedProgram, program)
        return ExportedProgramDeserializer().deserialize(serialized, state_dict, constants, None)
    except ModelLoadError:
        raise
    except Exception as e:  # torch's deserializer reports malformed programs in many ways
        raise ModelLoadError(
            f"{path}: cannot rebuild the exported program: {type(e).__name__}: {e}"
        ) from None


def refuse_pickle_file(path) -> None:
    """Raise ModelLoadError for a `.pt` / `.pth` pickle (whole module or state dict)."""
    raise ModelLoadError(f"{os.fspath(path)} is a pickled PyTorch file. " + _PICKLE_ADVICE)


def classify_file(path) -> str:
    """'pt2', 'pickle' (torch.save / TorchScript / raw pickle) or 'unknown'."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as e:
        raise ModelLoadError(f"cannot read {os.fspath(path)}: {e.strerror or e}") from None
    if is_pickle_bytes(head):
        return "pickle"
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
        if any(n.endswith("/archive_format") for n in names) and not any(
            n.endswith(".pkl") for n in names
        ):
            return "pt2"
        if any(n.endswith(".pkl") for n in names):
            return "pickle"
    return "unknown"
