"""Stored reference results for `verify --save-results / --load-results` (polygraphy's workflow:
run the source framework once, keep its inputs and outputs, and check builds against them later,
on a machine that may not have the framework at all).

The file is an `.npz` (numpy only, no pickle): arrays `input_K`, `output_K`, `layer_K` and a JSON
header `meta` naming them and saying where they came from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from relay_core.errors import InputError

FORMAT = "relay-verify-results/1"


@dataclass
class Results:
    source: str  # the model the results came from
    framework: str  # "onnx", "pytorch", "tensorflow"
    reference: str  # the runtime that computed them: "onnxruntime", "torch", ...
    inputs: dict[str, np.ndarray]
    outputs: list[tuple[str, np.ndarray]]
    layers: dict[str, np.ndarray] = field(default_factory=dict)  # source tensor name -> value

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {}
        meta = {
            "format": FORMAT,
            "source": self.source,
            "framework": self.framework,
            "reference": self.reference,
            "inputs": list(self.inputs),
            "outputs": [n for n, _ in self.outputs],
            "layers": list(self.layers),
        }
        for k, v in enumerate(self.inputs.values()):
            arrays[f"input_{k}"] = np.asarray(v)
        for k, (_, v) in enumerate(self.outputs):
            arrays[f"output_{k}"] = np.asarray(v)
        for k, v in enumerate(self.layers.values()):
            arrays[f"layer_{k}"] = np.asarray(v)
        with open(path, "wb") as f:  # a file object: np.savez adds no .npz suffix then
            np.savez(f, meta=np.array(json.dumps(meta)), **arrays)
        return path

    @classmethod
    def load(cls, path: str | Path) -> Results:
        try:
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"]))
                if meta.get("format") != FORMAT:
                    raise ValueError(f"format {meta.get('format')!r}, expected {FORMAT!r}")
                inputs = {n: z[f"input_{k}"] for k, n in enumerate(meta["inputs"])}
                outputs = [(n, z[f"output_{k}"]) for k, n in enumerate(meta["outputs"])]
                layers = {n: z[f"layer_{k}"] for k, n in enumerate(meta.get("layers", []))}
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise InputError(
                f"{path} is not a results file written by verify --save-results ({e})"
            ) from None
        return cls(
            meta.get("source", ""),
            meta.get("framework", ""),
            meta.get("reference", ""),
            inputs,
            outputs,
            layers,
        )


__all__ = ["Results", "FORMAT"]
