"""Dump, for every registered operator, how it is declared: lowering rule, kernel, gradient,
decomposition and flags, one line per fact. Used to check that reorganising the declarations
changes nothing: `python -m tools.op_rules > before.txt`, edit, dump again, diff.

A rule is printed as module:qualname, the values its closure captured (recursively), and a hash
of its bytecode, so that moving the declaration does not show while changing the rule does.
"""

from __future__ import annotations

import hashlib
import sys
import types


def _code_hash(code: types.CodeType) -> str:
    h = hashlib.sha1()
    stack = [code]
    while stack:
        c = stack.pop()
        h.update(c.co_code)
        for k in c.co_consts:
            if isinstance(k, types.CodeType):
                stack.append(k)
            else:
                h.update(repr(k).encode())
    return h.hexdigest()[:10]


def describe(x, depth: int = 0) -> str:
    if x is None:
        return "None"
    resolve = getattr(x, "resolve", None)
    if callable(resolve):  # a lazy reference: describe what it names
        return describe(resolve(), depth)
    if type(x).__name__ == "Elementwise":
        return f"Elementwise({describe(x.fn, depth)})"
    if isinstance(x, types.FunctionType):
        s = f"{x.__qualname__}#{_code_hash(x.__code__)}"
        if x.__closure__ and depth < 3:
            cells = []
            for name, cell in zip(x.__code__.co_freevars, x.__closure__):
                try:
                    v = cell.cell_contents
                except ValueError:
                    v = None
                cells.append(f"{name}={describe(v, depth + 1)}")
            s += "[" + ", ".join(cells) + "]"
        if x.__defaults__ and depth < 3:
            s += "(" + ", ".join(describe(d, depth + 1) for d in x.__defaults__) + ")"
        return s
    if isinstance(x, (int, float, str, bool, tuple)):
        return repr(x)
    return type(x).__name__


def main() -> None:
    import relay_core  # noqa: F401
    import relay_core.backend.lower  # noqa: F401  (fills the loop-IR rules where they were late)
    from relay_core.ops import all_ops

    kernels = None
    try:
        from relay_core.backend.kernels import KERNELS as kernels  # before issue 13's last part
    except ImportError:
        pass
    out = sys.stdout
    for name, op in sorted(all_ops().items()):
        kern = getattr(op, "kernel", None)
        if kern is None and kernels is not None:
            kern = kernels.get(name)
        out.write(f"{name}\n")
        out.write(f"  lower      {describe(op.lower)}\n")
        out.write(f"  kernel     {describe(kern)}\n")
        out.write(f"  grad       {describe(op.grad)}\n")
        out.write(f"  decompose  {describe(op.decompose)}\n")
        out.write(f"  batch_axis0 {describe(op.batch_axis0)}\n")
        flags = [
            f
            for f in ("view", "type_identity", "data_dependent_shape", "stateful", "shape_only")
            if getattr(op, f)
        ]
        out.write(f"  flags      {' '.join(flags)} shape_inputs={op.shape_inputs}\n")
        out.write(f"  pattern    {op.pattern.name} to_static={describe(op.to_static)}\n")


if __name__ == "__main__":
    main()
