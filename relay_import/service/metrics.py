"""Prometheus metrics of one service instance (its own registry, so several apps can live in
one process, as in tests)."""

from __future__ import annotations

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

_LATENCY = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)


class Metrics:
    def __init__(self):
        r = self.registry = CollectorRegistry()
        self.requests = Counter(
            "relay_http_requests",
            "HTTP requests answered",
            ["method", "route", "status"],
            registry=r,
        )
        self.latency = Histogram(
            "relay_http_request_seconds",
            "Time to answer",
            ["route"],
            buckets=_LATENCY,
            registry=r,
        )
        self.inflight = Gauge("relay_http_inflight", "Requests being answered", registry=r)
        self.rejected = Counter(
            "relay_http_rejected", "Requests refused before routing", ["reason"], registry=r
        )
        self.jobs = Counter(
            "relay_worker_jobs",
            "Worker jobs by stage and outcome",
            ["stage", "outcome"],
            registry=r,
        )
        self.job_seconds = Histogram(
            "relay_worker_job_seconds",
            "Worker job time",
            ["stage"],
            buckets=_LATENCY,
            registry=r,
        )
        self.restarts = Counter(
            "relay_worker_restarts", "Worker processes replaced", ["reason"], registry=r
        )
        self.queued = Gauge(
            "relay_worker_jobs_pending", "Worker jobs running or queued", registry=r
        )
        self.store = Counter(
            "relay_store_lookups",
            "Store lookups of derived objects",
            ["kind", "result"],
            registry=r,
        )
        self.ready = Gauge("relay_ready", "1 when every preloaded model is compiled", registry=r)
        self.loaded = Gauge("relay_artifacts_loaded", "Compiled artifacts loaded", registry=r)

    def pool_event(self, kind: str, **kw) -> None:
        if kind == "job":
            self.jobs.labels(kw["stage"], kw["outcome"]).inc()
            self.job_seconds.labels(kw["stage"]).observe(kw["seconds"])
        elif kind == "restart":
            self.restarts.labels(kw["reason"]).inc()

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
