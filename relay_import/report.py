"""VerifyReport: what `verify` found, as text and as a self-contained HTML page."""

from __future__ import annotations

import base64
import html
import io
from dataclasses import dataclass, field
from pathlib import Path

from .compare import TensorDiff, format_stats


@dataclass
class LayerDiff:
    """One mapped point: a source node's output compared with Relay's value there."""

    index: int
    node: str
    op: str
    output: str
    diff: TensorDiff
    input_stats: list[tuple[str, dict]] = field(default_factory=list)


@dataclass
class VerifyReport:
    """The result of `relay_import.verify`. Truthy when every output matches."""

    source: str
    framework: str
    rtol: float
    atol: float
    outputs: list[TensorDiff]
    inputs: dict[str, dict] = field(default_factory=dict)
    layers: list[LayerDiff] = field(default_factory=list)
    first_divergence: LayerDiff | None = None
    # Source nodes feeding / fed by the diverging node: (name, op) pairs.
    neighbours: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    html_path: str | None = None

    @property
    def ok(self) -> bool:
        return all(d.ok for d in self.outputs)

    def __bool__(self) -> bool:
        return self.ok

    # -- text ----------------------------------------------------------------------------------
    def summary(self) -> str:
        lines = [
            f"verify {self.source} ({self.framework}) at rtol={self.rtol:g} atol={self.atol:g}: "
            + ("PARITY" if self.ok else "MISMATCH"),
        ]
        if self.inputs:
            lines.append("inputs:")
            for k, s in self.inputs.items():
                lines.append(f"  {k}: {format_stats(s)}")
        lines.append("outputs:")
        lines += ["  " + d.line() for d in self.outputs]
        if self.first_divergence is not None:
            fd = self.first_divergence
            lines.append(
                f"first divergence: node {fd.node!r} ({fd.op}), output {fd.output!r}, "
                f"layer {fd.index + 1} of {len(self.layers)}"
            )
            lines.append("  " + fd.diff.line())
            for name, s in fd.input_stats:
                lines.append(f"  input {name}: {format_stats(s)}")
            for k in ("inputs", "outputs"):
                if self.neighbours.get(k):
                    lst = ", ".join(f"{n} ({o})" for n, o in self.neighbours[k])
                    lines.append(f"  {'fed by' if k == 'inputs' else 'feeds'}: {lst}")
        elif not self.ok and self.layers:
            lines.append("no intermediate value diverged: the difference appears at the outputs")
        for n in self.notes:
            lines.append(f"note: {n}")
        if self.timings:
            t = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in self.timings.items())
            lines.append(f"timings: {t}")
        if self.html_path:
            lines.append(f"HTML report: {self.html_path}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    # -- HTML ----------------------------------------------------------------------------------
    def write_html(self, path: str | Path) -> Path:
        """Write a self-contained HTML report (per-layer error plot inline) and return its path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_html(), encoding="utf-8")
        self.html_path = str(path)
        return path

    def to_html(self) -> str:
        e = html.escape
        status = "PARITY" if self.ok else "MISMATCH"
        color = "#1a7f37" if self.ok else "#cf222e"
        rows = "".join(
            f"<tr class={'ok' if d.ok else 'bad'}><td>{e(d.name)}</td><td>{e(str(d.shape))}</td>"
            f"<td>{d.max_abs:.3g}</td><td>{d.max_rel:.3g}</td><td>{d.mismatch:.2%}</td>"
            f"<td>{e(d.nan_inf or d.note)}</td></tr>"
            for d in self.outputs
        )
        parts = [
            "<!doctype html><html><head><meta charset='utf-8'>",
            f"<title>verify {e(self.source)}</title><style>{_CSS}</style></head><body>",
            f"<h1>Parity report: <span style='color:{color}'>{status}</span></h1>",
            f"<p>{e(self.source)} ({e(self.framework)}), "
            f"rtol={self.rtol:g}, atol={self.atol:g}</p>",
            "<h2>Outputs</h2><table><tr><th>output</th><th>shape</th><th>max abs</th>"
            f"<th>max rel</th><th>mismatch</th><th>NaN/Inf</th></tr>{rows}</table>",
        ]
        if self.inputs:
            items = "".join(
                f"<li><code>{e(k)}</code>: {e(format_stats(s))}</li>"
                for k, s in self.inputs.items()
            )
            parts.append(f"<h2>Inputs</h2><ul>{items}</ul>")
        fd = self.first_divergence
        if fd is not None:
            ins = "".join(
                f"<li><code>{e(n)}</code>: {e(format_stats(s))}</li>" for n, s in fd.input_stats
            )
            parts.append(
                "<h2>First diverging node</h2><div class='box'>"
                f"<p><b>{e(fd.node)}</b> ({e(fd.op)}), output <code>{e(fd.output)}</code>, "
                f"layer {fd.index + 1} of {len(self.layers)}</p><p>{e(fd.diff.line())}</p>"
                f"<p>inputs of the node:</p><ul>{ins}</ul></div>"
                f"<h3>Graph around it</h3>{self._graph_svg()}"
            )
        if self.layers:
            parts.append("<h2>Per-layer error</h2>")
            img = self._plot_png()
            if img:
                parts.append(f"<img alt='per-layer error' src='data:image/png;base64,{img}'>")
            lrows = "".join(
                f"<tr class={'ok' if ld.diff.ok else 'bad'}><td>{ld.index + 1}</td>"
                f"<td>{e(ld.node)}</td><td>{e(ld.op)}</td><td>{e(str(ld.diff.shape))}</td>"
                f"<td>{ld.diff.max_abs:.3g}</td><td>{ld.diff.max_rel:.3g}</td>"
                f"<td>{ld.diff.mismatch:.2%}</td></tr>"
                for ld in self.layers
            )
            parts.append(
                "<table><tr><th>#</th><th>node</th><th>op</th><th>shape</th><th>max abs</th>"
                f"<th>max rel</th><th>mismatch</th></tr>{lrows}</table>"
            )
        for n in self.notes:
            parts.append(f"<p class='note'>{e(n)}</p>")
        parts.append("</body></html>")
        return "".join(parts)

    def _plot_png(self) -> str:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:  # matplotlib is in the `all` extra; the table still tells
            return ""
        xs = [ld.index + 1 for ld in self.layers]
        ys = [max(ld.diff.max_abs, 1e-12) for ld in self.layers]
        fig, ax = plt.subplots(figsize=(9, 3.2), dpi=100)
        ax.semilogy(xs, ys, marker=".", lw=1, label="max abs error")
        ax.axhline(self.atol if self.atol > 0 else 1e-12, color="gray", ls="--", label="atol")
        if self.first_divergence is not None:
            fd = self.first_divergence
            ax.axvline(fd.index + 1, color="#cf222e", ls=":", label=f"first divergence: {fd.node}")
        ax.set_xlabel("layer (source order)")
        ax.set_ylabel("max |relay - source|")
        ax.legend(loc="best", fontsize=8)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        plt.close(fig)
        return base64.b64encode(buf.getvalue()).decode()

    def _graph_svg(self) -> str:
        fd = self.first_divergence
        if fd is None:
            return ""
        ins = self.neighbours.get("inputs", [])[:6]
        outs = self.neighbours.get("outputs", [])[:6]
        rows = max(len(ins), len(outs), 1)
        h = 40 + rows * 44
        w = 760
        e = html.escape
        items = []

        def box(x, y, label, sub, fill):
            items.append(
                f"<rect x='{x}' y='{y}' width='200' height='34' rx='5' fill='{fill}' "
                f"stroke='#555'/><text x='{x + 100}' y='{y + 15}' text-anchor='middle' "
                f"font-size='12'>{e(label[:28])}</text><text x='{x + 100}' y='{y + 29}' "
                f"text-anchor='middle' font-size='10' fill='#555'>{e(sub[:30])}</text>"
            )

        cy = h / 2 - 17
        box(280, cy, fd.node, fd.op, "#ffd8d8")
        for i, (n, o) in enumerate(ins):
            y = 20 + i * 44
            box(20, y, n, o, "#eef")
            items.append(f"<line x1='220' y1='{y + 17}' x2='280' y2='{cy + 17}' stroke='#777'/>")
        for i, (n, o) in enumerate(outs):
            y = 20 + i * 44
            box(540, y, n, o, "#eef")
            items.append(f"<line x1='480' y1='{cy + 17}' x2='540' y2='{y + 17}' stroke='#777'/>")
        return f"<svg width='{w}' height='{h}' xmlns='http://www.w3.org/2000/svg'>{''.join(items)}</svg>"


_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}
table{border-collapse:collapse;margin:1em 0;font-size:13px}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}
tr.bad td{background:#fff0f0} .box{border:1px solid #cf222e;padding:0 1em;background:#fff8f8}
.note{color:#555}
"""
