"""A small Python client of the service's HTTP API, for the CLI's ``--url`` and for schedulers that embed the project.

Answers come back as domain types (:class:`~predictor.domain.AnsweredEstimate`, an estimate with its Slurm strings:
walltimes and memory sizes, as the service derives them) or plain records; an error answer
raises :class:`PredictorError` with the status and the service's detail. Connection failures are retried
(every call is safe to repeat: predictions change nothing, observations are idempotent by run id, and a
job resubmitted under its id changes nothing). The scheduler's routes have their methods too: submit jobs,
read one job or a page of the queue, report machine and job events, read the orders.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from predictor.domain import AnsweredEstimate, Measurement
from serving.settings import ApiSettings


def wait_until_ready(url: str, *, timeout: float = 180.0, process: subprocess.Popen | None = None) -> None:
    """Poll a service's readiness ``url`` until it answers 200 (a script starting ``predictor serve``, a test, a
    benchmark); fail at once if ``process``, the server, has exited, and after ``timeout`` seconds otherwise."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} before it was ready: {process.args!r}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2).status_code == 200:
                return
        time.sleep(0.1)
    raise TimeoutError(f"{url} not ready after {timeout} s")


class PredictorError(RuntimeError):
    """The service answered with an error; carries its status code and detail."""

    def __init__(self, status_code: int, detail: str) -> None:
        self.status_code, self.detail = status_code, detail
        super().__init__(f"HTTP {status_code}: {detail}")


@dataclass(frozen=True)
class RecordReport:
    """What the service did with recorded observations."""

    stored: list[str]
    duplicates: list[str]
    rejected: list[dict[str, Any]]


