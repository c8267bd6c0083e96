"""The champion models: what serves each (algorithm, platform), and an explicit reload from the registry."""

from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException
from starlette.concurrency import run_in_threadpool

from predictor.domain import Target
from predictor.live import live_report
from serving.auth import require_token
from serving.deps import State
from serving.errors import responses
from serving.schemas.common import ErrorOut
from serving.schemas.models import ModelOut, ReloadResponse

router = APIRouter(prefix="/v1", tags=["models"])


@router.get("/models", response_model=list[ModelOut], summary="The champions serving each algorithm and platform")
async def models(state: State) -> list[ModelOut]:
    """Each champion (time, then peak memory where a pair has one) with its cross-validation metrics, training time,
    whether it gives intervals, and the live error of the estimates of its target its pair was served (over the latest
    ``PREDICTOR_LIVE_WINDOW`` runs; memory's over those of them served a memory estimate that measured their peak)."""
    live = await run_in_threadpool(live_report, state.store, state.settings.live_window)
    out = []
    for target, served_models in ((Target.TIME, state.oracle.models), (Target.MEMORY, state.oracle.memory_models)):
        loaded = state.watcher.loaded[target]
        for pair, served in sorted(served_models.items()):
            c = served.champion
            facts = loaded.get(pair)
            same = facts if facts is not None and facts.champion is c else None
            out.append(
                ModelOut(
                    algorithm=c.algorithm,
                    platform=c.platform,
                    target=target,
                    name=c.name,
                    version=c.version,
                    flavor=c.flavor,
                    model_kind=c.member,
                    rule=c.rule,
                    features=c.feature_names,
                    metrics=c.metrics,
                    registered_at=same.registered_at if same is not None else None,
                    fit_seconds=same.fit_seconds if same is not None else None,
                    intervals=bool(served.quantiles),
                    prediction_path=served.path,
                    origin=same.origin if same is not None else "unknown",
                    live={k: v if v == v else None for k, v in live[target][pair].items()}
                    if pair in live[target]
                    else None,
                )
            )
    return out


@router.post(
    "/models/reload",
    response_model=ReloadResponse,
    summary="Check the registry's champion aliases now and swap in what moved",
    dependencies=[Depends(require_token)],
    responses={
        **responses(401, 403),
        503: {
            "model": ErrorOut,
            "description": "The registry did not answer within PREDICTOR_API_REGISTRY_TIMEOUT_S; nothing changed.",
        },
    },
)
async def reload(state: State) -> ReloadResponse:
    """Loads new versions in a worker thread; predictions keep being answered by the current champions meanwhile.

    The registry gets ``PREDICTOR_API_REGISTRY_TIMEOUT_S`` per request (no retries); when it cannot be asked,
    the answer is a 503 saying why, and the champions served stay as they are.
    """
    refresh = await run_in_threadpool(state.watcher.refresh, state.api.registry_timeout_s)
    status = state.watcher.status
    if refresh.error is not None:
        served = f"still serving {len(state.oracle.models)} champions (from {status.source})"
        raise HTTPException(503, f"{refresh.error}; {served}", headers={"retry-after": "30"})
    return ReloadResponse(
        changed=refresh.changed,
        removed=refresh.removed,
        champions=len(state.oracle.models),
        memory_champions=len(state.oracle.memory_models),
        source=status.source,
        registry_error=status.registry_error,
    )
