"""Imports every op family module so that each registers its OpDefs."""

# The ONNX frontend's extra ops: some are dynamic twins of the ops above.
# Gradient rules and decompositions last: they are installed on the OpDefs registered above.
from . import (  # noqa: F401  # noqa: E402, F401, I001  # noqa: E402, F401, I001
    creation,
    decompose,
    dyn,
    elemwise,
    grad_support,
    grads,
    grads_nn,
    grads_sample,
    grads_tensor,
    image,
    misc,
    nn_activation,
    nn_conv,
    nn_linear,
    nn_misc,
    nn_norm,
    nn_pool,
    onnx_extra,
    onnx_grads,  # noqa: E402, F401, I001
    onnx_misc,
    onnx_ml,
    onnx_signal,
    onnx_text,
    quantize,
    random,
    reduce,
    sort,
    tf_extra,
    torch_extra,
    transform,
    transform_index,
    transform_slice,
    tvm_compat,
    vision,
    vision_grad,
)

grads.install()
decompose.install()
