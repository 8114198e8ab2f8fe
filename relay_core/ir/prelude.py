"""The prelude: `List` and `Option` and polymorphic list functions, written in Relay text.

The text parser resolves names a program does not define (`Cons`, `List`, `@map`, ...) here and
adds what is used to the module; `IRModule.import_prelude()` adds everything.

`Option`'s empty constructor is called `None`, as in TVM. In expression position `None` is that
constructor; as an attribute value (`units=None`) it is the absence of a value.
"""

from __future__ import annotations

from .expr import Constructor, Function, GlobalVar, Var
from .module import IRModule
from .types import FuncType, RefType, TupleType, Type, TypeCall
from .visitor import ExprVisitor

PRELUDE = """
#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}

type Option[A] {
  Some(A),
  None,
}

// The first element of a non-empty list.
def @hd[A](%xs: List[A]) -> A {
  match? (%xs) {
    Cons(%x, _) => { %x },
  }
}

// A non-empty list without its first element.
def @tl[A](%xs: List[A]) -> List[A] {
  match? (%xs) {
    Cons(_, %rest) => { %rest },
  }
}

// The element at index %n (0-based).
def @nth[A](%xs: List[A], %n: int32) -> A {
  if (equal(%n, 0)) {
    @hd(%xs)
  } else {
    @nth(@tl(%xs), subtract(%n, 1))
  }
}

// The list with the element at index %n replaced by %v.
def @update[A](%xs: List[A], %n: int32, %v: A) -> List[A] {
  if (equal(%n, 0)) {
    Cons(%v, @tl(%xs))
  } else {
    Cons(@hd(%xs), @update(@tl(%xs), subtract(%n, 1), %v))
  }
}

def @length[A](%xs: List[A]) -> int32 {
  match (%xs) {
    Cons(_, %rest) => { add(1, @length(%rest)) },
    Nil => { 0 },
  }
}

def @map[A, B](%f: fn (A) -> B, %xs: List[A]) -> List[B] {
  match (%xs) {
    Cons(%x, %rest) => { Cons(%f(%x), @map(%f, %rest)) },
    Nil => { Nil },
  }
}

// f(...f(f(acc, x0), x1)..., xn)
def @foldl[A, B](%f: fn (A, B) -> A, %acc: A, %xs: List[B]) -> A {
  match (%xs) {
    Cons(%x, %rest) => { @foldl(%f, %f(%acc, %x), %rest) },
    Nil => { %acc },
  }
}

// f(x0, f(x1, ...f(xn, acc)))
def @foldr[A, B](%f: fn (A, B) -> B, %acc: B, %xs: List[A]) -> B {
  match (%xs) {
    Cons(%x, %rest) => { %f(%x, @foldr(%f, %acc, %rest)) },
    Nil => { %acc },
  }
}

// %xs followed by %ys.
def @concat[A](%xs: List[A], %ys: List[A]) -> List[A] {
  match (%xs) {
    Cons(%x, %rest) => { Cons(%x, @concat(%rest, %ys)) },
    Nil => { %ys },
  }
}

def @rev[A](%xs: List[A]) -> List[A] {
  @foldl(fn (%acc: List[A], %x: A) -> List[A] { Cons(%x, %acc) }, Nil, %xs)
}
"""

_cache: IRModule | None = None


def prelude_module(copy: bool = True) -> IRModule:
    """The prelude, parsed and typechecked once; a fresh (shallow) copy unless copy=False."""
    global _cache
    if _cache is None:
        from .parser import parse

        _cache = parse(PRELUDE, source_name="<prelude>", use_prelude=False)
    return _cache.copy() if copy else _cache


def _type_names(t: Type | None, out: set[str]) -> None:
    stack = [t]
    while stack:
        x = stack.pop()
        if isinstance(x, TypeCall):
            out.add(x.func.name)
            stack.extend(x.args)
        elif isinstance(x, TupleType):
            stack.extend(x.fields)
        elif isinstance(x, FuncType):
            stack.extend(x.arg_types)
            stack.append(x.ret_type)
        elif isinstance(x, RefType):
            stack.append(x.value)


def dependencies(f: Function) -> tuple[list[str], set[str]]:
    """Global functions and ADTs that `f` refers to."""
    d = _Dependencies()
    d.visit(f)
    return d.globals_used, d.adts


class _Dependencies(ExprVisitor):
    def __init__(self):
        super().__init__()
        self.globals_used: list[str] = []
        self.adts: set[str] = set()

    def visit_global_var(self, node: GlobalVar) -> None:
        self.globals_used.append(node.name_hint)

    def visit_constructor(self, node: Constructor) -> None:
        self.adts.add(node.belong_to.name)

    def visit_var(self, node: Var) -> None:
        _type_names(node.type_annotation, self.adts)

    def visit_function(self, node: Function) -> None:
        _type_names(node.ret_type, self.adts)


__all__ = ["PRELUDE", "prelude_module", "dependencies"]
