"""The PyTorch frontend: torch.export programs (ExportedProgram, .pt2, nn.Module) to Relay.

>>> from converters.pytorch import from_pytorch
>>> mod = from_pytorch(model, example_inputs=(torch.randn(1, 3, 32, 32),))
"""

from . import (  # noqa: F401  (each module registers its converters)
    ops_activation,
    ops_backward,
    ops_control,
    ops_creation,
    ops_elemwise,
    ops_fft,
    ops_index,
    ops_nn,
    ops_pool,
    ops_reduce,
    ops_rnn,
    ops_shape,
)
from .frontend import decompose_unsupported, from_pytorch
from .table import TORCH, aten, register, target_name

__all__ = [
    "from_pytorch",
    "decompose_unsupported",
    "TORCH",
    "aten",
    "register",
    "target_name",
]
