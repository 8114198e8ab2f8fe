"""Pictures for the HTML parity report, drawn as inline SVG (no plotting library needed).

`error_plot` draws the error of each compared point (layers in source order, or the outputs)
on a log scale against its tolerance; `graph_picture` draws the source graph (or a window of it
around the node that matters) with each node coloured by how its output compares.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

_OK, _BAD, _FIRST, _NONE = "#d7f0dc", "#ffd2d2", "#ff8a8a", "#eeeeee"
_FLOOR = 1e-12  # errors below this sit on the bottom axis (an exact match plots there too)


@dataclass
class Point:
    label: str  # what the tooltip names (node and output)
    error: float  # max |relay - source|
    tolerance: float  # atol + rtol * max|source| for that tensor: the error it may have
    ok: bool
    first: bool = False


def _log(v: float) -> float:
    return math.log10(max(v, _FLOOR)) if math.isfinite(v) else 0.0


def error_plot(points: Sequence[Point], title: str, width: int = 900, height: int = 260) -> str:
    """Max abs error per point (log scale) with each point's tolerance as a grey step line."""
    e = html.escape
    left, right, top, bottom = 64, 16, 28, 40
    w, h = width - left - right, height - top - bottom
    vals = [p.error for p in points] + [p.tolerance for p in points]
    finite = [v for v in vals if math.isfinite(v)]
    lo = math.floor(min([_log(v) for v in finite] + [-8]))
    hi = math.ceil(max([_log(v) for v in finite] + [-2]))
    if hi <= lo:
        hi = lo + 1
    n = max(len(points), 1)

    def x(i: float) -> float:
        return left + (i + 0.5) * w / n

    def y(v: float) -> float:
        lv = hi if not math.isfinite(v) else _log(v)
        return top + h - (lv - lo) / (hi - lo) * h

    out = [
        f"<svg class='plot' width='{width}' height='{height}' "
        "xmlns='http://www.w3.org/2000/svg' font-family='sans-serif' font-size='11'>",
        f"<text x='{left}' y='16' font-size='13'>{e(title)}</text>",
        f"<rect x='{left}' y='{top}' width='{w}' height='{h}' fill='white' stroke='#999'/>",
    ]
    for d in range(lo, hi + 1):
        yy = y(10.0**d)
        out.append(f"<line x1='{left}' x2='{left + w}' y1='{yy:.1f}' y2='{yy:.1f}' stroke='#eee'/>")
        out.append(f"<text x='{left - 6}' y='{yy + 4:.1f}' text-anchor='end'>1e{d}</text>")
    out.append(
        f"<text x='{left + w / 2}' y='{height - 6}' text-anchor='middle'>"
        f"{'layer (source order)' if len(points) > 1 else 'output'}</text>"
    )
    out.append(
        f"<text x='14' y='{top + h / 2}' transform='rotate(-90 14 {top + h / 2})' "
        "text-anchor='middle'>max |relay - source|</text>"
    )
    step = max(1, n // 12)
    for i in range(0, n, step):
        out.append(f"<text x='{x(i):.1f}' y='{top + h + 14}' text-anchor='middle'>{i + 1}</text>")
    # tolerance: a step line through every point's allowance
    tol = " ".join(
        f"{x(i - 0.5):.1f},{y(p.tolerance):.1f} {x(i + 0.5):.1f},{y(p.tolerance):.1f}"
        for i, p in enumerate(points)
    )
    if tol:
        out.append(f"<polyline points='{tol}' fill='none' stroke='#888' stroke-dasharray='4 3'/>")
    line = " ".join(f"{x(i):.1f},{y(p.error):.1f}" for i, p in enumerate(points))
    if line:
        out.append(f"<polyline points='{line}' fill='none' stroke='#4063d8' stroke-width='1.2'/>")
    for i, p in enumerate(points):
        color = "#cf222e" if not p.ok else "#4063d8"
        r = 5 if p.first else 2.5
        out.append(
            f"<circle cx='{x(i):.1f}' cy='{y(p.error):.1f}' r='{r}' fill='{color}'>"
            f"<title>{i + 1}. {e(p.label)}: max abs error {p.error:.3g}, tolerance "
            f"{p.tolerance:.3g}</title></circle>"
        )
        if p.first:
            out.append(
                f"<line x1='{x(i):.1f}' x2='{x(i):.1f}' y1='{top}' y2='{top + h}' "
                "stroke='#cf222e' stroke-dasharray='2 2'/>"
            )
    lx, ly = left + w - 230, 12  # legend on the title's line, clear of the data
    out.append(
        f"<line x1='{lx}' x2='{lx + 20}' y1='{ly}' y2='{ly}' stroke='#4063d8'/>"
        f"<text x='{lx + 24}' y='{ly + 4}'>max abs error</text>"
        f"<line x1='{lx + 120}' x2='{lx + 140}' y1='{ly}' y2='{ly}' stroke='#888' "
        f"stroke-dasharray='4 3'/><text x='{lx + 144}' y='{ly + 4}'>tolerance</text>"
    )
    out.append("</svg>")
    return "".join(out)


@dataclass
class GraphNode:
    name: str
    op: str
    inputs: list[str]  # tensor names
    outputs: list[str]
    status: str = ""  # "ok", "bad", "first", "" (not compared)
    error: float | None = None


_BOX_W, _BOX_H, _GAP_X, _GAP_Y = 150, 30, 16, 22


def graph_picture(
    nodes: Sequence[GraphNode], focus: int | None = None, limit: int = 400
) -> tuple[str, str]:
    """The graph as SVG, laid out in ranks (a node sits one rank below its deepest producer).
    More than `limit` nodes: a window of `limit` nodes around `focus` (default: the start).
    Returns (svg, note about what is shown)."""
    e = html.escape
    note = ""
    if len(nodes) > limit:
        c = focus if focus is not None else 0
        lo = max(0, min(c - limit // 2, len(nodes) - limit))
        nodes = nodes[lo : lo + limit]
        note = f"nodes {lo + 1} to {lo + len(nodes)} of the graph are shown"
    producer: dict[str, int] = {}
    rank: list[int] = []
    for k, n in enumerate(nodes):  # nodes come in topological order: one pass, no recursion
        r = 0
        for t in n.inputs:
            j = producer.get(t)
            if j is not None:
                r = max(r, rank[j] + 1)
        rank.append(r)
        for t in n.outputs:
            producer[t] = k
    columns: dict[int, int] = {}
    pos: list[tuple[float, float]] = []
    for r in rank:
        col = columns.get(r, 0)
        columns[r] = col + 1
        pos.append((12 + col * (_BOX_W + _GAP_X), 12 + r * (_BOX_H + _GAP_Y)))
    width = 24 + max(columns.values(), default=1) * (_BOX_W + _GAP_X)
    height = 24 + (max(rank, default=0) + 1) * (_BOX_H + _GAP_Y)
    out = [
        f"<svg class='graph' width='{width}' height='{height}' "
        "xmlns='http://www.w3.org/2000/svg' font-family='sans-serif'>"
    ]
    for k, n in enumerate(nodes):  # edges first, under the boxes
        x2, y2 = pos[k]
        for t in n.inputs:
            j = producer.get(t)
            if j is None or j >= k:
                continue
            x1, y1 = pos[j]
            out.append(
                f"<line x1='{x1 + _BOX_W / 2:.0f}' y1='{y1 + _BOX_H:.0f}' "
                f"x2='{x2 + _BOX_W / 2:.0f}' y2='{y2:.0f}' stroke='#999'/>"
            )
    fills = {"ok": _OK, "bad": _BAD, "first": _FIRST}
    for k, n in enumerate(nodes):
        x0, y0 = pos[k]
        fill = fills.get(n.status, _NONE)
        stroke = "#cf222e' stroke-width='2.5" if n.status == "first" else "#666"
        err = "" if n.error is None else f", max abs error {n.error:.3g}"
        out.append(
            f"<g><title>{e(n.name)} ({e(n.op)}){err}</title>"
            f"<rect x='{x0}' y='{y0}' width='{_BOX_W}' height='{_BOX_H}' rx='4' "
            f"fill='{fill}' stroke='{stroke}'/>"
            f"<text x='{x0 + _BOX_W / 2}' y='{y0 + 13}' text-anchor='middle' font-size='11'>"
            f"{e(n.op[:22])}</text><text x='{x0 + _BOX_W / 2}' y='{y0 + 25}' "
            f"text-anchor='middle' font-size='9' fill='#555'>{e(_short(n.name, 26))}</text></g>"
        )
    out.append("</svg>")
    return "".join(out), note


def _short(s: str, n: int) -> str:
    return s if len(s) <= n else "…" + s[-(n - 1) :]


def text_bar(error: float, tolerance: float, width: int = 24) -> str:
    """A log-scale bar for a terminal: `|#######     :    |` from 1e-12 to 1, `:` at the
    tolerance, for the per-layer table that `verify --per-layer` prints."""
    lo, hi = -12.0, 0.0

    def col(v: float) -> int:
        return int(round((min(max(_log(v), lo), hi) - lo) / (hi - lo) * (width - 1)))

    n = col(error) + 1 if error > 0 else 0
    cells = ["#"] * n + [" "] * (width - n)
    t = col(tolerance)
    if cells[t] == " ":
        cells[t] = ":"
    return "|" + "".join(cells) + "|"


__all__ = ["Point", "GraphNode", "error_plot", "graph_picture", "text_bar"]
