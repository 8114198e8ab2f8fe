"""Running the app on uvicorn with the limits of a shared server.

uvicorn's h11 protocol is extended so that a connection that does not deliver its request line
and headers within `header_timeout` (slow or half-sent requests, idle keep-alive) is closed, a
connection beyond `max_connections` is refused, and malformed HTTP (a bad Content-Length, a
broken chunked body, headers over the size limit) is answered with the service's JSON error
instead of uvicorn's plain text. The socket is bound before anything else, so the port answers
/health while the preloaded models compile; SIGTERM / SIGINT stop accepting, let requests in
flight finish up to `shutdown_timeout`, then stop the workers and remove the temp root.
"""

from __future__ import annotations

import json
import socket
import sys

from .config import Limits, ServiceConfig


def _raw_json(status: int, reason: str, code: str, message: str) -> bytes:
    body = json.dumps({"code": code, "message": message}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


def make_protocol(limits: Limits):
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Protocol(H11Protocol):
        header_timeout = limits.header_timeout
        max_connections = limits.max_connections
        _hdr_timer = None

        def connection_made(self, transport):
            super().connection_made(transport)
            if len(self.connections) > self.max_connections:
                transport.write(
                    _raw_json(
                        503,
                        "Service Unavailable",
                        "too_many_connections",
                        "too many open connections; retry later",
                    )
                )
                transport.close()
                return
            self._arm()

        def _arm(self):
            self._disarm()
            self._hdr_timer = self.loop.call_later(self.header_timeout, self._header_timeout)

        def _disarm(self):
            if self._hdr_timer is not None:
                self._hdr_timer.cancel()
                self._hdr_timer = None

        def handle_events(self):
            before = self.cycle
            super().handle_events()
            if self.cycle is not before:  # a request's headers arrived
                self._disarm()

        def on_response_complete(self):
            self._arm()  # the next request on this connection gets its own deadline
            super().on_response_complete()

        def connection_lost(self, exc):
            self._disarm()
            super().connection_lost(exc)

        def _header_timeout(self):
            self._hdr_timer = None
            if self.transport.is_closing():
                return
            if self.cycle is not None and not self.cycle.response_complete:
                return  # a request is being answered; its body has its own deadline
            partial = bool(self.conn.trailing_data[0]) or self.conn.their_state not in (
                h11.IDLE,
                h11.DONE,
            )
            if partial:
                self.transport.write(
                    _raw_json(
                        408,
                        "Request Timeout",
                        "request_timeout",
                        f"the request line and headers did not arrive within "
                        f"{self.header_timeout:g} s",
                    )
                )
            self.transport.close()

        def send_400_response(self, msg: str):
            self.transport.write(
                _raw_json(
                    400,
                    "Bad Request",
                    "bad_http",
                    "malformed HTTP request: check the request line, the headers (at most "
                    f"{limits.max_header_bytes:,} bytes), Content-Length and chunked framing",
                )
            )
            self.transport.close()

    return Protocol


def _server_class():
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame):
            super().handle_exit(sig, frame)
            # uvicorn re-raises the signal after its graceful shutdown, which kills the
            # process before atexit cleanups (multiprocessing's temp dir) run: a completed
            # graceful shutdown exits with status 0 instead.
            getattr(self, "_captured_signals", []).clear()

    return Server


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def serve(cfg: ServiceConfig) -> int:
    """Serve until SIGTERM / SIGINT; returns the exit status (1 when a preloaded model could
    not be served)."""
    import uvicorn

    from .app import create_app

    _Server = _server_class()
    cfg.check_exposure()
    sock = bind(cfg.host, cfg.port)
    app = create_app(cfg)
    state = app.state.relay
    lim = cfg.limits
    config = uvicorn.Config(
        app,
        http=make_protocol(lim),
        lifespan="on",
        timeout_keep_alive=max(1, int(lim.keep_alive)),
        timeout_graceful_shutdown=max(1, int(cfg.shutdown_timeout)),
        h11_max_incomplete_event_size=lim.max_header_bytes,
        log_level="warning" if cfg.quiet else "info",
        access_log=not cfg.quiet,
        server_header=False,
    )
    server = _Server(config)
    state.on_fatal = lambda: setattr(server, "should_exit", True)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"relay serve: listening on http://{shown}:{port}", flush=True)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    if state.exit_code:
        print("relay serve: stopped: a preloaded model could not be served", file=sys.stderr)
    elif not cfg.quiet:
        print("relay serve: stopped", flush=True)
    return state.exit_code
