"""The Relay language: types, expressions, modules, equality, text format."""

from .dtype import DTYPES
from .expr import (
    Call,
    Clause,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Span,
    Tuple,
    TupleGetItem,
    Var,
    call,
    const,
    pattern_vars,
    var,
)
from .module import IRModule
from .types import (
    Any,
    AnyDim,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    ScaledDim,
    ShapeVar,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
    TypeVar,
    scalar_type,
    scaled,
)
from .visitor import (
    ExprMutator,
    ExprVisitor,
    bound_vars,
    children,
    free_vars,
    post_order,
    substitute,
    with_children,
)

__all__ = [n for n in dir() if not n.startswith("_")]
