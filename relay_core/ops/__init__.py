"""The operator registry. `lookup("nn.conv2d")` returns the OpDef; `all_ops()` every one.

Loading (the one idiom of every registry in this project): importing the package fills the
registry. This `__init__` imports every family module (each registers its OpDefs; no family
needs another at import time, so the order is free), then installs the gradient rules and
decompositions that grads*.py and decompose.py declared. Nothing else imports a family for its
side effect, and no lookup loads anything lazily.
"""

from . import (
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
    tvm_compat,
    vision,
    vision_grad,
)
from .registry import OpDef, OpPattern, all_ops, attrs_to_dict, lookup, make_attrs, register

grads.install()
decompose.install()

__all__ = ["OpDef", "OpPattern", "all_ops", "attrs_to_dict", "lookup", "make_attrs", "register"]
