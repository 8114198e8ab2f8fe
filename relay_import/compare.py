"""Comparing two arrays the way a parity check needs: errors, mismatches, NaN/Inf."""

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

    def line(self) -> str:
        status = "ok  " if self.ok else "DIFF"
        extra = f"  {self.nan_inf}" if self.nan_inf else ""
        extra += f"  {self.note}" if self.note else ""
        return (
            f"{status} {self.name:<32} {str(self.shape):<18} max_abs={self.max_abs:.3g} "
            f"max_rel={self.max_rel:.3g} mismatch={self.mismatch:.2%}{extra}"
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
        return TensorDiff(name, e.shape, str(a.dtype), 0.0, 0.0, 0.0, "", True)
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
        rel = np.where(finite, diff / np.maximum(np.abs(ef), np.finfo(np.float64).tiny), 0.0)
    bad = (diff > atol + rtol * np.abs(np.where(finite, ef, 0.0))) | (e_nan != a_nan) | inf_mismatch
    max_abs = float(diff.max()) if diff.size else 0.0
    max_rel = float(rel[diff > atol].max()) if (diff > atol).any() else 0.0
    mismatch = float(bad.mean())
    return TensorDiff(
        name,
        tuple(e.shape),
        str(a.dtype),
        max_abs,
        max_rel,
        mismatch,
        "; ".join(problems),
        not bad.any(),
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
