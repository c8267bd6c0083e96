"""A small Python client of the service's HTTP API, for the CLI's ``--url`` and for schedulers."""

from __future__ import annotations

from typing import Any

import httpx

from predictor.domain import Estimate


class PredictorError(RuntimeError):
    """The service answered with an error; carries its status code and detail."""

    def __init__(self, status_code: int, detail: str) -> None:
        self.status_code, self.detail = status_code, detail
        super().__init__(f"HTTP {status_code}: {detail}")


class PredictorClient:
    """Talks to one running service; reuses one connection pool."""

    def __init__(self, base_url: str, *, token: str | None = None, timeout: float = 10.0) -> None:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> PredictorClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _post(self, path: str, payload: dict[str, Any]) -> Any:
        response = self._http.post(path, json=payload)
        if response.is_error:
            try:
                detail = response.json().get("detail", response.text)
            except ValueError:
                detail = response.text
            raise PredictorError(response.status_code, str(detail))
        return response.json()

    def predict(
        self,
        algorithm: str,
        params: dict[str, Any] | None = None,
        platforms: list[str] | None = None,
        features: dict[str, float] | None = None,
    ) -> dict[str, Estimate]:
        """Estimates per platform for one job."""
        payload: dict[str, Any] = {"algorithm": algorithm, "params": params or {}, "platforms": platforms}
        if features is not None:
            payload["features"] = features
        body = self._post("/v1/predict", payload)
        return {e["platform"]: Estimate(**e) for e in body["estimates"]}
