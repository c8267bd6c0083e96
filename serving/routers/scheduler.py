"""The embedded scheduler over HTTP: submit jobs, report machine and job events, read the orders.

The scheduler service starts with the app (this router's lifespan) on the app's
store, oracle and catalog, and polls the ``sched_events`` table every second so a
resource manager may also work through the database alone. It runs only while this
process holds the database's scheduler lease (:mod:`scheduler.leader`); another
process holding it, or the app built without the scheduler (several API workers,
``PREDICTOR_SCHEDULER_EMBEDDED=false``), makes these routes answer 503 saying where
it runs. Writes need the bearer token; reads are open, like the estimates.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Path, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from scheduler.leader import LeasedScheduler
from scheduler.orders import Order
from scheduler.probe_plan import idle_prober
from scheduler.service import EventError, SchedulerService, UnknownEntity
from scheduler.specs import make_policy
from scheduler.state import ASKED_FIELDS, Job, JobStatus, job_from_plain, plain
from scheduler.store import Fence, LeaseLost, SchedulerStore
from serving.auth import require_token
from serving.deps import ServiceState, State
from serving.errors import responses
from serving.jobs import JobRejected, deadline, prepare
from serving.schemas.common import ValidationErrorOut
from serving.schemas.scheduler import (
    ID_PATTERN,
    IssuedOrderOut,
    IssuedOrdersOut,
    JobEventIn,
    JobIn,
    JobOut,
    JobPageOut,
    JobsOut,
    MachineEventIn,
    OrderOut,
    OrdersOut,
    ProbeOut,
    RejectedJobOut,
    RunOut,
)

POLL_S = 1.0
# job and order numbers are 32-bit integer columns (PostgreSQL's integer)
MAX_SEQ = 2**31 - 1
JobId = Annotated[str, Path(min_length=1, max_length=200, pattern=ID_PATTERN, description="The job's id.")]
MachineId = Annotated[str, Path(min_length=1, max_length=200, pattern=ID_PATTERN, description="The machine's id.")]


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Start the scheduler on the loaded service state (entered after the app's own lifespan) and stop it first."""
    # off, or started already (the router included twice)
    if not app.state.run_scheduler or app.state.scheduler is not None:
        yield
        return
    state: ServiceState = app.state.service
    policy = make_policy(state.scheduling.policy)
    # the prober makes the plan's inputs
    prober = await run_in_threadpool(idle_prober, state.settings, state.probing, state.store, state.catalog)

    def build(fence: Fence) -> SchedulerService:
        return SchedulerService(state.store, state.oracle, state.catalog, policy=policy, fence=fence, prober=prober)

    leased = LeasedScheduler(SchedulerStore(state.store.engine), build, ttl_s=state.scheduling.lease_s, poll_s=POLL_S)
    await run_in_threadpool(leased.start)
    app.state.scheduler = leased
    try:
        yield
    finally:
        await run_in_threadpool(leased.stop)


router = APIRouter(prefix="/v1", tags=["scheduler"], lifespan=lifespan)


def scheduler(request: Request) -> SchedulerService:
    """The scheduler service of this process; 503 saying where it runs when this process does not run it."""
    leased: LeasedScheduler | None = request.app.state.scheduler
    if leased is None:
        raise HTTPException(
            503,
            "this API process runs no scheduler (several workers or PREDICTOR_SCHEDULER_EMBEDDED=false): "
            "send scheduler calls to `predictor scheduler`",
        )
    service = leased.service
    if service is None:
        raise HTTPException(503, f"this process stands by: {leased.standing_by()}")
    return service


Scheduler = Annotated[SchedulerService, Depends(scheduler)]


