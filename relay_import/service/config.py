"""ServiceConfig: every limit of `relay serve` in one place, with the defaults a shared server
wants. The CLI fills it from flags; tests build it directly."""

from __future__ import annotations

import dataclasses
import ipaddress
import os
from dataclasses import dataclass, field

CODE_FORMATS = ("keras", "pt2", "savedmodel")  # formats that can carry code: off by default

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str | int) -> int:
    """'512M', '4G', '1048576' -> bytes."""
    if isinstance(text, int):
        return text
    s = str(text).strip().upper().removesuffix("B").removesuffix("I")
    unit = s[-1:] if s[-1:] in _UNITS else ""
    try:
        n = float(s[: len(s) - len(unit)] if unit else s)
    except ValueError:
        raise ValueError(f"not a size: {text!r} (e.g. 512M, 4G)") from None
    if n < 0:
        raise ValueError(f"a size cannot be negative: {text!r}")
    return int(n * _UNITS[unit])


@dataclass
class Limits:
    """What one request may cost. Sizes in bytes, times in seconds."""

    max_body: int = 256 << 20  # request body (uploads, inputs), checked while streaming
    max_json_body: int = 16 << 20  # JSON input documents (npz is the format for big inputs)
    max_json_depth: int = 64
    max_input_bytes: int = 64 << 20  # decoded inputs of one request, and each shape override
    max_tensor_bytes: int = 256 << 20  # tensors a model may hold or fold (converter budget)
    max_text_bytes: int = 32 << 20  # a Relay text answer
    max_output_bytes: int = 256 << 20  # outputs of one inference
    worker_memory: int = 4 << 30  # RLIMIT_AS of a worker process
    worker_cpu: float = 300.0  # RLIMIT_CPU per job (all threads)
    worker_timeout: float = 600.0  # wall clock per job, then the worker is killed
    header_timeout: float = 10.0  # a request's line and headers must arrive within this
    read_timeout: float = 60.0  # a request's body must arrive within this
    keep_alive: float = 5.0  # idle keep-alive connections are closed after this
    max_inflight: int = 64  # requests being answered at once; 429 beyond
    max_jobs: int = 32  # worker jobs running or queued; 429 beyond
    max_connections: int = 1024  # open connections; 503 beyond
    max_header_bytes: int = 16 << 10


@dataclass
class ServiceConfig:
    host: str = "127.0.0.1"
    port: int = 8000
    store: str = ""  # a directory or fsspec URL; "" = a directory under ~/.cache/relay
    token: str | None = None  # bearer token; required off loopback
    workers: int = 2
    models: dict[str, str] = field(default_factory=dict)  # name -> path, compiled at start
    # names compiled by someone else into the store (a Ray driver for its replicas): /ready lists
    # them and waits for nothing
    store_names: tuple[str, ...] = ()
    allow_formats: tuple[str, ...] = ()  # of CODE_FORMATS; ONNX is always accepted
    limits: Limits = field(default_factory=Limits)
    shutdown_timeout: float = 30.0
    tmp_dir: str | None = None  # where the service's temp root goes (default: system tmp)
    max_loaded: int = 8  # compiled artifacts kept loaded for inference
    isolate_inference: bool = False  # run every inference in a worker, not only dynamic ones
    quiet: bool = False
    mp_context: str = "forkserver"

    def __post_init__(self):
        bad = [f for f in self.allow_formats if f not in CODE_FORMATS]
        if bad:
            raise ValueError(f"unknown format(s) {bad}; choose from {list(CODE_FORMATS)}")
        if self.token is None:
            self.token = os.environ.get("RELAY_SERVE_TOKEN") or None
        if not self.store:
            base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
            self.store = os.path.join(base, "relay", "store")

    def check_exposure(self) -> None:
        """Refuse to listen off loopback without a token."""
        if not self.token and not is_loopback(self.host):
            raise ValueError(
                f"refusing to listen on {self.host} without authentication: pass --token "
                "(or set RELAY_SERVE_TOKEN), or bind to 127.0.0.1"
            )

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> ServiceConfig:
        d = dict(d)
        d["limits"] = Limits(**d.get("limits", {}))
        d["allow_formats"] = tuple(d.get("allow_formats", ()))
        d["store_names"] = tuple(d.get("store_names", ()))
        return cls(**d)


def is_loopback(host: str) -> bool:
    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
