"""Prometheus metrics of one app: requests and latency per route, estimates per model, observations, reloads.

With ``PROMETHEUS_MULTIPROC_DIR`` set (``predictor serve --workers N`` sets it), every worker process writes its
values to files there and a scrape, whichever worker answers it, reads and sums them all (the client library's
multiprocess mode): counters and histograms add up, gauges take the live workers' maximum (minimum for
``predictor_registry_up``).
"""

from __future__ import annotations

import os
from collections import Counter as Tally
from collections.abc import Iterable

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
    multiprocess,
)

from predictor.domain import Estimate, EstimateColumns, Target
from predictor.live import LIVE_METRICS, LiveReport

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class ApiMetrics:
    """The service's metrics in a registry of their own, so several apps (tests) never share counters."""

    def __init__(self) -> None:
        # the *_created series only add noise to scrapes
        disable_created_metrics()
        self.shared = bool(os.environ.get(MULTIPROC_ENV))  # several worker processes, one sum
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "predictor_http_requests", "HTTP requests answered.", ["method", "route", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "predictor_http_request_duration_seconds",
            "Time to answer an HTTP request.",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.predictions = Counter(
            "predictor_predictions",
            "Estimates served, per model and version.",
            ["model", "version"],
            registry=self.registry,
        )
        self.observations = Counter(
            "predictor_observations", "Observations received, by outcome.", ["outcome"], registry=self.registry
        )
        self.reloads = Counter(
            "predictor_model_reloads",
            "Champion refreshes from the registry, by outcome.",
            ["outcome"],
            registry=self.registry,
        )
        self.champions = Gauge(
            "predictor_champions", "Champion models being served.", registry=self.registry, multiprocess_mode="livemax"
        )
        self.registry_up = Gauge(
            "predictor_registry_up",
            "1 when the last registry check succeeded, else 0.",
            registry=self.registry,
            multiprocess_mode="livemin",
        )
        # run time's as predictor_live_<metric>, peak memory's as predictor_live_memory_<metric>
        self.live = {
            (target, name): Gauge(
                f"predictor_live_{'' if target is Target.TIME else 'memory_'}{name}",
                f"Live {name} of served {'run-time' if target is Target.TIME else 'peak-memory'} estimates over each "
                "pair's window.",
                ["algorithm", "platform"],
                registry=self.registry,
                multiprocess_mode="livemostrecent",
            )
            for target in Target
            for name in LIVE_METRICS
        }

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route).observe(seconds)

    def count_estimates(self, estimates: Iterable[Estimate]) -> None:
        """Count estimates per model (``profile-table`` for fallbacks, ``none`` where nothing answered), and the memory
        estimates per memory model."""
        tally: Tally[tuple[str, str]] = Tally()
        for e in estimates:
            tally[(e.model_name or "none", e.model_version or "")] += 1
            if e.memory_model_name is not None:
                tally[(e.memory_model_name, e.memory_model_version or "")] += 1
        for (model, version), n in tally.items():
            self.predictions.labels(model, version).inc(n)

    def count_columns(self, columns: Iterable[EstimateColumns]) -> None:
        """Count the rows each platform's model (or fallback), and its memory model, answered in a matrix request."""
        for c in columns:
            self.predictions.labels(c.model_name or "none", c.model_version or "").inc(len(c.seconds))
            if c.memory_model_name is not None and c.memory is not None:
                self.predictions.labels(c.memory_model_name, c.memory_model_version or "").inc(
                    sum(m is not None for m in c.memory)
                )

    def set_live(self, report: LiveReport) -> None:
        """Replace the live-error gauges by ``report`` (target -> pair -> metrics; see predictor.live)."""
        for gauge in self.live.values():
            gauge.clear()
        for (target, name), gauge in self.live.items():
            for (algorithm, platform), values in report[target].items():
                gauge.labels(algorithm, platform).set(values[name])

    def exposition(self) -> bytes:
        """The text format Prometheus scrapes: this process's metrics, or every worker's summed in multiprocess mode."""
        if not self.shared:
            return generate_latest(self.registry)
        summed = CollectorRegistry()
        multiprocess.MultiProcessCollector(summed)
        return generate_latest(summed)

    def close(self) -> None:
        """Drop this process's live gauges from the sums when it stops (counters and histograms stay counted)."""
        if self.shared:
            multiprocess.mark_process_dead(os.getpid())
