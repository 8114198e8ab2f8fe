"""Errors a user can cause. Each message says what is wrong and what to do."""

from __future__ import annotations


class RelayError(Exception):
    """Base class of every error this project raises on purpose."""


class RelayTypeError(RelayError, TypeError):
    """A program does not typecheck. The message shows the offending expression."""


class OpTypeError(RelayError, TypeError):
    """Raised by an operator's type relation; inference wraps it with the call's context."""


class ParseError(RelayError, SyntaxError):
    """The Relay text is malformed; the message gives line:column and what was expected."""

    def __init__(self, msg: str, line: int = 0, column: int = 0, source: str = ""):
        super().__init__(msg)
        self.msg = msg
        self.line = line
        self.column = column
        self.source = source

    def __str__(self) -> str:
        return self.msg


class EvalError(RelayError, RuntimeError):
    """Evaluating a program failed (e.g. an incomplete match found no clause)."""


class ModelRunError(RelayError, RuntimeError):
    """A compiled model stopped with an error at run time (an index out of range, a failed
    check): the message says which."""


class ResourceLimitError(RelayError, MemoryError):
    """A tensor would exceed a configured byte budget."""


class UnknownExtentError(RelayError, ValueError):
    """A lowering rule needed a dimension that is unknown at compile time (`?`); `build`
    then compiles one version per concrete input shape instead (backend/specialize.py)."""


class InputError(RelayError, ValueError):
    """Inputs given at call time do not match what the model expects."""


class ModelLoadError(RelayError, ValueError):
    """A model file is malformed, truncated, unsafe or of an unsupported version."""


class UnsupportedOpsError(RelayError, NotImplementedError):
    """A model uses operators that have no converter. Lists every one of them at once."""

    def __init__(self, framework: str, ops: list[tuple], hint: str = ""):
        self.framework = framework
        self.ops = list(ops)
        lines = [f"{framework} model uses {len(self.ops)} unsupported operator(s):"]
        for entry in self.ops:
            lines.append("  - " + " ".join(str(x) for x in entry if x not in (None, "")))
        lines.append(
            hint or "Pass custom_convert_map={'OpName': fn} to supply converters for them."
        )
        super().__init__("\n".join(lines))
