"""Print the import graph of a package: its cycles (strongly connected components) and sizes.

    python tools/import_graph.py                 # relay_core, every import (lazy ones included)
    python tools/import_graph.py --top-level     # only imports executed at module load
    python tools/import_graph.py --layers        # also the imports between subpackages

Every `import` / `from ... import` statement found by `ast` counts, wherever it sits (a lazy
import inside a function still ties the two files together), unless `--top-level` is given.
`from pkg import name` counts as an edge to `pkg/name.py` when that file exists, else to `pkg`.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
from collections import defaultdict


def _modules(root: str, package: str) -> dict[str, str]:
    """Module name -> file path for every .py file under `root/package`."""
    out = {}
    base = os.path.join(root, package)
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__pycache__")))
        for fn in sorted(filenames):
            if not fn.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, fn), root)[:-3].replace(os.sep, ".")
            if rel.endswith(".__init__"):
                rel = rel[: -len(".__init__")]
            out[rel] = os.path.join(dirpath, fn)
    return out


def _resolve(mod: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = mod.split(".")
    base = parts if is_pkg else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _walk(tree: ast.AST, top_level: bool):
    """Import nodes; with `top_level`, skip bodies of functions (lazy imports)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        if top_level and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if top_level and isinstance(node, ast.If) and _is_type_checking(node.test):
            continue
        stack.extend(ast.iter_child_nodes(node))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def build_graph(root: str, package: str, top_level: bool = False) -> dict[str, set[str]]:
    mods = _modules(root, package)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        is_pkg = path.endswith("__init__.py")
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in _walk(tree, top_level):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                target = _resolve(mod, is_pkg, node)
                targets = [f"{target}.{a.name}" for a in node.names] + [target]
                targets = [t for t in targets[:-1] if t in mods] or [target]
            for t in targets:
                while t and t not in mods:  # `import a.b.c` of a name: the nearest module
                    t = t.rpartition(".")[0]
                if t and t != mod:
                    graph[mod].add(t)
    return graph


def sccs(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components of more than one module, biggest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return sorted(out, key=lambda c: (-len(c), c))


def layer_edges(graph: dict[str, set[str]], package: str) -> dict[tuple[str, str], int]:
    """(subpackage, subpackage) -> number of file-level imports between them."""

    def layer(m: str) -> str:
        parts = m.split(".")
        return parts[1] if len(parts) > 1 else "(root)"

    out: dict[tuple[str, str], int] = defaultdict(int)
    for m, targets in graph.items():
        for t in targets:
            if layer(m) != layer(t):
                out[(layer(m), layer(t))] += 1
    return dict(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("package", nargs="?", default="relay_core")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--top-level", action="store_true", help="ignore imports inside functions")
    ap.add_argument("--layers", action="store_true", help="print imports between subpackages")
    ap.add_argument("--members", action="store_true", help="list the files of each cycle")
    args = ap.parse_args(argv)
    graph = build_graph(args.root, args.package, args.top_level)
    comps = sccs(graph)
    kind = "top-level imports" if args.top_level else "all imports"
    print(f"{args.package}: {len(graph)} files, {sum(map(len, graph.values()))} edges ({kind})")
    print(f"cycles: {len(comps)}, files in cycles: {sum(map(len, comps))}")
    for c in comps:
        subs = defaultdict(int)
        for m in c:
            parts = m.split(".")
            subs[parts[1] if len(parts) > 1 else "(root)"] += 1
        where = ", ".join(f"{k} {v}" for k, v in sorted(subs.items(), key=lambda kv: -kv[1]))
        print(f"  {len(c):4d} files  ({where})")
        if args.members:
            for m in c:
                print(f"         {m}")
    if args.layers:
        print("imports between subpackages (from -> to: files):")
        for (a, b), n in sorted(layer_edges(graph, args.package).items()):
            print(f"  {a:>10} -> {b:<10} {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
