"""Op cases: activations."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .harness import fn_case, module_case
from .inputs import R

CASES = []
add = CASES.append
nn = torch.nn

X = R(3, 4, 5, lo=-4, hi=4)
TOL = dict(rtol=1e-5, atol=1e-6)

for _name, _fn, _expect, _dec in [
    ("relu", F.relu, "aten.relu.default", True),
    ("relu6", F.relu6, "aten.hardtanh.default", True),
    ("hardtanh", lambda x: F.hardtanh(x, -0.5, 2.0), "aten.hardtanh.default", True),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), "aten.leaky_relu.default", True),
    ("elu", lambda x: F.elu(x, 0.7), "aten.elu.default", True),
    ("selu", F.selu, "aten.elu.default", True),
    ("celu", lambda x: F.celu(x, 1.5), "aten.celu.default", False),
    ("gelu", F.gelu, "aten.gelu.default", True),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), "aten.gelu.default", True),
    ("silu", F.silu, "aten.silu.default", False),
    ("mish", F.mish, "aten.mish.default", False),
    ("hardswish", F.hardswish, "aten.hardswish.default", False),
    ("hardsigmoid", F.hardsigmoid, "aten.hardsigmoid.default", False),
    ("softplus", lambda x: F.softplus(x, 2.0, 3.0), "aten.softplus.default", False),
    ("logsigmoid", F.logsigmoid, "aten.log_sigmoid.default", False),
    ("glu", lambda x: F.glu(x, 1), "aten.glu.default", False),
    ("softshrink", lambda x: F.softshrink(x, 0.7), "aten.softshrink.default", False),
    ("hardshrink", lambda x: F.hardshrink(x, 0.7), "aten.hardshrink.default", False),
    ("tanhshrink", F.tanhshrink, "aten.tanh.default", True),
    ("threshold", lambda x: F.threshold(x, 0.3, -2.0), "aten.threshold.default", False),
    ("softsign", F.softsign, "aten.abs.default", True),
    ("erfc", torch.erfc, "aten.erfc.default", False),
    ("sinc", torch.sinc, "aten.sinc.default", False),
    ("logit", lambda x: torch.logit(torch.sigmoid(x), 1e-3), "aten.logit.default", False),
]:
    add(fn_case(_name, _fn, X, expect=(_expect,), decomposed=_dec, **TOL))

add(
    module_case(
        "prelu",
        lambda: nn.PReLU(4, 0.3),
        R(2, 4, 3),
        expect=("aten.prelu.default",),
        decomposed=False,
    )
)
add(
    module_case(
        "prelu_single", lambda: nn.PReLU(1, 0.2), R(2, 4, 3), expect=("aten.prelu.default",)
    )
)
add(
    fn_case(
        "log_sigmoid_forward",
        lambda x: torch.ops.aten.log_sigmoid_forward.default(x)[0],
        X,
        expect=("aten.log_sigmoid_forward.default",),
        decomposed=False,
    )
)
add(fn_case("relu_int", F.relu, torch.tensor([-2, 0, 3]), expect=("aten.relu.default",)))
