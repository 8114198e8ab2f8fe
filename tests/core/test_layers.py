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
