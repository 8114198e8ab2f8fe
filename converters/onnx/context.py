"""The conversion context handed to every ONNX converter."""

from __future__ import annotations

import numpy as np

from converters.common import ConvertContext
from relay_core.ir import Constant, Expr, TensorType, Type


class OnnxContext(ConvertContext):
    """What a converter may ask while converting one node.

    - `ctx.opset`: the model's ai.onnx opset; `ctx.opsets[domain]` for others
    - `ctx.num_outputs`: how many outputs the node declares (trailing optional ones included)
    - `ctx.value(e)`: the array of `e` if it is literally a Constant, else None
    - `ctx.call / const / tuple / item`: build expressions tagged with the node (spans)
    - `ctx.type_of / shape_of / dtype / ndim`: types of what was built so far
    - `ctx.branch(graph)` / `ctx.body(graph, types)`: convert a subgraph attribute
    """

    def __init__(self, graph_converter):
        super().__init__("onnx")
        self.gc = graph_converter
        self.node = None
        self.num_outputs = 1
        self.output_names: list[str] = []
        self.opsets: dict[str, int] = {}

    @property
    def opset(self) -> int:
        return self.opsets.get("ai.onnx", 0)

    # -- constants ---------------------------------------------------------------------------
    @staticmethod
    def value(e: Expr | None) -> np.ndarray | None:
        """The array of `e` when it is literally a Constant (no evaluation), else None."""
        return e.data if isinstance(e, Constant) else None

    def require_value(self, e: Expr | None, what: str) -> np.ndarray:
        v = self.value(e)
        if v is None:
            raise self.error(f"{what} must be a constant (an initializer or a Constant node)")
        return v

    def ints(self, e: Expr | None, what: str) -> list[int] | None:
        """A constant int tensor as a Python list (None for a missing input)."""
        if e is None:
            return None
        return [int(v) for v in np.asarray(self.require_value(e, what)).reshape(-1)]

    # -- types -------------------------------------------------------------------------------
    def type_of(self, e: Expr) -> Type:
        """The type of `e` (incremental inference; constructors resolve in the module)."""
        from relay_core.errors import RelayTypeError
        from relay_core.typing import infer_expr

        try:
            return infer_expr(e, self.gc.mod)
        except RelayTypeError as err:
            raise self.error(str(err)) from None

    def is_tensor(self, e: Expr) -> bool:
        return isinstance(self.type_of(e), TensorType)

    def rank(self, e: Expr) -> int:
        return self.ndim(e)

    def static_shape(self, e: Expr, what: str = "input") -> tuple[int, ...]:
        shape = self.shape_of(e)
        if not all(isinstance(d, int) for d in shape):
            raise self.error(f"{what} needs a static shape, got {shape}")
        return shape

    def call_global(self, gv, args):
        """A call of a global function of the module being built."""
        from relay_core.ir import Call

        return Call(gv, tuple(args), span=self.span)

    # -- subgraphs ---------------------------------------------------------------------------
    def branch(self, graph, inputs=()) -> list[Expr]:
        """Outputs of a subgraph evaluated in the current scope (If branches; an unrolled Loop
        body's iteration with its inputs bound to `inputs`)."""
        return self.gc.convert_branch(graph, self, inputs)

    def body(self, graph, param_types: list[Type]):
        """A subgraph as a function body: (params, outputs, captures), see GraphConverter."""
        return self.gc.convert_body(graph, param_types, self)
