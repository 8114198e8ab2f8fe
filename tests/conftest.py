"""Shared test set-up."""

from tests.zoo.catalog import import_torchvision

# An installed torchvision whose C extension does not load beside our torch breaks
# `import transformers`; import it once, safely, before any test does.
try:
    import torch  # noqa: F401

    import_torchvision()
except ImportError:
    pass
