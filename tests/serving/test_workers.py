"""Several API workers behind one port: each scrape of /metrics, whichever worker answers, reports the summed counts."""

from __future__ import annotations

import json
import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from predictor.settings import PROJECT_ROOT
from tests.livesrv import eventually, serve_cli
from tests.trained import TOKEN

CLIENTS = 6
REQUESTS = 10  # per client and round
ROUNDS = 5


def client_calls(base: str) -> list[str]:
    """Predictions on one keep-alive connection; the request ids' prefixes (each names its worker process)."""
    with httpx.Client(base_url=base, timeout=30) as client:
        answers = [
            client.post("/v1/predict", json={"algorithm": "mafft", "params": {"input": "f1.fa"}})
            for _ in range(REQUESTS)
        ]
    assert all(a.status_code == 200 for a in answers), [a.text for a in answers if a.status_code != 200]
    return [a.headers["x-request-id"].split("-")[0] for a in answers]


def answering(base: str) -> set[str]:
    """The workers (request-id prefixes) that answer eight health checks sent side by side on new connections."""
    with ThreadPoolExecutor(8) as pool:
        return set(
            pool.map(lambda _: httpx.get(f"{base}/healthz", timeout=30).headers["x-request-id"].split("-")[0], range(8))
        )


def predicted(scrape: str) -> float:
    """The count of answered POST /v1/predict requests in a Prometheus scrape."""
    found = re.search(
        r'predictor_http_requests_total\{method="POST",route="/v1/predict",status="200"\} ([0-9.e+]+)', scrape
    )
    return float(found.group(1)) if found else 0.0


@pytest.mark.e2e
def test_two_workers_serve_one_port_and_report_summed_metrics(trained, tmp_path):
    settings = trained.settings
    env = {
        "PREDICTOR_HOME": str(settings.home),
        "PREDICTOR_DATA_ROOTS": json.dumps([str(p) for p in settings.data_roots]),
        "PREDICTOR_API_TOKEN": TOKEN,
        "PREDICTOR_API_RELOAD_INTERVAL_S": "0",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
    }
    with serve_cli(
        env, PROJECT_ROOT, tmp_path / "serve.log", "--workers", "2", timeout=300
    ) as base:  # each worker loads the champions
        seen: set[str] = set()

        def both_up() -> bool:
            seen.update(answering(base))
            return len(seen) == 2

        assert eventually(both_up, timeout=300), (
            f"only {seen} answered"
        )  # the other worker may still be loading champions
        served: Counter[str] = Counter()
        for _ in range(ROUNDS):  # connections open side by side: the kernel hands them to either worker
            with ThreadPoolExecutor(CLIENTS) as pool:
                served.update(p for batch in pool.map(lambda _: client_calls(base), range(CLIENTS)) for p in batch)
            if len(served) == 2:
                break
        assert len(served) == 2, served  # both workers answered predictions
        total = sum(served.values())
        scraped: dict[str, float] = {}

        def each_scraped() -> bool:
            with ThreadPoolExecutor(4) as pool:
                for answer in pool.map(lambda _: httpx.get(f"{base}/metrics", timeout=30), range(4)):
                    scraped[answer.headers["x-request-id"].split("-")[0]] = predicted(answer.text)
            return len(scraped) == 2

        assert eventually(each_scraped, timeout=120), scraped
        assert scraped == dict.fromkeys(served, float(total)), (
            scraped,
            served,
        )  # each worker reports both workers' sum
        jobs = httpx.get(f"{base}/v1/jobs", timeout=30)
        assert (
            jobs.status_code == 503 and "predictor scheduler" in jobs.json()["detail"]
        )  # the workers run no scheduler
