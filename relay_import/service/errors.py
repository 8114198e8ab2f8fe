"""Errors of the service: every 4xx / 5xx is JSON `{"code", "message", ...}` with a stable code.
Messages never carry an exception's raw text from an unexpected failure, nor a server path."""

from __future__ import annotations

import re

# code -> HTTP status. Codes are a contract: clients branch on them.
STATUS = {
    "bad_request": 400,
    "bad_http": 400,
    "empty_body": 400,
    "invalid_json": 400,
    "json_too_deep": 400,
    "invalid_inputs": 400,
    "invalid_parameter": 400,
    "invalid_model": 400,
    "conversion_failed": 400,
    "type_error": 400,
    "unauthorized": 401,
    "not_found": 404,
    "method_not_allowed": 405,
    "request_timeout": 408,
    "not_compiled": 409,
    "body_too_large": 413,
    "budget_exceeded": 413,
    "response_too_large": 413,
    "unsupported_format": 415,
    "headers_too_large": 431,
    "unsupported_ops": 422,
    "source_runtime_failed": 422,
    "memory_limit": 422,
    "too_many_requests": 429,
    "internal_error": 500,
    "worker_crashed": 500,
    "not_ready": 503,
    "shutting_down": 503,
    "too_many_connections": 503,
    "worker_timeout": 504,
    "cpu_limit": 504,
}


class ApiError(Exception):
    """An error answered to the client as JSON."""

    def __init__(self, code: str, message: str, status: int | None = None, **extra):
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status or STATUS.get(code, 400)
        self.close = bool(extra.pop("close", False))  # answer with Connection: close
        self.extra = extra

    def body(self) -> dict:
        return {"code": self.code, "message": self.message, **self.extra}


_ABS_PATH = re.compile(r"(?<![\w.:/])/(?:[^\s'\"/:,;()\[\]]+/)+([^\s'\"/:,;()\[\]]*)")


def scrub(text: str, *prefixes: str) -> str:
    """Remove server paths from a message: known prefixes first, then any absolute path is cut
    to its last component."""
    for p in sorted((p for p in prefixes if p), key=len, reverse=True):
        text = text.replace(p.rstrip("/") + "/", "").replace(p, "")
    return _ABS_PATH.sub(lambda m: m.group(1) or "<path>", text)


def from_relay_error(e: BaseException, *prefixes: str) -> ApiError:
    """A RelayError (or MemoryError) raised by the API on a client's model, as an ApiError."""
    from relay_core.errors import (
        InputError,
        ModelLoadError,
        ParseError,
        RelayTypeError,
        ResourceLimitError,
        UnsupportedOpsError,
    )

    msg = scrub(str(e), *prefixes)
    if isinstance(e, UnsupportedOpsError):
        ops = [" ".join(str(x) for x in op if x not in (None, "")) for op in e.ops]
        return ApiError("unsupported_ops", msg, unsupported_ops=ops)
    if isinstance(e, ResourceLimitError):
        return ApiError("budget_exceeded", msg)
    if isinstance(e, MemoryError):
        return ApiError("memory_limit", "the job ran out of the memory a worker may use")
    if isinstance(e, InputError):
        return ApiError("invalid_inputs", msg)
    if isinstance(e, (ModelLoadError, ParseError)):
        return ApiError("invalid_model", msg)
    if isinstance(e, RelayTypeError):
        return ApiError("type_error", msg)
    return ApiError("conversion_failed", msg)
