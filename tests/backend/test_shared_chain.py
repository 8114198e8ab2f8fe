"""Values used twice inside a fused group: TVM's fusion test shape, a chain where each link
reads the previous two (`%i = op(%i-1, %i-2)`). Inlining each read used to copy the producer's
body into both readers, so code grew like the Fibonacci numbers (8 s at 20 links, minutes at
30). It must compile in time linear in its length and agree with the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import relay_core

V = '#[version = "0.0.5"]\n'


def chain(n: int, op: str = "subtract") -> str:
    lines = [
        "def @main(%a: Tensor[(5), float32], %b: Tensor[(5), float32]) {",
        f"  %0 = {op}(%a, %b);",
        f"  %1 = {op}(%0, %a);",
    ]
    lines += [f"  %{i} = {op}(%{i - 1}, %{i - 2});" for i in range(2, n)]
    lines += [f"  %{n - 1}", "}"]
    return V + "\n".join(lines)


def run_both(src: str):
    mod = relay_core.parse(src)
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(5).astype(np.float32) for _ in range(2))
    want = np.asarray(relay_core.evaluate(mod, a, b))
    got = relay_core.build(mod)(a, b)
    got = got[0] if isinstance(got, (list, tuple)) else got
    return want, np.asarray(got)


@pytest.mark.parametrize("n", [40, 2000])
def test_chain_of_shared_links_compiles_and_matches(n):
    # x[i] = x[i-1] - x[i-2] has period 6, so the values stay exact at any length
    want, got = run_both(chain(n))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_long_chain_materializes_shared_values(monkeypatch):
    """The bound is what keeps it linear: shared links whose inlined bodies grow past it are
    computed once into a buffer (here several, in a 26-link chain fused into one group)."""
    from relay_core.backend import schedule

    sizes = []
    cls = next(
        c
        for c in vars(schedule).values()
        if isinstance(c, type) and "_bound_duplication" in vars(c)
    )
    orig = cls._bound_duplication

    def spy(self):
        orig(self)
        sizes.append(len(self.materialized - {t.id for t in self.outputs}))

    monkeypatch.setattr(cls, "_bound_duplication", spy)
    want, got = run_both(chain(26, "add"))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    # Fibonacci growth passes the bound every few links
    assert max(sizes) >= 3, sizes
