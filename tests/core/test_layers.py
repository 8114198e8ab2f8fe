"""The layering of relay_core: ir/ is the bottom layer; no module is named after a framework."""

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
    import relay_core.backend.lower  # noqa: F401  (the loop-IR rules)
    from relay_core import passes
    from relay_core.ops import all_ops

    ops = all_ops()
    assert "nn.conv2d" in ops and "dyn.nn.pad" in ops and "strings.split" in ops
    assert callable(ops["nn.conv2d"].lower) and callable(ops["sort"].lower)
    assert ops["exp"].grad is not None and ops["nn.batch_norm"].decompose is not None
    assert converters.onnx.TABLES["ai.onnx"].lookup("Conv", 11) is not None
    assert converters.tensorflow.TF.lookup("Conv2D") is not None
    assert "aten.convolution.default" in converters.pytorch.TORCH
    assert "FoldConstant" in passes.all_passes()