@router.post(
    "/jobs",
    response_model=JobsOut,
    summary="Submit jobs (one or a list): estimated, then scheduled",
    dependencies=[Depends(require_token)],
    responses={
        **responses(400, 401, 403, 404, 413, 503),
        422: {
            "model": JobsOut | ValidationErrorOut,
            "description": "Every job of a list was rejected (the report says why), or the payload is malformed.",
        },
    },
)
async def submit(body: JobIn | list[JobIn], state: State, service: Scheduler) -> JSONResponse:
    """Input files are paths under the data roots (or give ``features``); ids already known are left as they are.

    One job: its error status when it cannot be taken. A list: each job that cannot be taken is listed under
    ``rejected`` with its reason and the others are submitted (200), or 422 when none can be.
    """
    items = body if isinstance(body, list) else [body]
    if not items:
        raise HTTPException(422, "no jobs given")
    if len(items) > state.api.max_batch:
        raise HTTPException(413, f"{len(items)} jobs are over the limit of {state.api.max_batch} per call")
    answer = await run_in_threadpool(_submit, state, service, items, isinstance(body, list))
    status = 422 if answer.rejected and not answer.jobs else 200
    return JSONResponse(answer.model_dump(mode="json"), status_code=status)


@router.get(
    "/jobs",
    response_model=JobPageOut,
    summary="The queue: jobs oldest first, by status, a page at a time",
    responses=responses(422, 503),
)
async def list_jobs(
    status: list[JobStatus] = Query(
        default_factory=list, description="Only jobs in these statuses (repeat the parameter)."
    ),
    after: int = Query(0, ge=0, le=MAX_SEQ, description="Only jobs numbered above this cursor."),
    limit: int = Query(100, ge=1, le=1000),
    *,
    service: Scheduler,
) -> JobPageOut:
    """Pending and running jobs are the queue (``?status=pending&status=running``); without ``status``, every job."""
    jobs = await run_in_threadpool(service.jobs, status, after, limit)
    return JobPageOut(jobs=[_job_out(j) for j in jobs], cursor=jobs[-1].seq if jobs else after)


@router.get(
    "/jobs/{job_id}",
    response_model=JobOut,
    summary="One job's status, estimates, plan and runs",
    responses=responses(404, 422, 503),
)
async def get_job(job_id: JobId, service: Scheduler) -> JobOut:
    job = await run_in_threadpool(service.job, job_id)
    if job is None:
        raise HTTPException(404, f"unknown job {job_id!r}")
    return _job_out(job)


@router.post(
    "/machines/{machine_id}/events",
    response_model=OrdersOut,
    summary="A machine joined, came back or was lost",
    dependencies=[Depends(require_token)],
    responses=responses(400, 401, 403, 404, 413, 422, 503),
)
async def machine_event(machine_id: MachineId, body: MachineEventIn, service: Scheduler) -> OrdersOut:
    """Answers with the orders this event caused."""
    orders = await _guarded(
        service.machine_event,
        machine_id,
        body.event,
        platform=body.platform,
        slots=body.slots,
        healthy=body.healthy,
        node_memory=body.node_memory,
    )
    return OrdersOut(orders=[_order_out(o) for o in orders])


@router.post(
    "/jobs/{job_id}/events",
    response_model=OrdersOut,
    summary="A job's run ended or failed",
    dependencies=[Depends(require_token)],
    responses=responses(400, 401, 403, 404, 413, 422, 503),
)
async def job_event(job_id: JobId, body: JobEventIn, service: Scheduler) -> OrdersOut:
    """Answers with the orders this event caused; a clean end is stored as a measurement."""
    orders = await _guarded(service.job_event, job_id, body.event, machine=body.machine, reason=body.reason)
    return OrdersOut(orders=[_order_out(o) for o in orders])


@router.get(
    "/orders",
    response_model=IssuedOrdersOut,
    summary="Orders for the resource manager, oldest first",
    responses=responses(422, 503),
)
async def orders(
    after: int = Query(0, ge=0, le=MAX_SEQ, description="Only orders with a seq above this cursor."),
    limit: int = Query(1000, ge=1, le=10_000),
    machine: str | None = Query(
        None, min_length=1, max_length=200, pattern=ID_PATTERN, description="Only orders acting on this machine."
    ),
    *,
    service: Scheduler,
) -> IssuedOrdersOut:
    rows = await run_in_threadpool(service.orders, after, limit, machine)
    out = [
        IssuedOrderOut(
            seq=r["seq"],
            issued_at=r["issued_at"],
            kind=r["kind"],
            job=r["job_id"],
            machine=r["machine_id"],
            target=r["target"],
            attempt=r["attempt"],
            requeue=r["requeue"],
            reason=r["reason"],
            probe=_probe_out(r.get("probe")),
        )
        for r in rows
    ]
    return IssuedOrdersOut(orders=out, cursor=out[-1].seq if out else after)


