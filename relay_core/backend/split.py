"""Split one generated LLVM module into independent compilation units.

Code generation fills one llvmlite module: the entry function (or the VM's functions), the
fused kernels, their outlined parallel bodies, the kernels' drivers, and the shared helpers they
call (the GEMM microkernels, packing, im2col: emitted once per module under a fixed name).
`split_module` cuts it into

- one unit per kernel: the kernel and what belongs to it (the functions named after it:
  outlined loop bodies, drivers) and the constant tables it reads;
- one unit per shared helper: a function of at least HELPER_MIN characters of IR that is not
  named after the unit that calls it. It is optimised once and called across units, as it was
  called across kernels before (the inliner left these alone: they are far over its threshold);
  smaller functions are copied into each unit that calls them;
- the main unit: every other non-internal definition (the entry function) and what it reaches.

Units call each other through `hidden` symbols (visible inside the library, not exported). Each
unit's symbol is a hash of its own text, in which internal names are renumbered in order of use and
the units it calls appear under their own hashed symbols: the same kernel lowered in two models
has the same text, symbol and cache entry (kernel_cache.py), and identical units of one model
become one.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from llvmlite import ir

# `@"name"` (llvmlite quotes every global name), any other quoted string (c"..." constants,
# %"local" names: an `@` inside them is no reference), or an unquoted global name.
_TOKEN = re.compile(r'@"([^"]*)"|"[^"]*"|@([-\w$.]+)')
_MD = re.compile(r'"[^"]*"|!(\d+)\b')  # numbered metadata (branch weights), not in strings
PLACEHOLDER = "relay.unit"
HELPER_MIN = 1500


@dataclass
class Unit:
    """One compilation unit: `text` is complete LLVM IR (without target lines)."""

    name: str  # its symbol ("" for the main unit)
    text: str
    kind: str  # "kernel", "helper" or "main"
    kernels: list = field(default_factory=list)  # the kernels of the original module it holds


def _unquote(m) -> str | None:
    name = m.group(1) if m.group(1) is not None else m.group(2)
    return None if name is None else name.replace("\\22", '"').replace("\\5c", "\\")


def _refs(text: str) -> list[str]:
    return [n for n in map(_unquote, _TOKEN.finditer(text)) if n is not None]


def _rename(text: str, mapping: dict) -> str:
    def sub(m):
        name = _unquote(m)
        new = None if name is None else mapping.get(name)
        return m.group(0) if new is None else f'@"{new}"'

    return _TOKEN.sub(sub, text)


def _metadata(llmod: ir.Module) -> dict:
    """Numbered metadata: number -> its definition's right-hand side."""
    if llmod.namedmetadata:
        raise ValueError("named metadata cannot be split yet")
    out = {}
    for md in llmod.metadata:
        ref, _, rhs = str(md).partition(" = ")
        out[int(ref[1:])] = rhs
    return out


def _with_metadata(text: str, md: dict) -> str:
    """`text` with the metadata it uses appended, renumbered in order of use."""
    found = [int(m.group(1)) for m in _MD.finditer(text) if m.group(1)]
    if not found:
        return text
    num: dict = {}
    queue = list(found)
    while queue:
        i = queue.pop(0)
        if i in num:
            continue
        num[i] = len(num)
        queue += [int(m.group(1)) for m in _MD.finditer(md[i]) if m.group(1)]

    def sub(m):
        return m.group(0) if m.group(1) is None else f"!{num[int(m.group(1))]}"

    lines = [_MD.sub(sub, text)]
    lines += [f"!{num[i]} = {_MD.sub(sub, md[i])}" for i in sorted(num, key=num.__getitem__)]
    return "\n".join(lines) + "\n"


def _is_def(g) -> bool:
    if isinstance(g, ir.Function):
        return not g.is_declaration
    return isinstance(g, ir.GlobalVariable) and g.initializer is not None


def _hidden(text: str, g) -> str:
    """`g`'s definition with hidden visibility (and external linkage)."""
    if isinstance(g, ir.Function) and text.startswith("define "):
        rest = text[len("define ") :]
        if g.linkage == "internal":
            rest = rest[len("internal ") :]
        elif g.linkage:
            raise ValueError(f"cannot split {g.name} (linkage {g.linkage!r})")
        return "define hidden " + rest
    if isinstance(g, ir.GlobalVariable) and g.global_constant and not g.linkage:
        head, _, rest = text.partition(" = ")
        return f"{head} = hidden {rest}"
    raise ValueError(f"cannot split {g.name} (linkage {g.linkage!r})")


