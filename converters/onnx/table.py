"""The ONNX converter tables, one per operator domain, and the opsets they cover.

A converter is a small function named after the ONNX op: the context, then the node's inputs
(None for a missing optional input), then the attributes as keyword-only parameters with the
spec's defaults. It returns one expression, or a tuple/list with one per node output:

    @converter("HardSigmoid", since=6)
    def HardSigmoid(ctx, x, *, alpha=0.2, beta=0.5):
        ...

The newest version whose `since` is <= the model's opset for that domain is used.
"""

from __future__ import annotations

from converters.common import ConverterTable

DEFAULT_DOMAIN = "ai.onnx"
# Domain -> (oldest, newest) opset the converters support. The newest ai.onnx opset is the one
# the installed onnx (1.23) defines, 28: its conformance cases use opsets up to 28. A model
# importing a newer opset (the checker accepts 999) is refused by from_onnx.
SUPPORTED_OPSETS: dict[str, tuple[int, int]] = {
    DEFAULT_DOMAIN: (1, 28),
    "ai.onnx.ml": (1, 5),
    "ai.onnx.preview.training": (1, 1),
    "ai.onnx.preview": (1, 1),
}
MAX_OPSET = SUPPORTED_OPSETS[DEFAULT_DOMAIN][1]

TABLES: dict[str, ConverterTable] = {d: ConverterTable(f"onnx:{d}") for d in SUPPORTED_OPSETS}


def norm_domain(domain: str) -> str:
    return DEFAULT_DOMAIN if domain in ("", "ai.onnx") else domain


def converter(name: str, since: int = 1, *more_names: str, domain: str = DEFAULT_DOMAIN):
    """Register a converter for `name` (and aliases) in `domain` from opset `since` on."""
    return TABLES[norm_domain(domain)].register(name, since, *more_names)


def lookup(domain: str, name: str, opset: int | None):
    """The converter for (domain, name) at `opset`, or None."""
    table = TABLES.get(norm_domain(domain))
    if table is None:
        return None
    return table.lookup(name, opset)
