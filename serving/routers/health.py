"""Operations: liveness, readiness (with where the champions came from) and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.concurrency import run_in_threadpool

from predictor.live import live_report

from serving.deps import State
from serving.schemas import ReadyOut

router = APIRouter(tags=["operations"])


@router.get("/healthz", summary="The process is up")
async def healthz() -> dict[str, str]:
    """Answers as long as the process serves HTTP at all."""
    return {"status": "ok"}


@router.get("/readyz", response_model=ReadyOut, summary="Ready, with the champions loaded and where they came from")
async def readyz(state: State) -> ReadyOut:
    """``degraded`` when the champions come from the disk cache because the registry could not be reached."""
    status = state.watcher.status
    return ReadyOut(
        status="degraded" if status.source == "cache" else "ready",
        champions=len(state.oracle.models),
        source=status.source,
        registry_error=status.registry_error,
        last_refresh=status.last_refresh,
    )


@router.get(
    "/metrics",
    summary="Prometheus metrics",
    response_class=Response,
    responses={200: {"content": {"text/plain": {"example": "predictor_http_requests_total{...} 42.0"}}}},
)
async def metrics(state: State) -> Response:
    """Requests and latency per route, estimates per model, observations, reloads, champions, registry health, and the
    live error of each pair's served estimates (read from the store at each scrape, so every API process agrees)."""
    report = await run_in_threadpool(live_report, state.store, state.settings.live_window)
    state.metrics.set_live(report)
    return Response(state.metrics.exposition(), media_type=CONTENT_TYPE_LATEST)
