"""Imports every converter module so that each registers its converters on TF."""

from . import control_flow  # noqa: F401
from . import ops_array  # noqa: F401
from . import ops_image  # noqa: F401
from . import ops_index  # noqa: F401
from . import ops_math  # noqa: F401
from . import ops_nn  # noqa: F401
from . import tensor_list  # noqa: F401
