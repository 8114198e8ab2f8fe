"""The layering of relay_core: ir/ is the bottom layer; no module is named after a framework;
an operator's facts are declared by its own module, and the backend finds them through the
OpDef only."""

import os
import re

from tools.import_graph import build_graph, sccs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# What ir/ may import from relay_core: itself and the leaf modules below every layer.
IR_MAY_IMPORT = ("relay_core.ir", "relay_core.errors")
FRAMEWORK = re.compile(r"(^|_)(onnx|ort|torch|pytorch|tf|tensorflow|keras|jax|tflite|mxnet)(_|$)")


def test_ir_imports_nothing_above_it():
    graph = build_graph(ROOT, "relay_core")  # lazy imports inside functions count too
    bad = sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        if m.startswith("relay_core.ir")
        for t in targets
        if t.startswith("relay_core") and not t.startswith(IR_MAY_IMPORT)
    )
    assert not bad, "ir/ reaches into a higher layer:\n" + "\n".join(bad)


def test_ir_and_ops_are_not_one_import_cycle():
    graph = build_graph(ROOT, "relay_core")
    for comp in sccs(graph):
        layers = {m.split(".")[1] for m in comp}
        assert "ir" not in layers or layers == {"ir"}, f"ir/ in a cycle with {sorted(layers)}"


def test_no_module_named_after_a_framework():
    bad = []
    for dirpath, _, files in os.walk(os.path.join(ROOT, "relay_core")):
        for f in files:
            name = f[:-3] if f.endswith(".py") else None
            if name and FRAMEWORK.search(name):
                bad.append(os.path.relpath(os.path.join(dirpath, f), ROOT))
    for d, _, _ in os.walk(os.path.join(ROOT, "relay_core")):
        if FRAMEWORK.search(os.path.basename(d)):
            bad.append(os.path.relpath(d, ROOT))
    assert not bad, f"relay_core modules named after a framework: {bad}"


def test_registries_load_one_way():
    """Every registry is filled by importing its package (its __init__ imports the families):
    no lazy loaders, no modules imported only for their side effects from elsewhere."""
    import ast

    bad = []
    for pkg in ("relay_core", "converters"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, pkg)):
            for f in files:
                if not f.endswith(".py"):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8") as fh:
                    tree = ast.parse(fh.read())
                for node in ast.walk(tree):
                    if isinstance(node, ast.FunctionDef) and node.name in (
                        "_ensure_loaded",
                        "ensure_loaded",
                        "load_all",
                        "_load_families",
                    ):
                        bad.append(f"{os.path.relpath(path, ROOT)}: def {node.name}")
                    if isinstance(node, ast.ImportFrom) and node.names[0].name == "_all":
                        bad.append(f"{os.path.relpath(path, ROOT)}: imports _all")
    assert not bad, "lazy or side-effect registry loading:\n" + "\n".join(bad)


def test_every_registry_is_full_after_import():
    import converters.onnx
    import converters.pytorch
    import converters.tensorflow
    from relay_core import passes
    from relay_core.ops import all_ops

    ops = all_ops()
    assert "nn.conv2d" in ops and "dyn.nn.pad" in ops and "strings.split" in ops
    assert callable(ops["nn.conv2d"].lower) and callable(ops["sort"].lower)
    assert ops["nn.conv2d"].kernel is not None and ops["sort"].kernel is None
    assert ops["exp"].grad is not None and ops["nn.batch_norm"].decompose is not None
    assert converters.onnx.TABLES["ai.onnx"].lookup("Conv", 11) is not None
    assert converters.tensorflow.TF.lookup("Conv2D") is not None
    assert "aten.convolution.default" in converters.pytorch.TORCH
    assert "FoldConstant" in passes.all_passes()


# The facts of an OpDef that a module could be tempted to attach from outside.
OPDEF_FACTS = ("lower", "kernel", "grad", "decompose", "view", "batch_axis0", "to_static")


def _py_files(*pkgs):
    for pkg in pkgs:
        for dirpath, _, files in os.walk(os.path.join(ROOT, pkg)):
            for f in files:
                if f.endswith(".py"):
                    yield os.path.join(dirpath, f)


