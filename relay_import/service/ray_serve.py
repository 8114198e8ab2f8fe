"""`relay serve --ray`: the same ASGI app deployed with Ray Serve.

Each replica builds the app from the same ServiceConfig (its own worker processes and loaded
artifacts) and reads and writes the shared store, so a model compiled by one replica, by a
`relay serve` process or by `relay convert-batch` is served by all. With `max_replicas` the
deployment autoscales on queue length (ongoing requests per replica).
"""

from __future__ import annotations

import signal
import threading

from .config import ServiceConfig

APP_NAME = "relay"


def deployment(cfg: ServiceConfig, replicas: int = 1, max_replicas: int = 0):
    from ray import serve

    cfg_dict = cfg.to_dict()

    def build():
        from relay_import.service.app import create_app
        from relay_import.service.config import ServiceConfig

        c = ServiceConfig.from_dict(cfg_dict)
        # compiled by the driver before deploying; replicas find them in the store
        c.store_names, c.models = tuple(c.models), {}
        return create_app(c)

    opts = {
        "name": "relay",
        "max_ongoing_requests": cfg.limits.max_inflight,
        "ray_actor_options": {"num_cpus": 0.5},
        "health_check_period_s": 5,
    }
    if max_replicas > replicas:
        opts["autoscaling_config"] = {
            "min_replicas": max(1, replicas),
            "max_replicas": max_replicas,
            "target_ongoing_requests": 4,
            "upscale_delay_s": 5,
            "downscale_delay_s": 60,
        }
    else:
        opts["num_replicas"] = max(1, replicas)
    return serve.deployment(**opts)(serve.ingress(build)())


def start(
    cfg: ServiceConfig,
    address: str | None = None,
    replicas: int = 1,
    max_replicas: int = 0,
    stop: threading.Event | None = None,
) -> str:
    """Deploy on Ray (connecting to `address`, or a local Ray); returns the base URL.

    With `stop`, SIGTERM / SIGINT set it from the moment Ray is up (ray.init installs its own
    SIGTERM handler, which would kill the driver while serve.run waits for the replicas)."""
    from ray import serve

    from .batch import init_ray
    from .store import Store

    if not Store(cfg.store).shared:
        raise ValueError(f"{cfg.store}: replicas need a store they can all reach, not memory://")
    if cfg.models:
        _precompile(cfg)
    init_ray(address)
    if stop is not None:
        _catch_signals(stop)
    serve.start(
        http_options={
            "host": cfg.host,
            "port": cfg.port,
            "request_timeout_s": cfg.limits.worker_timeout + 30,
        }
    )
    serve.run(
        deployment(cfg, replicas, max_replicas).bind(),
        name=APP_NAME,
        route_prefix="/",
        blocking=False,
    )
    return f"http://{cfg.host}:{cfg.port}"


def _precompile(cfg: ServiceConfig) -> None:
    """Compile the preloaded models once, into the store, and record their names there."""
    import tempfile

    from .engine import Engine

    with tempfile.TemporaryDirectory(prefix="relay-serve-") as root:
        engine = Engine(cfg, root)
        try:
            for name, path in cfg.models.items():
                if not cfg.quiet:
                    print(f"relay serve: compiling {name}", flush=True)
                engine.preload(name, path)
        finally:
            engine.close()


def _catch_signals(event: threading.Event) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: event.set())


def stop() -> None:
    from ray import serve

    serve.delete(APP_NAME)


def serve_on_ray(
    cfg: ServiceConfig, address: str | None = None, replicas: int = 1, max_replicas: int = 0
) -> int:
    """Deploy, print the URL, and wait for SIGTERM / SIGINT; then remove the deployment."""
    import ray
    from ray import serve

    # A SIGTERM while the replicas start must drain like one after them.
    done = threading.Event()
    _catch_signals(done)
    try:
        url = start(cfg, address, replicas, max_replicas, stop=done)
    except Exception as e:  # noqa: BLE001 - one clear line for the operator
        from .errors import ApiError

        msg = e.message if isinstance(e, ApiError) else str(e)
        print(f"relay serve --ray: error: {msg}", flush=True)
        return 1
    n = f"{replicas}-{max_replicas}" if max_replicas > replicas else str(replicas)
    print(f"relay serve: listening on {url} (Ray Serve, {n} replicas)", flush=True)
    done.wait()
    print("relay serve: stopping: draining the replicas", flush=True)
    try:
        serve.delete(APP_NAME)  # replicas finish their requests and run their shutdown
    finally:
        serve.shutdown()
    if address is None:
        ray.shutdown()
    return 0
