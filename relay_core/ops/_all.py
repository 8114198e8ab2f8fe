"""Imports every op family module so that each registers its OpDefs."""

from . import elemwise  # noqa: F401
from . import reduce  # noqa: F401
from . import misc  # noqa: F401
from . import transform  # noqa: F401
