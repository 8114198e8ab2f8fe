"""`relay demo`: the main job end to end on a bundled example."""

from __future__ import annotations

from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_demo(quiet: bool = False) -> int:
    import relay_core

    say = (lambda *a: None) if quiet else print
    path = EXAMPLES / "mlp_loop.relay"
    mod = relay_core.parse(path.read_text(), source_name=str(path))
    say(f"== parsed and typechecked {path.name}:\n")
    say(mod)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 4)).astype("float32")
    w1 = rng.standard_normal((8, 4)).astype("float32")
    w2 = rng.standard_normal((4, 8)).astype("float32")
    y, steps = relay_core.evaluate(mod, x, w1, w2)
    expect = x
    for _ in range(int(steps)):
        expect = np.tanh(np.maximum(expect @ w1.T, 0) @ w2.T)
    say(f"== evaluated: {int(steps)} loop steps, output {np.array2string(y, precision=4)}")
    ok = np.allclose(y, expect, rtol=1e-5, atol=1e-6)
    say(f"== matches numpy: {ok}")
    return 0 if ok else 1
