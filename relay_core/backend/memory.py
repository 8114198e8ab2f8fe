"""Static memory planning: one workspace, buffers reused once their last reader has run.

Greedy best-fit over a free list in program order: at each step the step's outputs are placed,
then every buffer whose last use is that step is released (a kernel's outputs never overlap its
inputs). Offsets are 64-byte aligned.
"""

from __future__ import annotations

ALIGN = 64


def _round(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def plan(sizes: dict, defs: dict, last_use: dict, nsteps: int) -> tuple[dict, int]:
    """Offsets for buffers. sizes: id -> bytes; defs: id -> step writing it; last_use: id ->
    last step reading it (defaults to its def step). Returns (id -> offset, total bytes)."""
    by_def: dict[int, list] = {}
    by_end: dict[int, list] = {}
    for b, s in defs.items():
        by_def.setdefault(s, []).append(b)
        by_end.setdefault(max(last_use.get(b, s), s), []).append(b)
    free: list[list[int]] = []  # [offset, size], sorted by offset
    top = 0
    offsets: dict = {}
    for step in range(nsteps):
        for b in by_def.get(step, ()):
            need = _round(sizes[b])
            if need == 0:
                offsets[b] = 0
                continue
            best = None
            for k, (_, sz) in enumerate(free):
                if sz >= need and (best is None or sz < free[best][1]):
                    best = k
            if best is not None:
                off, sz = free[best]
                offsets[b] = off
                if sz == need:
                    free.pop(best)
                else:
                    free[best] = [off + need, sz - need]
            elif free and free[-1][0] + free[-1][1] == top:
                off = free.pop()[0]
                offsets[b] = off
                top = off + need
            else:
                offsets[b] = top
                top += need
        for b in by_end.get(step, ()):
            need = _round(sizes[b])
            if need == 0:
                continue
            _release(free, offsets[b], need)
    return offsets, top


def _release(free: list, off: int, size: int) -> None:
    k = 0
    while k < len(free) and free[k][0] < off:
        k += 1
    free.insert(k, [off, size])
    # coalesce with neighbours
    if k + 1 < len(free) and free[k][0] + free[k][1] == free[k + 1][0]:
        free[k][1] += free[k + 1][1]
        free.pop(k + 1)
    if k > 0 and free[k - 1][0] + free[k - 1][1] == free[k][0]:
        free[k - 1][1] += free[k][1]
        free.pop(k)