def _submit(state: ServiceState, service: SchedulerService, items: list[JobIn], several: bool) -> JobsOut:
    """Prepare each job (a single job's problem is its HTTP error; in a list, only that job is rejected), then submit the rest."""
    until = deadline(state)
    jobs: dict[int, Job] = {}
    rejected: dict[int, RejectedJobOut] = {}
    for index, item in enumerate(items):
        try:
            prepared = prepare(state, item, until)
        except JobRejected as exc:
            if not several:
                raise exc.http() from None
            rejected[index] = RejectedJobOut(index=index, id=item.id, status=exc.status, detail=exc.detail)
            continue
        # JobIn's fields are Job's, by name (tests/scheduler/test_job_fields.py)
        asked = item.model_dump(include=set(ASKED_FIELDS))
        jobs[index] = job_from_plain(
            asked
            | {
                "id": item.id or uuid.uuid4().hex,
                "submit": 0.0,
                "features": dict(prepared.features),
                "platforms": item.platforms or None,
            }
        )
    _reject_needers(jobs, rejected)
    try:
        submitted = service.submit(list(jobs.values())) if jobs else []
    except EventError as exc:
        raise HTTPException(422, str(exc)) from None
    except LeaseLost as exc:
        raise HTTPException(503, f"{exc}; nothing of this call was committed") from None
    return JobsOut(jobs=[_job_out(j) for j in submitted], rejected=[rejected[i] for i in sorted(rejected)])


def _reject_needers(jobs: dict[int, Job], rejected: dict[int, RejectedJobOut]) -> None:
    """Move the jobs that need a rejected job (directly or through others) from ``jobs`` to ``rejected``, saying which."""
    gone = {r.id for r in rejected.values() if r.id}
    while blocked := {i: need for i, j in jobs.items() for need in (*j.depends_on, j.stream_from) if need in gone}:
        for index, need in blocked.items():
            job = jobs.pop(index)
            rejected[index] = RejectedJobOut(
                index=index, id=job.id, status=422, detail=f"job {job.id} needs job {need}, which was rejected"
            )
            gone.add(job.id)


async def _guarded(call, *args, **kwargs) -> list[Order]:
    """Run a service call off the loop; unknown jobs or machines are 404, impossible events 422."""
    try:
        return await run_in_threadpool(call, *args, **kwargs)
    except UnknownEntity as exc:
        raise HTTPException(404, str(exc)) from None
    except EventError as exc:
        raise HTTPException(422, str(exc)) from None
    except LeaseLost as exc:
        raise HTTPException(503, f"{exc}; nothing of this call was committed") from None


def _job_out(job: Job) -> JobOut:
    """The API's view of a job: JobOut's fields are Job's, by name; its runs as RunOut's fields of each Run."""
    runs = [RunOut(**{name: getattr(r, name) for name in RunOut.model_fields}) for r in job.runs.values()]
    return JobOut(runs=runs, **plain(job, (name for name in JobOut.model_fields if name != "runs")))


def _probe_out(row: dict[str, Any] | None) -> ProbeOut | None:
    if row is None:
        return None
    return ProbeOut(
        run_id=row["probe"],
        algorithm=row["algorithm"],
        platform=row["platform"],
        params=row["params"],
        cap_s=row["cap_s"],
    )


def _order_out(order: Order) -> OrderOut:
    return OrderOut(
        kind=order.kind.value,
        job=order.job,
        machine=order.machine,
        target=order.target,
        attempt=order.attempt,
        requeue=order.requeue,
        reason=order.reason,
    )