def _decl_text(g, name: str) -> str:
    ft = g.function_type
    args = ", ".join(str(a) for a in ft.args)
    return f'declare hidden {ft.return_type} @"{name}"({args})'


def split_module(llmod: ir.Module, kernels: list[str]) -> tuple[Unit, list[Unit]]:
    """(main unit, kernel and helper units): see the module docstring. `kernels` names the
    functions that become units of their own."""
    globs = dict(llmod.globals)
    texts = {n: str(g) for n, g in globs.items()}
    refs = {
        n: [r for r in dict.fromkeys(_refs(t)) if r != n and r in globs] for n, t in texts.items()
    }
    order = {n: i for i, n in enumerate(globs)}
    kset = set(kernels)
    md = _metadata(llmod)
    for n, g in globs.items():
        if isinstance(g, ir.GlobalVariable) and g.linkage == "internal" and not g.global_constant:
            raise ValueError(f"mutable internal global {n} cannot be copied into units")

    def own(n: str, root: str) -> bool:
        """Whether `root`'s unit holds a copy of `n` (else `n` is a unit of its own)."""
        g = globs[n]
        if n in kset or not isinstance(g, ir.Function):
            return n not in kset
        if not root:  # the main unit calls the helpers the kernels made units, copies the rest
            return n not in symbol
        return n.startswith((root + ".", root + "_")) or len(texts[n]) < HELPER_MIN

    units: dict[str, Unit] = {}
    symbol: dict[str, str] = {}  # original name -> unit symbol
    busy: set = set()

    def closure(roots: list[str], anchor: str):
        owned, decls, others = [], [], []
        seen = set(roots)
        stack = list(reversed(roots))
        while stack:
            n = stack.pop()
            owned.append(n)
            for r in refs[n]:
                if r in seen:
                    continue
                seen.add(r)
                if not _is_def(globs[r]):
                    decls.append(r)
                elif own(r, anchor):
                    stack.append(r)
                else:
                    others.append(r)
        return sorted(owned, key=order.__getitem__), sorted(decls, key=order.__getitem__), others

    def make(root: str, kind: str) -> str:
        if root in symbol:
            return symbol[root]
        if root in busy:
            raise ValueError(f"units calling each other in a cycle through {root}")
        busy.add(root)
        owned, decls, others = closure([root], root)
        for r in others:
            if r in kset:
                raise ValueError(f"{root} calls kernel {r}")
            make(r, "helper")
        body = [texts[n] for n in decls]
        body += list(dict.fromkeys(_decl_text(globs[r], symbol[r]) for r in others))
        public = []
        for n in owned:
            t = texts[n]
            if n == root:
                t = _hidden(t, globs[n])
            elif getattr(globs[n], "linkage", "") != "internal":
                # a kernel's driver: kept external, as it was, so the inliner sees it as before
                t = _hidden(t, globs[n])
                public.append(n)
            body.append(t)
        text = _with_metadata("\n\n".join(body) + "\n", md)
        mapping = {root: PLACEHOLDER, **{r: symbol[r] for r in others}}
        for n in _refs(text):
            if n not in mapping and n in owned:
                mapping[n] = f".u{len(mapping)}"
        canon = _rename(text, mapping)
        key = hashlib.blake2b(canon.encode(), digest_size=12).hexdigest()
        sym = ("relay_k_" if kind == "kernel" else "relay_h_") + key
        if sym not in units:
            names = {PLACEHOLDER: sym, **{mapping[n]: sym + mapping[n] for n in public}}
            units[sym] = Unit(sym, _rename(canon, names), kind)
        if kind == "kernel":
            units[sym].kernels.append(root)
        symbol[root] = sym
        busy.discard(root)
        return sym

    for k in kernels:
        make(k, "kernel")
    roots = [
        n
        for n, g in globs.items()
        if _is_def(g) and getattr(g, "linkage", "") != "internal" and n not in kset
    ]
    # drivers of kernels are external too, but belong to their kernel's unit
    roots = [n for n in roots if not any(n.startswith((k + ".", k + "_")) for k in kset)]
    owned, decls, others = closure(roots, "")
    for r in others:
        make(r, "kernel" if r in kset else "helper")
    body = [texts[n] for n in decls]
    body += list(dict.fromkeys(_decl_text(globs[r], symbol[r]) for r in others))
    body += [texts[n] for n in owned]
    main_text = _with_metadata("\n\n".join(body) + "\n", md)
    main_text = _rename(main_text, {r: symbol[r] for r in others})
    return Unit("", main_text, "main"), list(units.values())
