"""FastAPI app factory: settings in, app out; catalog, store and champions loaded once in the lifespan."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from predictor import __version__
from predictor.settings import Settings
from scheduler.settings import ProbeSettings, SchedulerSettings
from serving import docs, errors
from serving.limits import BodyLimit
from serving.metrics import ApiMetrics
from serving.routers import catalog, health, models, observations, planning, predict
from serving.routers import scheduler as scheduler_routes
from serving.routers import slurm as slurm_routes
from serving.settings import ApiSettings
from serving.state import build_state, close_state
from serving.telemetry import Telemetry, configure_logging
from slurm.settings import SlurmSettings

DESCRIPTION = """Estimated run time of a job on each platform of a heterogeneous cluster, with an interval
and a walltime limit, from the champion model of each (algorithm, platform).

Write and admin routes (`POST /v1/observations`, `POST /v1/models/reload`) need
`Authorization: Bearer <PREDICTOR_API_TOKEN>`. Every answer carries an `x-request-id` header.
Errors are JSON `{"detail": ...}` with a precise 4xx status."""

YOUNG_GC_THRESHOLD = 50_000
"""Allocations between collections of the youngest generation. A batch of 1,000 jobs makes about 13,000 objects (request
models, answers) that reference counting frees when it is answered; at Python's default of 700 the collector ran 19 times
per batch for nothing, a tenth of the batch's CPU time."""


def create_app(
    settings: Settings | None = None,
    *,
    api: ApiSettings | None = None,
    scheduling: SchedulerSettings | None = None,
    probing: ProbeSettings | None = None,
    slurm: SlurmSettings | None = None,
    scheduler: bool | None = None,
) -> FastAPI:
    """Build the API; nothing is loaded until the app starts. Each component's settings not given are read from the
    environment (the API's token: ``PREDICTOR_API_TOKEN``, else the one under the home). ``scheduler``: whether this
    process runs the scheduler (while it holds the database's lease; default ``PREDICTOR_SCHEDULER_EMBEDDED``)."""
    settings = settings or Settings()
    api = api or ApiSettings.of(settings)
    scheduling = scheduling or SchedulerSettings()
    probing = probing or ProbeSettings()
    slurm = slurm or SlurmSettings()
    metrics = ApiMetrics()
    log = configure_logging(api.log_level)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.service = await run_in_threadpool(build_state, settings, api, scheduling, probing, slurm, metrics)
        # what startup loaded (MLflow, scikit-learn, models) lives on: keep full collections from rescanning it
        gc.freeze()
        before = gc.get_threshold()
        gc.set_threshold(YOUNG_GC_THRESHOLD, *before[1:])
        status = app.state.service.watcher.status
        log.info(
            "ready", extra={"fields": {"champions": len(app.state.service.oracle.models), "source": status.source}}
        )
        yield
        await run_in_threadpool(close_state, app.state.service)
        metrics.close()
        gc.set_threshold(*before)

    app = FastAPI(
        title="Runtime predictor",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        # served from the package's files by serving.docs, never from a CDN
        docs_url=None,
        redoc_url=None,
    )
    # for the server around it (serving.server.server_options)
    app.state.api = api
    app.state.run_scheduler = scheduling.embedded if scheduler is None else scheduler
    # the LeasedScheduler once the scheduler router's lifespan starts it
    app.state.scheduler = None
    for module in (health, catalog, models, planning, predict, observations, scheduler_routes, slurm_routes):
        app.include_router(module.router)
    errors.install(app)
    docs.install(app)
    app.add_middleware(BodyLimit, max_bytes=api.max_body_bytes)
    # outermost of ours: sees every answer, 413s included
    app.add_middleware(Telemetry, metrics=metrics)
    return app
