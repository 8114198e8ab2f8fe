"""Imports every op family module so that each registers its OpDefs."""

from . import (  # noqa: F401
    creation,
    dyn,
    elemwise,
    image,
    misc,
    nn_activation,
    nn_conv,
    nn_linear,
    nn_misc,
    nn_norm,
    nn_pool,
    quantize,
    random,
    reduce,
    sort,
    transform,
    transform_index,
    transform_slice,
    vision,
)
