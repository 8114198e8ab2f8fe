"""Imports every op family module so that each registers its OpDefs."""

from . import elemwise  # noqa: F401
