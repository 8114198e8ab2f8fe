"""Imports every op family module so that each registers its OpDefs."""

from . import elemwise  # noqa: F401
from . import reduce  # noqa: F401
from . import misc  # noqa: F401
from . import transform  # noqa: F401
from . import transform_slice  # noqa: F401
from . import transform_index  # noqa: F401
from . import creation  # noqa: F401
from . import sort  # noqa: F401
from . import quantize  # noqa: F401
from . import random  # noqa: F401
from . import dyn  # noqa: F401
