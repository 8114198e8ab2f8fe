"""Imports every converter module so that each registers its converters on TF."""

from . import (
    control_flow,  # noqa: F401
    ops_array,  # noqa: F401
    ops_image,  # noqa: F401
    ops_index,  # noqa: F401
    ops_math,  # noqa: F401
    ops_misc,  # noqa: F401
    ops_nn,  # noqa: F401
    tensor_list,  # noqa: F401
)
