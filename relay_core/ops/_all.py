"""Imports every op family module so that each registers its OpDefs."""

from . import elemwise  # noqa: F401
from . import grad_support  # noqa: F401
from . import grads  # noqa: F401  (gradient rules; installed once every family is loaded)

grads.install()
