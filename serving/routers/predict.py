"""Estimates: how long a job takes on each platform."""

from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException

from serving.deps import service
from serving.paths import resolve_file_params
from serving.schemas import ErrorOut, EstimateOut, PredictRequest, PredictResponse

router = APIRouter(tags=["predict"])


@router.post(
    "/predict",
    response_model=PredictResponse,
    summary="Estimated run time per platform",
    responses={403: {"model": ErrorOut}, 404: {"model": ErrorOut}, 422: {"model": ErrorOut}},
)
def predict(request: PredictRequest, state=Depends(service)) -> PredictResponse:
    """Plain ``def``: feature extraction and model calls are CPU-bound and run in the thread pool."""
    catalog = state.catalog
    if request.algorithm not in catalog.algorithms:
        raise HTTPException(404, f"unknown algorithm {request.algorithm!r}; known: {', '.join(sorted(catalog.algorithms))}")
    unknown = [p for p in request.platforms or [] if p not in catalog.platforms]
    if unknown:
        raise HTTPException(404, f"unknown platform(s) {', '.join(unknown)}; known: {', '.join(sorted(catalog.platforms))}")
    params = request.params
    if request.features is None:
        params = resolve_file_params(catalog.algorithm(request.algorithm), params, state.settings.data_roots)
    estimates = state.oracle.estimate(request.algorithm, params, request.platforms, request.features)
    return PredictResponse(
        algorithm=request.algorithm,
        estimates=[EstimateOut(**e.model_dump()) for e in estimates.values()],
    )
