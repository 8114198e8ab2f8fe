"""A small tensor-expression language: each output element as an index expression.

    >>> from relay_core import te
    >>> A = te.placeholder((4, 5), "float32", "A")
    >>> k = te.reduce_axis(5)
    >>> S = te.compute((4,), lambda i: te.sum(A[i, k], axis=k), "S")
    >>> te.evaluate(S, {A: np.ones((4, 5), "float32")})
    array([5., 5., 5., 5.], dtype=float32)

Operators' `lower` rules (relay_core.te.lower_*) build these from Relay calls; the backend turns
them into loop nests. Nothing here imports llvmlite.
"""

from .evaluate import evaluate
from .expr import (
    INDEX,
    Binary,
    Call,
    Cast,
    Compare,
    Const,
    PrimExpr,
    Read,
    Reduce,
    Select,
    Unary,
    Var,
    all_of,
    as_expr,
    binary,
    call,
    cast,
    compare,
    const,
    const_value,
    eq,
    floordiv,
    floormod,
    ge,
    gt,
    index,
    is_const,
    le,
    logical_and,
    logical_or,
    lt,
    max_,
    max_value,
    min_,
    min_value,
    ne,
    neg,
    not_,
    select,
    truncdiv,
    truncmod,
)
from .tensor import (
    ComputeOp,
    Tensor,
    all,
    any,
    argmax,
    argmin,
    compute,
    const_array,
    const_tensor,
    identity,
    max,
    min,
    placeholder,
    prod,
    reduce_axis,
    size,
    sum,
    value_of,
)

__all__ = [n for n in dir() if not n.startswith("_")]
