"""Imports every op family module so that each registers its OpDefs."""

from . import elemwise  # noqa: F401
from . import nn_conv  # noqa: F401
from . import nn_linear  # noqa: F401
from . import nn_pool  # noqa: F401
from . import nn_activation  # noqa: F401
from . import nn_norm  # noqa: F401
from . import nn_misc  # noqa: F401
from . import image  # noqa: F401
from . import vision  # noqa: F401
