"""Estimates: how long jobs take on each platform, one job or a batch.

Work that reads input files, and every batch, runs in the thread pool (one hop for extraction, model
calls and JSON encoding together), off the event loop. One job with precomputed features is answered on
the loop itself: it is bounded (one ~0.1 ms model call per catalog platform) and costs less than the
hand-off to a worker thread, which under load also makes the loop wait for the GIL.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException
from fastapi.responses import Response
from pydantic import TypeAdapter
from starlette.concurrency import run_in_threadpool

from features import FeatureError
from serving.batch import answer_batch
from serving.deps import ServiceState, State
from serving.errors import responses
from serving.jobs import JobRejected, check_job, deadline, estimates_out, not_implemented, prepare, unimplemented
from serving.jsonbody import FastJsonRoute
from serving.schemas.predict import (
    BatchPredictRequest,
    BatchPredictResponse,
    EstimateColumnsOut,
    MatrixPredictRequest,
    MatrixPredictResponse,
    PredictResponse,
    SinglePredictRequest,
)

router = APIRouter(prefix="/v1", tags=["predict"], route_class=FastJsonRoute)  # batch bodies decode 5x faster


@router.post(
    "/predict",
    response_model=PredictResponse,
    summary="Estimated run time per platform, with interval and walltime limit",
    responses=responses(400, 403, 404, 413, 422),
)
async def predict(request: SinglePredictRequest, state: State) -> Response:
    """One job. Input files are paths under the data roots, or give ``features`` and no file is read."""
    if request.features is not None:
        return Response(_predict_one(state, request), media_type="application/json")
    return Response(await run_in_threadpool(_predict_one, state, request), media_type="application/json")


@router.post(
    "/predict/batch",
    response_model=BatchPredictResponse,
    summary="Estimates for many jobs: alike jobs as one feature matrix, one model call per champion",
    responses=responses(400, 413, 422),
)
async def predict_batch(request: BatchPredictRequest, state: State) -> Response:
    """Up to ``PREDICTOR_API_MAX_BATCH`` jobs; a job that cannot be estimated gets its own error, the others their estimates.

    ``fields`` trims each estimate to the fields named (``platform``, ``seconds`` and the walltimes always come).
    """
    limit = state.api.max_batch
    if len(request.jobs) > limit:
        raise HTTPException(413, f"batch of {len(request.jobs)} jobs is over the limit of {limit}")
    return Response(await run_in_threadpool(answer_batch, state, request), media_type="application/json")


@router.post(
    "/predict/matrix",
    response_model=MatrixPredictResponse,
    summary="Estimates for rows of precomputed features of one algorithm, as columns",
    responses=responses(400, 404, 413, 422),
)
async def predict_matrix(request: MatrixPredictRequest, state: State) -> Response:
    """The lean batch: up to ``PREDICTOR_API_MAX_BATCH`` rows, one model call per platform, answers as one list per field."""
    limit = state.api.max_batch
    if len(request.rows) > limit:
        raise HTTPException(413, f"{len(request.rows)} rows are over the limit of {limit}")
    return Response(await run_in_threadpool(_predict_matrix, state, request), media_type="application/json")


def _predict_one(state: ServiceState, request: SinglePredictRequest) -> bytes:
    """The JSON answer for one job; a job the service refuses raises its HTTP error."""
    try:
        job = prepare(state, request, deadline(state))
    except JobRejected as exc:
        raise exc.http() from None
    estimates = state.oracle.estimate_jobs(
        [job],
        coverage=request.coverage,
        limit_quantile=request.limit_quantile,
        memory_limit_quantile=request.memory_limit_quantile,
    )[0]
    state.metrics.count_estimates(estimates.values())
    return (
        PredictResponse(algorithm=request.algorithm, estimates=estimates_out(estimates, request))
        .model_dump_json()
        .encode()
    )


def _predict_matrix(state: ServiceState, request: MatrixPredictRequest) -> bytes:
    """The JSON answer for a feature matrix, one column of answers per field and platform."""
    catalog = state.catalog
    try:
        definition = check_job(catalog, request.algorithm, request.platforms)
        columns = state.oracle.estimate_matrix(
            definition,
            request.columns,
            request.rows,
            request.platforms,
            request.params,
            coverage=request.coverage,
            limit_quantile=request.limit_quantile,
            memory_limit_quantile=request.memory_limit_quantile,
        )
    except JobRejected as exc:
        raise exc.http() from None
    except FeatureError as exc:
        raise HTTPException(422, str(exc)) from None
    state.metrics.count_columns(columns)
    out = _COLUMNS_OUT.validate_python(columns, from_attributes=True)
    out += [
        EstimateColumnsOut(platform=p, seconds=[None] * len(request.rows), reason=not_implemented(request.algorithm, p))
        for p in unimplemented(request.platforms, [c.platform for c in columns])
    ]
    return (
        MatrixPredictResponse(algorithm=request.algorithm, rows=len(request.rows), estimates=out)
        .model_dump_json()
        .encode()
    )


_COLUMNS_OUT = TypeAdapter(list[EstimateColumnsOut])
