"""Imports every op family module so that each registers its OpDefs."""

# Gradient rules and decompositions last: they are installed on the OpDefs registered above.
from . import (  # noqa: F401, I001
    bitcast,
    complex,
    creation,
    decompose,
    dyn,
    dyn_params,
    elemwise,
    grad_support,
    grads,
    grads_misc,
    grads_nn,
    grads_sample,
    grads_tensor,
    image,
    misc,
    ml,
    nn_activation,
    nn_conv,
    nn_linear,
    nn_misc,
    nn_norm,
    nn_pool,
    quantize,
    random,
    reduce,
    signal,
    sort,
    strings,
    tensor_misc,
    transform,
    transform_index,
    transform_slice,
    vision,
    vision_grad,
)

grads.install()
decompose.install()
