"""Golden tests for passes: Relay text in, expected Relay text out, compared structurally.

Array constants are given as numpy arrays and referenced from the text as `meta[Constant][i]`
(a `#[metadata]` section is appended), so every golden stays readable text.
"""

from __future__ import annotations

import textwrap

import numpy as np

import relay_core
from relay_core.ir.text_format import encode_metadata

HEADER = '#[version = "0.0.5"]\n'


def parse(text: str, consts=(), typecheck: bool = True):
    src = HEADER + textwrap.dedent(text).strip() + "\n"
    if consts:
        src += "\n#[metadata]\n" + encode_metadata([np.asarray(c) for c in consts])
    return relay_core.parse(src, typecheck=typecheck)


def check(p, before: str, after: str, consts=(), consts_after=None, inputs=None, ctx=None):
    """Run pass `p` on `before`; the result must equal `after` (alpha-equivalence), and when
    `inputs` are given both must compute the same values."""
    mod = parse(before, consts)
    out = p(mod, ctx) if ctx is not None else p(mod)
    want = parse(after, consts if consts_after is None else consts_after)
    assert relay_core.structural_equal(out, want), (
        f"{p!r} produced:\n{relay_core.infer_type(out).astext()}\nexpected:\n{want.astext()}"
    )
    if inputs is not None:
        relay_core.infer_type(out)
        a = relay_core.evaluate(parse(before, consts), *inputs)
        b = relay_core.evaluate(out, *inputs)
        np.testing.assert_allclose(_flat(b), _flat(a), rtol=1e-5, atol=1e-5)
    return out


def _flat(v):
    if isinstance(v, tuple):
        return np.concatenate([np.ravel(_flat(x)) for x in v]) if v else np.zeros(0)
    return np.asarray(v, dtype=np.float64).ravel()
