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


def write_outputs(path: str, names: list[str], outs: list) -> Path:
    p = Path(path)
    np.savez(p, **{n: np.asarray(v) for n, v in zip(names, outs)})
    return p
