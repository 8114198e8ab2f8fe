"""The operator registry. `lookup("nn.conv2d")` returns the OpDef; `all_ops()` every one.

Loading (the one idiom of every registry in this project): importing the package fills the
registry. This `__init__` imports every family module; each registers its OpDefs with everything
about them (a rule that lives elsewhere -- a gradient in grads*.py, a decomposition in
decompose.py, a tensor-expression rule in relay_core/te, a kernel in relay_core/backend -- is
named by a `Rule` / `Kernel` and imported on its first use). No family needs another at import
time, so the order is free; nothing is attached to an OpDef after its module has loaded.
"""

from . import (
    bitcast,
    complex,
    creation,
    dyn,
    dyn_image,
    dyn_params,
    elemwise,
    grad_support,
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
    transform_broadcast,
    transform_concat,
    transform_index,
    transform_reshape,
    transform_slice,
    tvm_compat,
    vision,
    vision_grad,
)
from .registry import OpDef, OpPattern, all_ops, attrs_to_dict, lookup, make_attrs, register

__all__ = ["OpDef", "OpPattern", "all_ops", "attrs_to_dict", "lookup", "make_attrs", "register"]
