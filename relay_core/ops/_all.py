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
from . import grad_support  # noqa: F401

# Gradient rules last: they are installed on the OpDefs every family above registered.
from . import grads  # noqa: F401, E402
from . import grads_tensor  # noqa: F401, E402

from . import decompose  # noqa: F401, E402

grads.install()
decompose.install()
