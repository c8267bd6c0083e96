"""From a request's job to an oracle job: catalog checks, paths under the data roots, features within the time budget."""

from __future__ import annotations

import time
from collections.abc import Iterable

from fastapi import HTTPException
from pydantic import TypeAdapter

from features import FeatureError
from predictor.catalog import Algorithm, Catalog
from predictor.domain import Estimate
from predictor.oracle import ResolvedJob
from predictor.paths import PathRefused, resolve_file_params, without_roots
from serving.schemas.predict import EstimateOut, PredictRequest
from serving.state import ServiceState


class JobRejected(Exception):
    """A job the service will not estimate, with the HTTP status it earns and the detail."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail

    def http(self) -> HTTPException:
        return HTTPException(self.status, self.detail)


def check_job(catalog: Catalog, algorithm: str, platforms: list[str] | None) -> Algorithm:
    """The catalog's definition of ``algorithm``, looked up once per request; JobRejected (404) for an algorithm or
    platform the catalog does not know."""
    definition = catalog.algorithms.get(algorithm)
    if definition is None:
        raise JobRejected(404, f"unknown algorithm {algorithm!r}; known: {', '.join(sorted(catalog.algorithms))}")
    unknown = [p for p in platforms or [] if p not in catalog.platforms]
    if unknown:
        raise JobRejected(
            404, f"unknown platform(s) {', '.join(unknown)}; known: {', '.join(sorted(catalog.platforms))}"
        )
    return definition


def deadline(state: ServiceState) -> float:
    """When this request's feature-extraction budget runs out (``time.monotonic`` clock)."""
    return time.monotonic() + state.api.feature_budget_s


def prepare(state: ServiceState, job: PredictRequest, until: float) -> ResolvedJob:
    """Check ``job`` against the catalog and the data roots and gather its features before ``until``; JobRejected if not."""
    definition = check_job(state.catalog, job.algorithm, job.platforms)
    params = job.params
    budget = None
    try:
        if job.features is None:
            budget = until - time.monotonic()
            if budget <= 0:
                budget_s = state.api.feature_budget_s
                raise JobRejected(
                    422, f"the feature-extraction budget of {budget_s} s for this request is spent; send features"
                )
            params = resolve_file_params(definition, params, state.settings.data_roots)
        return state.oracle.prepare(definition, params, job.platforms, job.features, budget_s=budget)
    except PathRefused as exc:
        raise JobRejected(exc.status, exc.detail) from None
    except FeatureError as exc:
        raise JobRejected(422, without_roots(str(exc), state.settings.data_roots)) from None


def estimates_out(estimates: dict[str, Estimate], job: PredictRequest) -> list[EstimateOut]:
    """Domain estimates as payloads, validated in one call, plus each asked platform that cannot run the job, with why."""
    out = _ESTIMATES_OUT.validate_python(list(estimates.values()), from_attributes=True)
    return out + unimplemented_out(job.algorithm, job.platforms, estimates)


def unimplemented_out(algorithm: str, asked: list[str] | None, answered: Iterable[str]) -> list[EstimateOut]:
    """An estimate without seconds for each platform asked about that the catalog gives no implementation of ``algorithm``."""
    return [
        EstimateOut(platform=p, seconds=None, reason=not_implemented(algorithm, p))
        for p in unimplemented(asked, answered)
    ]


def unimplemented(asked: list[str] | None, answered: Iterable[str]) -> list[str]:
    """The platforms asked about that got no answer: those the catalog gives no implementation of the algorithm."""
    answered = set(answered)
    return [p for p in dict.fromkeys(asked or []) if p not in answered]


def not_implemented(algorithm: str, platform: str) -> str:
    return f"the catalog has no implementation of {algorithm} on platform {platform}: it cannot run there"


_ESTIMATES_OUT = TypeAdapter(list[EstimateOut])
