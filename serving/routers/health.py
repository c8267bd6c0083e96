"""Operations: liveness, readiness (with where the champions came from) and Prometheus metrics."""

from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.concurrency import run_in_threadpool

from predictor.addresses import redact_addresses
from predictor.live import live_report
from predictor.training_status import read_status
from scheduler.service import SchedulerService
from serving.deps import ServiceState, State
from serving.schemas.health import Readiness, ReadyOut, TrainingOut

router = APIRouter(tags=["operations"])


@router.get("/healthz", summary="The process is up")
async def healthz() -> dict[str, str]:
    """Answers as long as the process serves HTTP at all."""
    return {"status": "ok"}


@router.get(
    "/readyz",
    response_model=ReadyOut,
    summary="Ready, with the champions loaded and where they came from",
    responses={
        503: {
            "model": ReadyOut,
            "description": "Not ready: champions exist but none can be served (the reasons say why).",
        }
    },
)
async def readyz(request: Request, state: State) -> JSONResponse:
    """``ready`` when all is well; ``degraded`` (still 200) with the reasons when champions come from the disk cache,
    some cannot be loaded, the registry is unreachable or the scheduler's inbox is stuck; ``not_ready`` (503) when
    champions exist but none is served."""
    leased = getattr(request.app.state, "scheduler", None)
    ready = readiness(state, leased.service if leased is not None else None)
    return JSONResponse(ready.model_dump(mode="json"), status_code=503 if ready.status == "not_ready" else 200)


def readiness(state: ServiceState, scheduler: SchedulerService | None) -> ReadyOut:
    """What /readyz says: the champions served, where from, and every reason the service is not fully ready."""
    status = state.watcher.status
    champions = len(state.oracle.models)
    reasons = [f"model registry unavailable: {status.registry_error}"] if status.registry_error else []
    if status.source == "cache":
        reasons.append("serving the champions cached on disk")
    reasons += [f"{pair}: {why}" for pair, why in sorted(status.unavailable.items())]
    # a database error may name the store's address
    if scheduler is not None and scheduler.inbox_error:
        reasons.append(f"scheduler inbox stuck: {redact_addresses(scheduler.inbox_error)}")
    verdict: Readiness = (
        "ready" if not reasons else "not_ready" if champions == 0 and status.unavailable else "degraded"
    )
    training = read_status(state.settings.resolved_home)
    return ReadyOut(
        status=verdict,
        champions=champions,
        memory_champions=len(state.oracle.memory_models),
        source=status.source,
        registry_error=status.registry_error,
        last_refresh=status.last_refresh,
        reasons=reasons,
        training=None if training.state == "none" else TrainingOut(**asdict(training), summary=training.summary()),
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
