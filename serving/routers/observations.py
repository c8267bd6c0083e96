"""Observations: finished runs recorded through the API, validated like ``predictor ingest``, stored once by run id.

An observation without features that names input files gets theirs, read from the files under the data roots.
"""

from __future__ import annotations

from functools import partial

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from predictor.domain import Measurement, ServedEstimate
from predictor.oracle import ResolvedJob
from predictor.paths import resolve_under_roots
from predictor.records import RowError, validate_record
from serving.auth import require_token
from serving.deps import ServiceState, State
from serving.errors import responses
from serving.schemas.common import ValidationErrorOut
from serving.schemas.observations import ObservationIn, ObservationsResponse, Rejected

router = APIRouter(prefix="/v1", tags=["observations"])


@router.post(
    "/observations",
    response_model=ObservationsResponse,
    summary="Record finished runs (one or a list); idempotent by run_id",
    dependencies=[Depends(require_token)],
    responses={
        **responses(400, 401, 403, 413, 503),
        422: {
            "model": ObservationsResponse | ValidationErrorOut,
            "description": "Every observation was rejected (the report says why), or the payload is malformed.",
        },
    },
)
async def record(body: ObservationIn | list[ObservationIn], state: State) -> JSONResponse:
    """Store the valid observations in one transaction and say which were new, already stored, or rejected and why.

    200 when anything was stored or already known; 422 when every observation was rejected (the body says why).
    """
    items = body if isinstance(body, list) else [body]
    limit = state.api.max_batch
    if len(items) > limit:
        raise HTTPException(413, f"{len(items)} observations are over the limit of {limit} per call")
    if not items:
        raise HTTPException(422, "no observations given")
    report = await run_in_threadpool(_store, state, items)
    status = 422 if report.rejected and not (report.stored or report.duplicates) else 200
    return JSONResponse(report.model_dump(mode="json"), status_code=status)


def _store(state: ServiceState, items: list[ObservationIn]) -> ObservationsResponse:
    """Validate each observation like an ingested row, store the good ones with their served estimates in one transaction.

    Each run that tells a time (finished or censored) is kept beside the estimate it was served:
    the one the client says it got, else what the champion serves now for its features (it has
    not seen the run), so the live error is prequential.
    """
    good, rejected, told = [], [], []
    locate = partial(resolve_under_roots, roots=state.settings.data_roots)
    for index, item in enumerate(items):
        try:
            measurement = validate_record(
                item.model_dump(exclude_none=True, exclude={"served"}), state.catalog, source=item.source, locate=locate
            )
        except RowError as exc:
            rejected.append(Rejected(index=index, run_id=item.run_id, field=exc.field, message=exc.message))
            continue
        good.append(measurement)
        if item.served is not None:
            told.append(
                ServedEstimate(
                    run_id=measurement.run_id,
                    algorithm=measurement.algorithm,
                    platform=measurement.platform,
                    origin="client",
                    **item.served.model_dump(),
                )
            )
    result = state.store.add(good, served=told + _served_now(state, good, {s.run_id for s in told}))
    for outcome, n in (
        ("stored", len(result.stored)),
        ("duplicate", len(result.duplicates)),
        ("rejected", len(rejected)),
    ):
        state.metrics.observations.labels(outcome).inc(n)
    return ObservationsResponse(stored=result.stored, duplicates=result.duplicates, rejected=rejected)


def _served_now(state: ServiceState, runs: list[Measurement], told: set[str]) -> list[ServedEstimate]:
    """What the champions serve now for the runs the client did not say were served (one model call per pair)."""
    pending = [m for m in runs if m.informative and m.run_id not in told]
    jobs = [ResolvedJob(m.algorithm, (m.platform,), m.features) for m in pending]
    out = []
    for m, answer in zip(pending, state.oracle.estimate_jobs(jobs), strict=True):
        served = ServedEstimate.of(m.run_id, m.algorithm, answer[m.platform], origin="service")
        if served is not None:
            out.append(served)
    return out
