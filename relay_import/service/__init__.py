"""`relay serve`: the converter service. See app.py for the routes, server.py for the HTTP
limits, pool.py for the worker processes, store.py for the content-addressed store,
ray_serve.py and batch.py for scale-out on Ray.

>>> from relay_import.service import ServiceConfig, create_app, serve
>>> serve(ServiceConfig(port=8000, models={"cnn": "examples/demo_cnn.onnx"}))
"""

from __future__ import annotations

from .config import CODE_FORMATS, Limits, ServiceConfig, parse_size
from .errors import ApiError

__all__ = [
    "ApiError",
    "CODE_FORMATS",
    "Limits",
    "ServiceConfig",
    "create_app",
    "parse_size",
    "serve",
]


def create_app(cfg: ServiceConfig, metrics=None):
    from .app import create_app as _create

    return _create(cfg, metrics)


def serve(cfg: ServiceConfig) -> int:
    from .server import serve as _serve

    return _serve(cfg)
