"""The planning decisions production follows: the newest of each site and family, with its past and live scores."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from scheduler.planning import planning_decisions
from serving.deps import State
from serving.schemas.planning import PlanningOut

router = APIRouter(prefix="/v1", tags=["models"])


@router.get(
    "/planning", response_model=list[PlanningOut], summary="The planning configuration each site chose, and how it does"
)
async def planning(state: State) -> list[PlanningOut]:
    """The newest planning decision of each site and policy family (``predictor plan choose``), newest first: the
    configuration the embedded scheduler's ``planned`` backfilling and the Slurm plugin's ``time_min`` follow, its
    score on the past windows it was chosen on, and its live score on the site's jobs since, against its runner-up."""
    decisions = await run_in_threadpool(planning_decisions, state.store)
    return [PlanningOut.of(d) for d in decisions]