def test_only_the_declaring_module_sets_an_ops_facts():
    """No module assigns an OpDef's rules or flags after registration except the op's own
    (checked at run time by OpDef.__setattr__, and here in the source: no `x.lower = ...`,
    `x.grad = ...`, `setattr(x, "view", ...)` anywhere but in ops/ declarations)."""
    import ast

    import pytest

    from relay_core.ops import lookup

    with pytest.raises(AttributeError, match="declared by its own module"):
        lookup("exp").grad = None
    with pytest.raises(AttributeError, match="declared by its own module"):
        lookup("nn.conv2d").kernel = None

    bad = []
    for path in _py_files("relay_core", "converters", "relay_import", "tools"):
        rel = os.path.relpath(path, ROOT)
        if rel == os.path.join("relay_core", "ops", "registry.py"):
            continue  # OpDef itself and declare()
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            for t in targets:
                if (
                    isinstance(t, ast.Attribute)
                    and t.attr in OPDEF_FACTS
                    and not (isinstance(t.value, ast.Name) and t.value.id == "self")
                ):
                    bad.append(f"{rel}:{node.lineno}: .{t.attr} = ...")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "setattr"
                and len(node.args) > 1
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in OPDEF_FACTS
            ):
                bad.append(f"{rel}:{node.lineno}: setattr(..., {node.args[1].value!r})")
    assert not bad, "OpDef facts set outside the op's declaration:\n" + "\n".join(bad)


def test_every_declared_rule_resolves():
    """The lazy references (Rule / Kernel) name functions that exist: a typo fails here, not at
    the first compile of that op."""
    from relay_core.ops import all_ops
    from relay_core.ops.registry import Rule

    bad = []
    for name, op in sorted(all_ops().items()):
        for fact in ("lower", "kernel", "grad", "decompose"):
            v = getattr(op, fact)
            if isinstance(v, Rule):
                try:
                    ok = callable(v.resolve())
                except Exception as e:  # noqa: BLE001 - report every broken reference
                    ok, v = False, f"{v!r}: {type(e).__name__}: {e}"
                if not ok:
                    bad.append(f"{name}.{fact}: {v}")
    assert not bad, "unresolvable rules:\n" + "\n".join(bad)


def test_no_name_table_maps_ops_to_kernels():
    """The backend dispatches through the OpDef only: no module-level dict (or dict literal
    in backend/ and te/) is keyed by the names of the ops that have kernels (intrinsic tables
    keyed by `exp`, `sum`, ... are not op tables)."""
    import ast
    import importlib

    from relay_core.ops import all_ops

    names = {n for n, op in all_ops().items() if op.kernel is not None}
    bad = []
    # At run time: module globals of every backend / te module.
    for path in _py_files(os.path.join("relay_core", "backend"), os.path.join("relay_core", "te")):
        mod = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".").removesuffix(".__init__")
        m = importlib.import_module(mod)
        for gname, v in vars(m).items():
            if (
                not gname.startswith("__")
                and isinstance(v, dict)
                and names & set(k for k in v if isinstance(k, str))
            ):
                if any(callable(x) or isinstance(x, tuple) for x in v.values()):
                    bad.append(f"{mod}.{gname}")
    # In the source: dict literals keyed by op names, or by f-strings shaped like them.
    for path in _py_files(os.path.join("relay_core", "backend"), os.path.join("relay_core", "te")):
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        for node in ast.walk(tree):
            keys = []
            if isinstance(node, ast.Dict):
                keys = node.keys
            elif isinstance(node, ast.DictComp):
                keys = [node.key]
            for k in keys:
                if isinstance(k, ast.Constant) and k.value in names:
                    bad.append(f"{os.path.relpath(path, ROOT)}:{node.lineno}: {k.value!r}: ...")
                if isinstance(k, ast.JoinedStr) and any(
                    isinstance(p, ast.Constant) and p.value.startswith("nn.") for p in k.values
                ):
                    bad.append(f"{os.path.relpath(path, ROOT)}:{node.lineno}: f-string op key")
    assert not bad, "name tables from ops to kernels / rules:\n" + "\n".join(bad)
