"""Where a build spends its time: `relay_core.build(mod, timings=True)` and `relay compile
--timings`.

    >>> lib = relay_core.build(mod, timings=True)   # prints the table on stderr
    >>> print(lib.timings.table())

Stages are wall-clock seconds in the order they ran, and the CPU seconds this process spent in
them (plus, for the LLVM stage, the worker processes'): on a busy machine the wall time
stretches, the CPU time does not. The LLVM stage runs on several cores: its "optimise" and
"emit objects" rows are CPU seconds summed over the units. The kernels table lists the largest
units by IR size.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class BuildTimings:
    stages: list = field(default_factory=list)  # (name, seconds, detail)
    passes: list = field(default_factory=list)  # (pass name, seconds)
    units: list = field(default_factory=list)  # records from units.build_objects
    notes: dict = field(default_factory=dict)
    total: float = 0.0
    cpu: dict = field(default_factory=dict)  # stage -> CPU seconds
    _mark: float = field(default_factory=time.process_time, repr=False)

    def add(self, name: str, seconds: float, detail: str = "", extra_cpu: float = 0.0) -> None:
        """A stage that just ended; its CPU time is this process's since the last stage."""
        now = time.process_time()
        self.cpu[name] = self.cpu.get(name, 0.0) + now - self._mark + extra_cpu
        self._mark = now
        self.stages.append((name, seconds, detail))

    def seconds(self, name: str) -> float:
        return sum(s for n, s, _ in self.stages if n == name)

    def to_json(self) -> dict:
        return {
            "total": self.total,
            "stages": [[n, s, d] for n, s, d in self.stages],
            "passes": [[n, s] for n, s in self.passes],
            "units": self.units,
            "notes": self.notes,
            "cpu": self.cpu,
        }

    @classmethod
    def from_json(cls, d: dict) -> BuildTimings:
        t = cls(
            [tuple(x) for x in d.get("stages", [])],
            [tuple(x) for x in d.get("passes", [])],
            list(d.get("units", [])),
            dict(d.get("notes", {})),
        )
        t.total = d.get("total", 0.0)
        t.cpu = dict(d.get("cpu", {}))
        return t

    def table(self, top: int = 8) -> str:
        rows = [("stage", "wall s", "cpu s", "")]
        for name, s, detail in self.stages:
            c = self.cpu.get(name)
            rows.append((name, f"{s:.3f}", "" if c is None else f"{c:.3f}", detail))
            if name == "passes":
                for pn, ps in sorted(self.passes, key=lambda x: -x[1]):
                    if ps >= 0.0005:
                        rows.append((f"  {pn}", f"{ps:.3f}", "", ""))
            if name == "llvm" and self.units:
                opt = sum(u["opt_s"] for u in self.units)
                emit = sum(u["emit_s"] for u in self.units)
                rows.append(("  optimise (cpu, all units)", "", f"{opt:.3f}", ""))
                rows.append(("  emit objects (cpu, all units)", "", f"{emit:.3f}", ""))
        rows.append(("total", f"{self.total:.3f}", f"{sum(self.cpu.values()):.3f}", ""))
        w = max(len(r[0]) for r in rows)
        out = [f"{a:<{w}}  {b:>8}  {c:>8}  {d}".rstrip() for a, b, c, d in rows]
        out.insert(1, "-" * (w + 22))
        out.insert(len(out) - 1, "-" * (w + 22))
        if self.units:
            out += ["", self.kernel_table(top)]
        return "\n".join(out)

    def kernel_table(self, top: int = 8) -> str:
        # the model's kernels (units with ops); the shared helpers (GEMM microkernels, packers:
        # no ops of their own) are summed in the header, else they crowd the kernels out
        us = sorted((u for u in self.units if u.get("ops")), key=lambda u: -u["bytes"])
        helpers = [u for u in self.units if not u.get("ops")]
        n_cached = sum(u["where"] == "cache" for u in self.units)
        head = (
            f"{len(self.units)} units ({n_cached} from the kernel cache; {len(helpers)} shared "
            f"helpers, {sum(u['bytes'] for u in helpers) / 1024:.0f} KB of IR); "
            f"the {min(top, len(us))} largest kernels by IR size:"
        )
        rows = [("unit", "IR KB", "level", "opt s", "emit s", "from", "ops")]
        for u in us[:top]:
            ops = u.get("ops") or ""
            rows.append(
                (
                    u["name"][:24],
                    f"{u['bytes'] / 1024:.1f}",
                    f"O{u['level']}",
                    f"{u['opt_s']:.3f}",
                    f"{u['emit_s']:.3f}",
                    u["where"],
                    ops[:60],
                )
            )
        ws = [max(len(r[i]) for r in rows) for i in range(6)]
        lines = [head]
        for r in rows:
            lines.append(
                "  ".join(f"{r[i]:<{ws[i]}}" if i == 0 else f"{r[i]:>{ws[i]}}" for i in range(6))
                + ("  " + r[6] if r[6] else "")
            )
        return "\n".join(lines)
