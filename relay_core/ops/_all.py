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
    tf_extra,
    torch_extra,
    transform,
    transform_index,
    transform_slice,
    vision,
)

# The ONNX frontend's extra ops: some are dynamic twins of the ops above.
from . import onnx_extra, onnx_misc, onnx_ml, onnx_signal, onnx_text  # noqa: E402, F401, I001
from . import onnx_grads  # noqa: E402, F401, I001

# Gradient rules and decompositions last: they are installed on the OpDefs registered above.
from . import decompose, grads, grads_nn, grads_tensor  # noqa: E402, F401, I001

grads.install()
decompose.install()
