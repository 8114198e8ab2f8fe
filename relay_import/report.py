"""VerifyReport: what `verify` found, as text and as a self-contained HTML page."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

from .compare import TensorDiff, format_stats
from .report_svg import GraphNode, Point, error_plot, graph_picture, text_bar


@dataclass
class LayerDiff:
    """One mapped point: a source node's output compared with Relay's value there."""

    index: int
    node: str
    op: str
    output: str
    diff: TensorDiff
    # (tensor name, statistics); statistics["kind"] is "input", "constant" or "" (computed)
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
    reference: str = ""  # the runtime that produced the expected values: "onnxruntime"
    reference_origin: str = ""  # "stored in ref.npz" when loaded from saved results
    # The source graph (node, op, input tensors, output tensors), for the HTML picture.
    graph: list[tuple] = field(default_factory=list)
    show_layers: bool = False  # summary() lists every layer (verify --per-layer)

    @property
    def ok(self) -> bool:
        return all(d.ok for d in self.outputs)

    def __bool__(self) -> bool:
        return self.ok

    # -- text ----------------------------------------------------------------------------------
    @property
    def ref(self) -> str:
        return self.reference or "source"

    def criterion(self) -> str:
        """The pass criterion in words, with the tolerances in force."""
        tol = f"rtol={self.rtol:g} atol={self.atol:g}"
        special = [
            f"{d.name}: rtol={d.rtol:g} atol={d.atol:g}"
            for d in self.outputs
            if (d.rtol, d.atol) != (self.rtol, self.atol) and d.name != "(output count)"
        ]
        if special:
            tol += " (" + "; ".join(special) + ")"
        return (
            f"pass: |relay - {self.ref}| <= atol + rtol * |{self.ref}| for every element "
            f"(NaN matches NaN); {tol}"
        )

    def summary(self) -> str:
        status = "PARITY" if self.ok else "MISMATCH"
        origin = f" ({self.reference_origin})" if self.reference_origin else ""
        lines = [f"verify {self.source} ({self.framework}): {status} with {self.ref}{origin}"]
        lines.append(self.criterion())
        if self.inputs:
            lines.append("inputs:")
            for k, s in self.inputs.items():
                lines.append(f"  {k}: {format_stats(s)}")
        lines.append(f"outputs (max_rel: the largest relative error where {self.ref} is not 0):")
        for d in self.outputs:
            lines.append("  " + d.line())
            if d.worst():
                lines.append("       " + d.worst(self.ref))
        if self.layers:
            bad = sum(not ld.diff.ok for ld in self.layers)
            lines.append(
                f"per-layer comparison: {len(self.layers)} layers, "
                + (f"{bad} outside tolerance" if bad else "all within tolerance")
            )
            if self.show_layers:
                lines += self._layer_table()
        if self.first_divergence is not None:
            fd = self.first_divergence
            lines.append(
                f"first divergence: node {fd.node!r} ({fd.op}), output {fd.output!r}, "
                f"layer {fd.index + 1} of {len(self.layers)}"
            )
            lines.append("  " + fd.diff.line())
            if fd.diff.worst():
                lines.append("  " + fd.diff.worst(self.ref))
            for name, s in fd.input_stats:
                lines.append(f"  {_input_label(name, s)}: {format_stats(s)}")
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

    def _layer_table(self) -> list[str]:
        w = min(40, max(len(ld.node) for ld in self.layers))
        head = f"  {'#':>4}  {'node':<{w}}  {'op':<14} {'max_abs':>9} {'max_rel':>9}  log10 error"
        rows = [head, f"  {'':>4}  {'':<{w}}  {'':<14} {'':>9} {'':>9}  -12{' ' * 19}0"]
        for ld in self.layers:
            d = ld.diff
            tol = d.atol + d.rtol * abs(d.worst_expected)
            mark = "" if d.ok else "  DIFF"
            if ld is self.first_divergence:
                mark = "  <- first divergence"
            name = ld.node if len(ld.node) <= w else "…" + ld.node[-(w - 1) :]
            rows.append(
                f"  {ld.index + 1:>4}  {name:<{w}}  {ld.op[:14]:<14} {d.max_abs:>9.3g} "
                f"{d.max_rel:>9.3g}  {text_bar(d.max_abs, tol)}{mark}"
            )
        return rows

    def __str__(self) -> str:
        return self.summary()

    # -- HTML ----------------------------------------------------------------------------------
    def write_html(self, path: str | Path) -> Path:
        """Write a self-contained HTML report (error plot and graph inline) and return its path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_html(), encoding="utf-8")
        self.html_path = str(path)
        return path

    def _points(self) -> list[Point]:
        diffs = (
            [
                (ld.node + " → " + ld.output, ld.diff, ld is self.first_divergence)
                for ld in self.layers
            ]
            if self.layers
            else [(d.name, d, False) for d in self.outputs]
        )
        return [Point(label, d.max_abs, _tolerance(d), d.ok, first) for label, d, first in diffs]

    def _graph_nodes(self) -> tuple[list[GraphNode], int | None]:
        by_output = {ld.output: ld for ld in self.layers}
        nodes, focus = [], None
        graph = self.graph or [
            ("inputs", "inputs", [], list(self.inputs) or ["input"]),
            (
                "relay module",
                "compiled module",
                list(self.inputs) or ["input"],
                [d.name for d in self.outputs],
            ),
        ]
        for k, (name, op, ins, outs) in enumerate(graph):
            lds = [by_output[o] for o in outs if o in by_output]
            status, err = "", None
            if lds:
                err = max(ld.diff.max_abs for ld in lds)
                status = "ok" if all(ld.diff.ok for ld in lds) else "bad"
                if any(ld is self.first_divergence for ld in lds):
                    status, focus = "first", k
            elif not self.graph and op == "compiled module":
                status = "ok" if self.ok else "bad"
            nodes.append(
                GraphNode(name, op, [i for i in ins if i], [o for o in outs if o], status, err)
            )
        if focus is None and self.layers:  # no divergence: centre on the largest error
            worst = max(self.layers, key=lambda ld: ld.diff.max_abs)
            focus = next((k for k, n in enumerate(nodes) if worst.output in n.outputs), None)
        return nodes, focus

    def to_html(self) -> str:
        e = html.escape
        status = "PARITY" if self.ok else "MISMATCH"
        color = "#1a7f37" if self.ok else "#cf222e"
        rows = "".join(
            f"<tr class={'ok' if d.ok else 'bad'}><td>{e(d.name)}</td><td>{e(str(d.shape))}</td>"
            f"<td>{d.max_abs:.3g}</td><td>{d.max_rel:.3g}</td><td>{d.mismatch:.2%}</td>"
            f"<td>{d.rtol:g} / {d.atol:g}</td><td>{e(d.worst(self.ref))}</td>"
            f"<td>{e(d.nan_inf or d.note)}</td></tr>"
            for d in self.outputs
        )
        parts = [
            "<!doctype html><html><head><meta charset='utf-8'>",
            f"<title>verify {e(self.source)}</title><style>{_CSS}</style></head><body>",
            f"<h1>Parity report: <span style='color:{color}'>{status}</span></h1>",
            f"<p>{e(self.source)} ({e(self.framework)}) against {e(self.ref)}"
            + (f" ({e(self.reference_origin)})" if self.reference_origin else "")
            + "</p>",
            f"<p class='note'>{e(self.criterion())}</p>",
            "<h2>Outputs</h2><table><tr><th>output</th><th>shape</th><th>max abs</th>"
            "<th>max rel</th><th>mismatch</th><th>rtol / atol</th><th>worst element</th>"
            f"<th>NaN/Inf</th></tr>{rows}</table>",
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
                f"<li>{e(_input_label(n, s))}: {e(format_stats(s))}</li>" for n, s in fd.input_stats
            )
            parts.append(
                "<h2>First diverging node</h2><div class='box'>"
                f"<p><b>{e(fd.node)}</b> ({e(fd.op)}), output <code>{e(fd.output)}</code>, "
                f"layer {fd.index + 1} of {len(self.layers)}</p><p>{e(fd.diff.line())}</p>"
                f"<p>{e(fd.diff.worst(self.ref))}</p>"
                f"<p>inputs of the node:</p><ul>{ins}</ul></div>"
            )
        title = "Error per layer" if self.layers else "Error per output"
        parts.append(f"<h2>{title}</h2>")
        parts.append(error_plot(self._points(), f"max |relay - {self.ref}| (log scale)"))
        nodes, focus = self._graph_nodes()
        svg, note = graph_picture(nodes, focus)
        parts.append(
            "<h2>Graph</h2><p class='note'>green: within tolerance, red: outside, "
            "dark red: the first divergence, grey: not compared"
            + (f"; {e(note)}" if note else "")
            + "</p>"
        )
        parts.append(f"<div class='graph'>{svg}</div>")
        if self.layers:
            lrows = "".join(
                f"<tr class={'ok' if ld.diff.ok else 'bad'}><td>{ld.index + 1}</td>"
                f"<td>{e(ld.node)}</td><td>{e(ld.op)}</td><td>{e(str(ld.diff.shape))}</td>"
                f"<td>{ld.diff.max_abs:.3g}</td><td>{ld.diff.max_rel:.3g}</td>"
                f"<td>{ld.diff.mismatch:.2%}</td></tr>"
                for ld in self.layers
            )
            parts.append(
                "<h2>Per-layer table</h2><table><tr><th>#</th><th>node</th><th>op</th>"
                "<th>shape</th><th>max abs</th><th>max rel</th><th>mismatch</th></tr>"
                f"{lrows}</table>"
            )
        for n in self.notes:
            parts.append(f"<p class='note'>{e(n)}</p>")
        parts.append("</body></html>")
        return "".join(parts)


def _tolerance(d: TensorDiff) -> float:
    """The error the worst element was allowed: atol + rtol * |expected| there."""
    return d.atol + d.rtol * abs(d.worst_expected)


def _input_label(name: str, s: dict) -> str:
    """`input onnx::Conv_93 (constant)`: an input of the node, and what it is."""
    kind = s.get("kind", "")
    return f"input {name} ({kind})" if kind else f"input {name}"


_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}
table{border-collapse:collapse;margin:1em 0;font-size:13px}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}
tr.bad td{background:#fff0f0} .box{border:1px solid #cf222e;padding:0 1em;background:#fff8f8}
.note{color:#555} div.graph{overflow:auto;max-height:900px;border:1px solid #ddd}
"""
