"""Comparing two arrays the way a parity check needs: errors, mismatches, NaN/Inf.

The pass criterion is numpy.isclose's: every element has |actual - expected| <= atol + rtol *
|expected|, NaN matches NaN and an infinity matches the same infinity. `max_rel` is the largest
|actual - expected| / |expected| over all finite elements where expected is not zero (where it is
zero, only `max_abs` measures the error)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class TensorDiff:
    """How `actual` differs from `expected`."""

    name: str
    shape: tuple
    dtype: str
    max_abs: float
    max_rel: float
    mismatch: float  # fraction of elements outside tolerance
    nan_inf: str  # "" when both agree on NaN / Inf positions, else what differs
    ok: bool
    note: str = ""
    rtol: float = 0.0  # the tolerances this tensor was judged by
    atol: float = 0.0
    # The element with the largest excess over the tolerance (the worst one), if any.
    worst_index: tuple | None = None
    worst_expected: float = 0.0
    worst_actual: float = 0.0
    tolerance_used: float = 0.0  # the worst element's |error| / (atol + rtol * |expected|)

    def line(self) -> str:
        status = "ok  " if self.ok else "DIFF"
        extra = f"  {self.nan_inf}" if self.nan_inf else ""
        extra += f"  {self.note}" if self.note else ""
        return (
            f"{status} {self.name:<32} {str(self.shape):<18} max_abs={self.max_abs:.3g} "
            f"max_rel={self.max_rel:.3g} mismatch={self.mismatch:.2%}{extra}"
        )

    def worst(self, source: str = "source") -> str:
        """`worst element [0, 3]: source 0.1234, relay 0.1236`, or ''."""
        if self.worst_index is None:
            return ""
        idx = ", ".join(str(i) for i in self.worst_index)
        u = self.tolerance_used
        if u == float("inf"):
            used = "its tolerance is 0" if not self.nan_inf else "NaN / Inf differ"
        elif u >= 1:
            used = f"{u:.2g}x its tolerance"
        else:
            used = f"{u * 100:.2g}% of its tolerance"
        return (
            f"worst element [{idx}]: {source} {self.worst_expected:.9g}, "
            f"relay {self.worst_actual:.9g} ({used})"
        )


def _as_float(a: np.ndarray) -> np.ndarray:
    if a.dtype == bool:
        return a.astype(np.float64)
    if a.dtype.kind in "iuf":
        return a.astype(np.float64)
    try:
        return a.astype(np.float64)  # ml_dtypes floats
    except (TypeError, ValueError):
        return a


def compare(name: str, expected, actual, rtol: float, atol: float) -> TensorDiff:
    """Elementwise |actual - expected| <= atol + rtol * |expected|, with NaN == NaN."""
    e = np.asarray(expected)
    a = np.asarray(actual)
    if e.shape != a.shape:
        return TensorDiff(
            name,
            tuple(a.shape),
            str(a.dtype),
            np.inf,
            np.inf,
            1.0,
            "",
            False,
            note=f"shape {a.shape} but expected {e.shape}",
        )
    if e.dtype.kind in "OUS" or a.dtype.kind in "OUS":
        same = e.astype(str) == a.astype(str)
        frac = float(1 - same.mean()) if same.size else 0.0
        return TensorDiff(name, e.shape, str(a.dtype), 0.0, 0.0, frac, "", frac == 0.0)
    ef, af = _as_float(e), _as_float(a)
    if ef.size == 0:
        return TensorDiff(name, e.shape, str(a.dtype), 0.0, 0.0, 0.0, "", True, "", rtol, atol)
    e_nan, a_nan = np.isnan(ef), np.isnan(af)
    e_inf, a_inf = np.isinf(ef), np.isinf(af)
    problems = []
    if (e_nan != a_nan).any():
        problems.append(f"NaN at {int((e_nan != a_nan).sum())} positions differ")
    inf_mismatch = (e_inf | a_inf) & ~((e_inf & a_inf) & (np.sign(ef) == np.sign(af)))
    if inf_mismatch.any():
        problems.append(f"Inf at {int(inf_mismatch.sum())} positions differ")
    finite = np.isfinite(ef) & np.isfinite(af)
    with np.errstate(all="ignore"):
        diff = np.where(finite, np.abs(af - ef), 0.0)
        mag = np.abs(np.where(finite, ef, 0.0))
        measured = finite & (mag > 0)
        rel = np.where(measured, diff / np.where(measured, mag, 1.0), 0.0)
        tol = atol + rtol * mag
        # share of its tolerance each element uses (> 1: outside it)
        used = np.where(tol > 0, diff / np.where(tol > 0, tol, 1.0), np.where(diff > 0, np.inf, 0))
    bad = (diff > tol) | (e_nan != a_nan) | inf_mismatch
    max_abs = float(diff.max()) if diff.size else 0.0
    max_rel = float(rel.max()) if rel.size else 0.0
    mismatch = float(bad.mean())
    # worst element: a NaN / Inf disagreement first, else the one using most of its tolerance
    flat = int(np.argmax(np.where((e_nan != a_nan) | inf_mismatch, np.inf, used)))
    widx = tuple(int(i) for i in np.unravel_index(flat, ef.shape)) if ef.ndim else ()
    return TensorDiff(
        name,
        tuple(e.shape),
        str(a.dtype),
        max_abs,
        max_rel,
        mismatch,
        "; ".join(problems),
        not bad.any(),
        "",
        rtol,
        atol,
        widx,
        float(ef.reshape(-1)[flat]),
        float(af.reshape(-1)[flat]),
        float(used.reshape(-1)[flat]),
    )


def stats(a) -> dict:
    """Summary statistics of a tensor, for reports."""
    x = np.asarray(a)
    if x.size == 0 or x.dtype.kind not in "biuf":
        return {"shape": tuple(x.shape), "dtype": str(x.dtype)}
    xf = x.astype(np.float64)
    fin = xf[np.isfinite(xf)]
    return {
        "shape": tuple(x.shape),
        "dtype": str(x.dtype),
        "min": float(fin.min()) if fin.size else float("nan"),
        "max": float(fin.max()) if fin.size else float("nan"),
        "mean": float(fin.mean()) if fin.size else float("nan"),
        "std": float(fin.std()) if fin.size else float("nan"),
        "nan": int(np.isnan(xf).sum()),
        "inf": int(np.isinf(xf).sum()),
    }


def format_stats(s: dict) -> str:
    if "min" not in s:
        return f"{s['dtype']}{list(s['shape'])}"
    extra = ""
    if s["nan"] or s["inf"]:
        extra = f" nan={s['nan']} inf={s['inf']}"
    return (
        f"{s['dtype']}{list(s['shape'])} min={s['min']:.4g} max={s['max']:.4g} "
        f"mean={s['mean']:.4g} std={s['std']:.4g}{extra}"
    )
