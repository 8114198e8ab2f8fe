"""Imports every op family module so that each registers its OpDefs."""

from . import (  # noqa: F401
    creation,
    dyn,
    elemwise,
    grad_support,
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

# Gradient rules and decompositions last: they are installed on the OpDefs registered above.
from . import decompose, grads, grads_nn, grads_tensor  # noqa: E402, F401, I001

grads.install()
decompose.install()
