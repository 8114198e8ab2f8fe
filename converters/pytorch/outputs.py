"""The tensors of a torch model's output, flattened (relay_import's torch runner, the tests)."""

from __future__ import annotations


def flatten_outputs(v) -> list:
    """The tensors of a (nested) torch output in order: tuples, lists, dicts, ModelOutputs."""
    out = []
    stack = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, (tuple, list)):
            stack.extend(reversed(x))
        elif isinstance(x, dict):
            stack.extend(reversed(list(x.values())))
        elif hasattr(x, "to_tuple"):  # transformers ModelOutput
            stack.extend(reversed(list(x.to_tuple())))
        elif x is None:
            continue
        else:
            out.append(x)
    return out
