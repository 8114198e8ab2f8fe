"""`inspect`: what a model takes and gives, which ops it uses, which are unsupported."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from relay_core.errors import UnsupportedOpsError


@dataclass
class InspectReport:
    source: str
    framework: str
    inputs: list[tuple[str, str]] = field(default_factory=list)  # (name, type text)
    outputs: list[tuple[str, str]] = field(default_factory=list)
    source_ops: Counter = field(default_factory=Counter)
    relay_ops: Counter = field(default_factory=Counter)
    unsupported: list[tuple] = field(default_factory=list)
    functions: int = 0
    module: object = field(default=None, repr=False)  # the converted IRModule (None if not)

    @property
    def ok(self) -> bool:
        return not self.unsupported

    def summary(self) -> str:
        lines = [f"{self.source} ({self.framework})"]
        lines.append("inputs:")
        lines += [f"  {n}: {t}" for n, t in self.inputs]
        lines.append("outputs:")
        lines += [f"  {n}: {t}" for n, t in self.outputs]
        if self.source_ops:
            lines.append(f"{self.framework} ops ({sum(self.source_ops.values())} nodes):")
            lines += [f"  {op:<28} {n}" for op, n in self.source_ops.most_common()]
        if self.relay_ops:
            lines.append(
                f"relay ops ({sum(self.relay_ops.values())} calls, {self.functions} functions):"
            )
            lines += [f"  {op:<28} {n}" for op, n in self.relay_ops.most_common()]
        if self.unsupported:
            lines.append(f"unsupported ops ({len(self.unsupported)}):")
            lines += [
                "  " + " ".join(str(x) for x in e if x not in (None, "")) for e in self.unsupported
            ]
        return "\n".join(lines)


def inspect_model(source, **convert_kw) -> InspectReport:
    from relay_core.ir import Call, Op, TupleType
    from relay_core.ir.visitor import post_order

    from .api import detect_framework, load

    fw = detect_framework(source)
    rep = InspectReport(str(source), fw)
    try:
        mod = load(source, **convert_kw)
    except UnsupportedOpsError as e:
        rep.unsupported = e.ops
        return rep
    rep.module = mod
    main = mod["main"]
    given = list(main.attr("input_names") or [])
    for k, p in enumerate(main.params):
        rep.inputs.append((given[k] if k < len(given) else p.name_hint, str(p.checked_type)))
    ret = main.body.checked_type
    names = list(main.attr("output_names") or mod.attrs.get("output_names") or [])
    outs = ret.fields if isinstance(ret, TupleType) else (ret,)
    for i, t in enumerate(outs):
        rep.outputs.append((names[i] if i < len(names) else f"output{i}", str(t)))
    for _, op, _, _ in mod.attrs.get("source_nodes", []):
        rep.source_ops[op] += 1
    for _, f in mod.functions.items():
        rep.functions += 1
        for node in post_order(f):
            if type(node) is Call and type(node.op) is Op:
                rep.relay_ops[node.op.name] += 1
    return rep
