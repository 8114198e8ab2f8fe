"""IRModule: global functions and ADT definitions."""

from __future__ import annotations

from collections.abc import Iterator

from .expr import Constructor, Expr, Function, GlobalVar
from .types import GlobalTypeVar, TypeData
from .visitor import free_vars


class IRModule:
    """A program: global functions by name (`@main`, `@loop`, ...) and ADTs (`List`, ...).

    >>> mod = IRModule.from_expr(fn)       # wraps an expression as @main
    >>> mod["main"]                         # the Function
    >>> print(mod)                          # text format, typed after relay_core.infer_type
    """

    def __init__(
        self,
        functions: dict[GlobalVar, Function] | None = None,
        type_definitions: dict[GlobalTypeVar, TypeData] | None = None,
    ):
        self.functions: dict[GlobalVar, Function] = {}
        self.type_definitions: dict[GlobalTypeVar, TypeData] = {}
        self._constructors: dict[str, Constructor] = {}
        self.attrs: dict = {}
        for td in (type_definitions or {}).values():
            self.add_type(td)
        for gv, f in (functions or {}).items():
            self.add(gv, f)

    # -- functions ---------------------------------------------------------------------------
    @classmethod
    def from_expr(cls, expr: Expr, functions=None, type_definitions=None) -> IRModule:
        """Wrap `expr` as `@main` (as a function of its free variables if it is not one)."""
        mod = cls(functions, type_definitions)
        if not isinstance(expr, Function):
            expr = Function(tuple(free_vars(expr)), expr)
        mod.add("main", expr)
        return mod

    def add(self, gv: GlobalVar | str, func: Function) -> GlobalVar:
        if isinstance(gv, str):
            gv = GlobalVar(gv)
        if not isinstance(func, Function):
            raise TypeError(f"a global must be a Function, not {type(func).__name__}")
        self.functions[gv] = func
        return gv

    def get_global_var(self, name: str) -> GlobalVar:
        gv = GlobalVar(name)
        if gv not in self.functions:
            raise KeyError(f"no global function @{name} in this module")
        return gv

    def __getitem__(self, key: str | GlobalVar | GlobalTypeVar):
        if isinstance(key, GlobalTypeVar):
            return self.type_definitions[key]
        gv = key if isinstance(key, GlobalVar) else GlobalVar(key)
        try:
            return self.functions[gv]
        except KeyError:
            if isinstance(key, str) and GlobalTypeVar(key) in self.type_definitions:
                return self.type_definitions[GlobalTypeVar(key)]
            raise KeyError(f"no global function @{gv.name_hint} in this module") from None

    def __setitem__(self, key: str | GlobalVar, func: Function) -> None:
        self.add(key, func)

    def __contains__(self, key) -> bool:
        if isinstance(key, str):
            return GlobalVar(key) in self.functions or GlobalTypeVar(key) in self.type_definitions
        if isinstance(key, GlobalTypeVar):
            return key in self.type_definitions
        return key in self.functions

    def __iter__(self) -> Iterator[tuple[GlobalVar, Function]]:
        return iter(list(self.functions.items()))

    @property
    def main(self) -> Function:
        return self["main"]

    # -- ADTs --------------------------------------------------------------------------------
    def add_type(self, td: TypeData) -> None:
        self.type_definitions[td.header] = td
        for c in td.constructors:
            self._constructors[c.name] = c

    def get_constructor(self, name: str) -> Constructor:
        try:
            return self._constructors[name]
        except KeyError:
            raise KeyError(f"no constructor {name} in this module") from None

    def get_type(self, name: str) -> TypeData:
        return self.type_definitions[GlobalTypeVar(name)]

    @property
    def constructors(self) -> dict[str, Constructor]:
        return dict(self._constructors)

    # -- misc --------------------------------------------------------------------------------
    def copy(self) -> IRModule:
        """A shallow copy: the same function objects, in a new module."""
        m = IRModule()
        m.type_definitions = dict(self.type_definitions)
        m._constructors = dict(self._constructors)
        m.functions = dict(self.functions)
        m.attrs = dict(self.attrs)
        return m

    def with_functions(self, functions: dict[GlobalVar, Function]) -> IRModule:
        m = self.copy()
        m.functions = dict(functions)
        return m

    def import_prelude(self) -> IRModule:
        """Add the prelude's ADTs (List, Option) and functions (map, foldl, ...) in place."""
        from .prelude import prelude_module

        p = prelude_module()
        for td in p.type_definitions.values():
            if td.header not in self.type_definitions:
                self.add_type(td)
        for gv, f in p.functions.items():
            if gv not in self.functions:
                self.functions[gv] = f
        return self

    def astext(self, show_meta_data: bool = True) -> str:
        """The module as text; with the metadata shown (the default) `relay_core.parse`
        reads it back."""
        from .printer import module_to_text

        return module_to_text(self, show_meta_data=show_meta_data)

    def __str__(self) -> str:
        """The module as text, large constants elided: `meta[Constant][3] /* float32[64, 3,
        7, 7], 36.8 KB */`. `astext()` prints every constant."""
        from .printer import ELIDE_BYTES, module_to_text

        return module_to_text(self, elide_bytes=ELIDE_BYTES)

    def __repr__(self) -> str:
        names = ", ".join("@" + gv.name_hint for gv in self.functions)
        return f"IRModule({names})"

    def __getstate__(self):
        return {"text": self.astext()}

    def __setstate__(self, state):
        from .parser import parse

        m = parse(state["text"], typecheck=False)
        self.__dict__.update(m.__dict__)