class PredictorClient:
    """Talks to one running service; reuses one connection pool."""

    def __init__(self, base_url: str, *, token: str | None = None, timeout: float = 10.0, retries: int = 2) -> None:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        transport = httpx.HTTPTransport(retries=retries)
        self._http = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, transport=transport)

    @classmethod
    def for_settings(cls, api: ApiSettings, **options: Any) -> PredictorClient:
        """A client of the API ``api`` describes, with its token (``PREDICTOR_API_TOKEN``, else the generated one: build
        ``api`` with :meth:`ApiSettings.of <serving.settings.ApiSettings.of>`)."""
        token = api.token.get_secret_value() if api.token else None
        return cls(api.url, token=token, **options)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> PredictorClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def predict(
        self,
        algorithm: str,
        params: dict[str, Any] | None = None,
        platforms: list[str] | None = None,
        features: dict[str, float] | None = None,
        *,
        coverage: float | None = None,
        limit_quantile: float | None = None,
        memory_limit_quantile: float | None = None,
    ) -> dict[str, AnsweredEstimate]:
        """Estimates per platform for one job: seconds, memory bytes, limits and their Slurm strings."""
        payload = _job(algorithm, params, platforms, features) | _options(
            coverage, limit_quantile, memory_limit_quantile
        )
        body = self._call("POST", "/v1/predict", payload)
        return {e["platform"]: AnsweredEstimate(**e) for e in body["estimates"]}

    def predict_batch(
        self,
        jobs: Sequence[Mapping[str, Any]],
        *,
        coverage: float | None = None,
        limit_quantile: float | None = None,
        memory_limit_quantile: float | None = None,
    ) -> list[dict[str, AnsweredEstimate] | PredictorError]:
        """Estimates for many jobs (each ``{algorithm, params?, platforms?, features?}``); a failed job gives its error."""
        options = _options(coverage, limit_quantile, memory_limit_quantile)
        body = self._call("POST", "/v1/predict/batch", {"jobs": [dict(job) for job in jobs]} | options)
        return [
            PredictorError(item["error"]["status"], item["error"]["detail"])
            if item.get("error")
            else {e["platform"]: AnsweredEstimate(**e) for e in item["estimates"]}
            for item in body["results"]
        ]

    def predict_matrix(
        self,
        algorithm: str,
        columns: Sequence[str],
        rows: Sequence[Sequence[float]],
        platforms: list[str] | None = None,
        params: dict[str, Any] | None = None,
    ) -> dict[str, dict[str, Any]]:
        """Estimates for rows of precomputed features, as columns per platform (``seconds``, ``lower``, ..., ``memory``,
        ``memory_limit``, ``memory_limit_slurm``, ...)."""
        payload = {
            "algorithm": algorithm,
            "columns": list(columns),
            "rows": [list(r) for r in rows],
            "params": params or {},
        }
        if platforms is not None:
            payload["platforms"] = platforms
        body = self._call("POST", "/v1/predict/matrix", payload)
        return {e["platform"]: e for e in body["estimates"]}

    def record(
        self, observations: Measurement | Mapping[str, Any] | Sequence[Measurement | Mapping[str, Any]]
    ) -> RecordReport:
        """Record finished runs (needs the token); runs already stored come back as duplicates, bad ones as rejected."""
        items = [observations] if isinstance(observations, (Measurement, Mapping)) else list(observations)
        payload = [o.model_dump(mode="json") if isinstance(o, Measurement) else dict(o) for o in items]
        body = self._call("POST", "/v1/observations", payload, accept=(200, 422))
        if "stored" not in body:
            raise PredictorError(422, str(body.get("detail")))
        return RecordReport(body["stored"], body["duplicates"], body["rejected"])

    def models(self) -> list[dict[str, Any]]:
        """The champion serving each (algorithm, platform), with its metrics."""
        return self._call("GET", "/v1/models")

    def planning(self) -> list[dict[str, Any]]:
        """The newest planning decision of each site and policy family, with its past and live scores."""
        return self._call("GET", "/v1/planning")

    def reload(self) -> dict[str, Any]:
        """Ask the service to check the registry's champion aliases now (needs the token)."""
        return self._call("POST", "/v1/models/reload")

    def ready(self) -> dict[str, Any]:
        """Readiness: champions loaded and where they came from."""
        return self._call("GET", "/readyz")

    def submit(self, jobs: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Submit one job or a list (each the predict request plus ``id``, ``deadline``, ``priority``, ``depends_on``, ...).

        Needs the token. Returns ``{"jobs": [...], "rejected": [...]}``: in a list, a job that cannot be taken is
        rejected alone, with its status and reason; a single job's problem raises PredictorError.
        """
        payload = dict(jobs) if isinstance(jobs, Mapping) else [dict(job) for job in jobs]
        body = self._call("POST", "/v1/jobs", payload, accept=(200, 422))
        if "jobs" not in body:
            raise PredictorError(422, str(body.get("detail")))
        return body

    def job(self, job_id: str) -> dict[str, Any]:
        """One job: status, estimates per platform, plan, runs, attempts, times, message."""
        return self._call("GET", f"/v1/jobs/{quote(job_id, safe='')}")

    def jobs(self, status: str | Sequence[str] = (), *, after: int = 0, limit: int = 100) -> dict[str, Any]:
        """A page of jobs numbered above ``after``, oldest first, in ``status`` (one or several) if given: ``{"jobs": [...], "cursor": n}``."""
        statuses = [status] if isinstance(status, str) else list(status)
        return self._call("GET", "/v1/jobs", params={"status": statuses, "after": after, "limit": limit})

    def orders(self, *, after: int = 0, limit: int = 1000, machine: str | None = None) -> dict[str, Any]:
        """Orders for the resource manager above the cursor ``after``, oldest first: ``{"orders": [...], "cursor": n}``."""
        params: dict[str, Any] = {"after": after, "limit": limit}
        if machine is not None:
            params["machine"] = machine
        return self._call("GET", "/v1/orders", params=params)

    def machine_event(
        self, machine: str, event: str, *, platform: str | None = None, slots: int = 1, healthy: Sequence[str] = ()
    ) -> list[dict[str, Any]]:
        """A machine ``gained`` (new: give its platform; back: the jobs still ``healthy`` on it) or ``lost``; the orders it caused."""
        payload: dict[str, Any] = {"event": event, "slots": slots, "healthy": list(healthy)}
        if platform is not None:
            payload["platform"] = platform
        return self._call("POST", f"/v1/machines/{quote(machine, safe='')}/events", payload)["orders"]

    def job_event(self, job_id: str, event: str, *, machine: str, reason: str = "") -> list[dict[str, Any]]:
        """A job's run on ``machine`` ``ended`` cleanly or ``failed`` (with the reason); the orders it caused."""
        payload = {"event": event, "machine": machine, "reason": reason}
        return self._call("POST", f"/v1/jobs/{quote(job_id, safe='')}/events", payload)["orders"]

    def algorithms(self) -> list[dict[str, Any]]:
        return self._call("GET", "/v1/algorithms")

    def platforms(self) -> list[dict[str, Any]]:
        return self._call("GET", "/v1/platforms")

    def _call(
        self,
        method: str,
        path: str,
        payload: Any = None,
        accept: tuple[int, ...] = (200,),
        params: dict[str, Any] | None = None,
    ) -> Any:
        """The JSON answer of one request; PredictorError for a status outside ``accept``."""
        response = self._http.request(method, path, json=payload, params=params)
        if response.status_code not in accept:
            try:
                detail = response.json().get("detail", response.text)
            except (ValueError, AttributeError):
                detail = response.text
            raise PredictorError(response.status_code, str(detail))
        return response.json()


def _job(
    algorithm: str, params: dict[str, Any] | None, platforms: list[str] | None, features: dict[str, float] | None
) -> dict[str, Any]:
    """One job's request payload, without the fields left unset."""
    job: dict[str, Any] = {"algorithm": algorithm, "params": params or {}}
    if platforms is not None:
        job["platforms"] = platforms
    if features is not None:
        job["features"] = features
    return job


def _options(
    coverage: float | None, limit_quantile: float | None, memory_limit_quantile: float | None
) -> dict[str, float]:
    """The per-call interval options that were given."""
    given = {"coverage": coverage, "limit_quantile": limit_quantile, "memory_limit_quantile": memory_limit_quantile}
    return {k: v for k, v in given.items() if v is not None}
