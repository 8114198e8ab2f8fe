"""Op cases: mutating / in-place overloads (`add_`, `copy_`, `index_put_`, ...), which an
exported program can still hold; the frontend functionalises the program before converting."""

from __future__ import annotations

import torch

from .harness import fn_case, module_case
from .inputs import B, I, R

CASES = []
add = CASES.append


def _on_copy(method, *extra):
    """y = x * 1 mutated by `method` (so the graph mutates an intermediate), then y * 2."""

    def fn(x, *args):
        y = x * 1.0
        getattr(y, method)(*args, *extra)
        return y * 2.0

    return fn


for _name, _overload, _args, _inputs in [
    ("add_", "Tensor", (), (R(3, 4), R(3, 4))),
    ("sub_", "Tensor", (), (R(3, 4), R(4))),
    ("mul_", "Tensor", (), (R(3, 4), R(3, 1))),
    ("div_", "Tensor", (), (R(3, 4), R(3, 4, lo=0.5, hi=2.0))),
    ("copy_", "default", (), (R(3, 4), R(4))),
    ("masked_fill_", "Scalar", (-7.0,), (R(3, 4), B(3, 4))),
    ("clamp_", "default", (-0.5, 0.5), (R(3, 4),)),
    ("relu_", "default", (), (R(3, 4),)),
    ("sigmoid_", "default", (), (R(3, 4),)),
    ("fill_", "Scalar", (0.25,), (R(3, 4),)),
    ("zero_", "default", (), (R(3, 4),)),
]:
    add(
        fn_case(
            f"inplace_{_name}",
            _on_copy(_name, *_args),
            *_inputs,
            expect=(f"aten.{_name}.{_overload}",),
        )
    )


def _index_put(x, i, v):
    y = x.clone()
    y.index_put_((i,), v)
    return y + 1.0


def _index_put_acc(x, i, v):
    y = torch.zeros_like(x)
    y.index_put_((i,), v, accumulate=True)
    return y - x


def _setitem(x, v):
    y = x.clone()
    y[:, 1:3] = v  # slice + copy_
    return y


def _mutate_input(x, y):
    x.add_(y)  # mutates a user input; the output reads the mutated value
    return x * 3.0


_IP = ("aten.index_put_.default",)
add(fn_case("inplace_index_put_", _index_put, R(5, 3), I(4, lo=0, hi=4), R(4, 3), expect=_IP))
add(
    fn_case("inplace_index_put_acc", _index_put_acc, R(5, 3), I(6, lo=0, hi=4), R(6, 3), expect=_IP)
)
add(fn_case("inplace_setitem", _setitem, R(3, 5), R(3, 2), expect=("aten.copy_.default",)))
add(fn_case("inplace_input", _mutate_input, R(3, 4), R(3, 4), expect=("aten.add_.Tensor",)))


class _Counter(torch.nn.Module):
    """A buffer updated in place (as a BatchNorm's running stats are in training)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("acc", torch.ones(4))

    def forward(self, x):
        self.acc.mul_(2.0)
        return x + self.acc


add(module_case("inplace_buffer", _Counter, R(3, 4), expect=("aten.mul_.Tensor",)))
