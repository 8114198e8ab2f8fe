"""Reading inputs from .npy / .npz files and writing outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from relay_core.errors import InputError


def read_inputs(pairs: list[str] | None, npz: str | None, names: list[str] | None) -> dict:
    """Inputs from `name=file.npy` pairs and / or an .npz of arrays by name."""
    feed: dict[str, np.ndarray] = {}
    if npz:
        try:
            with np.load(npz, allow_pickle=False) as z:
                feed.update({k: z[k] for k in z.files})
        except (OSError, ValueError) as e:
            raise InputError(f"cannot read inputs from {npz}: {e}") from None
    for p in pairs or []:
        name, sep, path = p.partition("=")
        if not sep:
            if names and len(names) == 1:
                name, path = names[0], p
            else:
                raise InputError(f"--input wants NAME=FILE.npy, got {p!r}")
        try:
            feed[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise InputError(f"cannot read input {name} from {path}: {e}") from None
    if names is not None:
        unknown = [k for k in feed if k not in names]
        if unknown:
            raise InputError(f"unknown input(s) {unknown}; the model's inputs are {names}")
    return feed


def _storable(v) -> np.ndarray:
    """An array np.load reads back without pickle: string tensors become unicode arrays."""
    v = np.asarray(v)
    if v.dtype == object:
        return np.array(v.tolist(), dtype=str).reshape(v.shape)
    return v


def write_outputs(path: str, names: list[str], outs: list) -> Path:
    p = Path(path)
    np.savez(p, **{n: _storable(v) for n, v in zip(names, outs)})
    return p


def fill_inputs(lib, feed: dict, mode: str, seed: int = 0) -> dict[str, tuple]:
    """Add the inputs `feed` lacks, made of zeros, ones or random values (tvmc's fill modes);
    dims unknown until run time are 1. Returns {name: shape} of what was filled."""
    from relay_core.ir import dtype as dt

    rng = np.random.default_rng(seed)
    filled = {}
    for a in lib.get_inputs():
        if a.name in feed:
            continue
        if not a.dtype:
            raise InputError(f"input {a.name!r} is a {a.type}: give it with --input / --inputs")
        shape = tuple(d if isinstance(d, int) else 1 for d in a.shape)
        npd = dt.to_numpy(a.dtype)
        if mode == "zeros":
            v = np.zeros(shape, npd)
        elif mode == "ones":
            v = np.ones(shape, npd)
        elif a.dtype == "bool":
            v = rng.random(shape) < 0.5
        elif dt.is_int(a.dtype):
            v = rng.integers(0, 10, size=shape).astype(npd)
        else:
            v = rng.standard_normal(shape).astype(npd)
        feed[a.name] = v
        filled[a.name] = shape
    return filled
