"""Commands that answer for estimates: serve the HTTP API, and predict one job here or through a service."""

from __future__ import annotations

import errno
import json
import socket
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from cli.common import (
    console,
    fail,
    from_service,
    load_settings,
    local_oracle,
    open_store,
    parse_pairs,
    plain,
    print_table,
    typed_params,
)

if TYPE_CHECKING:
    from predictor.settings import Settings
    from serving.settings import ApiSettings

commands = typer.Typer()


@commands.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (default from settings).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default from settings).", min=1, max=65535)] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="API worker processes behind the port (default from settings); "
            "with more than one, the scheduler runs as `predictor scheduler`, not here.",
        ),
    ] = None,
    train: Annotated[
        bool,
        typer.Option(
            "--train",
            help="Also run the retrain worker (`predictor worker`) beside the API, in a process of its own at lower "
            "priority, from the moment the API listens: it trains every pair without a champion (answered until then "
            "with the median of its measured runs), then retrains as the worker does; the API swaps each new champion in.",
        ),
    ] = False,
) -> None:
    """Serve the HTTP API with uvicorn (one process with the scheduler, unless PREDICTOR_SCHEDULER_EMBEDDED=false, or N
    workers), and with --train the retrain worker beside it."""
    from serving.settings import ApiSettings

    settings = load_settings()
    listen = ApiSettings.of(settings)
    host, port, workers = host or listen.host, port or listen.port, workers or listen.workers
    # before anything is said or loaded: a taken port is one error line
    sock = claim_port(host, port)
    from serving.app import create_app
    from serving.server import serve_on, serve_workers

    api = _with_token(settings)
    typer.echo(f"serving on http://{host}:{port}  (docs: http://{host}:{port}/docs)")
    typer.echo(
        f"try: curl -s -X POST http://{host}:{port}/v1/predict -H 'content-type: application/json' "
        '-d \'{"algorithm": "mafft", "params": {"input": "samples/family-40x300.fa"}}\''
    )
    from cli.background import BackgroundWorker

    worker = BackgroundWorker()
    try:
        if workers > 1:
            typer.echo(f"{workers} workers; the scheduler is not served here: run `predictor scheduler` beside them")
            # uvicorn's supervisor binds it again at once, before its workers load anything
            sock.close()
            if train:
                worker.start()
            serve_workers(settings, api, host, port, workers)
            return
        serve_on(create_app(settings, api=api), api, sock, host, port, when_started=worker.start if train else None)
    finally:
        worker.stop()


@commands.command()
def scheduler(
    host: Annotated[str | None, typer.Option(help="Bind address (default: PREDICTOR_API_HOST).")] = None,
    port: Annotated[
        int | None, typer.Option(help="Port (default: PREDICTOR_SCHEDULER_PORT).", min=1, max=65535)
    ] = None,
    standby: Annotated[
        bool,
        typer.Option(
            help="Wait while another scheduler holds the lease, and take over when it "
            "stops (--no-standby: refuse to start instead)."
        ),
    ] = True,
) -> None:
    """Run the one scheduler of the database, with its routes on their own port; a second one stands by."""
    from scheduler.settings import SchedulerSettings
    from serving.settings import ApiSettings

    settings = load_settings()
    scheduling = SchedulerSettings()
    host, port = host or ApiSettings.of(settings).host, port or scheduling.port
    # before anything is said or loaded: a taken port is one error line
    sock = claim_port(host, port)
    from scheduler.store import SchedulerStore
    from serving.app import create_app
    from serving.server import serve_on

    api = _with_token(settings)
    store = open_store(settings)
    lease = SchedulerStore(store.engine).lease()
    store.dispose()
    if lease is not None and lease["expires_at"] > time.time():
        if not standby:
            raise fail(
                f"another scheduler holds the lease of this database ({lease['holder']}); not starting (--no-standby)"
            )
        typer.echo(f"another scheduler holds the lease ({lease['holder']}): standing by to take over when it stops")
    typer.echo(f"scheduler on http://{host}:{port}  (jobs: http://{host}:{port}/v1/jobs)")
    serve_on(create_app(settings, api=api, scheduling=scheduling, scheduler=True), api, sock, host, port)


def claim_port(host: str, port: int) -> socket.socket:
    """The listening address bound now, as uvicorn would bind it, and handed to it later: a port another process holds
    is one error line before anything is printed or loaded (uvicorn binds only after the app's startup)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        why = "another process listens there" if exc.errno == errno.EADDRINUSE else exc.strerror or str(exc)
        raise fail(f"cannot serve on {host}:{port}: {why} (choose another with --port or PREDICTOR_API_PORT)") from None
    sock.set_inheritable(True)
    return sock


@commands.command()
def queue(
    every: Annotated[bool, typer.Option("--all", help="Every job the scheduler keeps, finished ones too.")] = False,
) -> None:
    """The scheduler's queue, read from its store: each waiting or running job, its plan or machine, oldest first."""
    from datetime import UTC, datetime

    from scheduler.state import JobStatus
    from scheduler.store import SchedulerStore

    store = open_store(load_settings())
    try:
        jobs = sorted(SchedulerStore(store.engine).load().jobs.values(), key=lambda j: j.seq)
    finally:
        store.dispose()
    shown = [j for j in jobs if every or j.status in (JobStatus.PENDING, JobStatus.RUNNING)]
    if not shown:
        console.print("the scheduler's queue is empty" + ("" if every else " (--all lists finished jobs too)"))
        return

    def when(seconds: float | None) -> str:
        return "-" if seconds is None else f"{datetime.fromtimestamp(seconds, UTC):%Y-%m-%d %H:%M:%S}"

    table = Table(title=f"The scheduler's {'jobs' if every else 'queue'}, oldest first (times UTC)")
    for column in (
        "#",
        "job",
        "algorithm",
        "status",
        "priority",
        "submitted",
        "machine",
        "starts / started",
        "message",
    ):
        table.add_column(column, justify="right" if column in ("#", "priority") else "left", no_wrap=True)
    for j in shown:
        machine = ", ".join(j.runs) or j.planned_machine or "-"
        start = j.started if j.status is not JobStatus.PENDING else j.planned_start
        table.add_row(
            *map(
                plain,
                (
                    j.seq,
                    j.id,
                    j.algorithm,
                    j.status.value,
                    j.priority,
                    when(j.submit),
                    machine,
                    when(start),
                    j.message or "",
                ),
            )
        )
    print_table(table)


def _with_token(settings: Settings) -> ApiSettings:
    """The API's settings with a token: PREDICTOR_API_TOKEN or the one under HOME, generated (and printed) on first start."""
    from pydantic import SecretStr

    from predictor.apitoken import ensure_token, token_path
    from serving.settings import ApiSettings

    api = ApiSettings.of(settings)
    if api.token is not None:
        return api
    token, created = ensure_token(settings.resolved_home)
    if created:
        path = token_path(settings.resolved_home)
        typer.echo(
            f"generated the API token for write and admin endpoints, kept in {path} (owner-only); shown this once:"
        )
        typer.echo(f"  {token}")
        typer.echo(
            f'send it as: -H "Authorization: Bearer $(cat {path})"  (PREDICTOR_API_TOKEN, if set, is used instead)'
        )
    return api.model_copy(update={"token": SecretStr(token)})


@commands.command()
def predict(
    algorithm: Annotated[str, typer.Option(help="Algorithm to estimate.")],
    param: Annotated[list[str] | None, typer.Option(metavar="NAME=VALUE", help="Job parameter (repeatable).")] = None,
    platform: Annotated[
        list[str] | None, typer.Option(metavar="PLATFORM", help="Only these platforms (repeatable).")
    ] = None,
    url: Annotated[str | None, typer.Option(help="Ask a running service instead of loading models here.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Estimated run time and peak memory of one job on each platform: seconds, interval, walltime limit, both as Slurm
    walltimes, and the memory and memory limit as Slurm sizes (where the pair has a memory champion)."""
    from features import FeatureError
    from predictor.catalog import load_catalog
    from predictor.domain import AnsweredEstimate, Estimate

    settings = load_settings()
    catalog = load_catalog(*settings.catalog_paths)
    estimates: Mapping[str, Estimate]
    try:
        params = typed_params(parse_pairs(param, "--param"), algorithm, catalog)
        if url:
            estimates = from_service(url, lambda client: client.predict(algorithm, params, platform))
        # the job checked and its inputs read before any model is loaded: a wrong path is said at once
        else:
            from predictor.jobfeatures import job_features

            for name in platform or []:
                catalog.platform(name)
            features = job_features(catalog.algorithm(algorithm), params)
            estimates = local_oracle(settings, catalog, [algorithm]).estimate(algorithm, params, platform, features)
    except (FeatureError, KeyError) as exc:
        raise fail(str(exc).strip('"')) from None
    shown = {p: AnsweredEstimate.model_validate(e, from_attributes=True).model_dump() for p, e in estimates.items()}
    if as_json:
        console.print_json(json.dumps(shown))
    if not any(e["seconds"] is not None for e in shown.values()):
        raise fail(
            f"no estimate of {algorithm}: " + "; ".join(f"{p}: {e['reason'] or 'none given'}" for p, e in shown.items())
        )
    if as_json:
        return
    table = Table(
        title=f"{algorithm}: estimated run time (seconds; walltimes rounded up) and peak memory (MiB, rounded up)"
    )
    for column in (
        "platform",
        "seconds",
        "walltime",
        "lower",
        "upper",
        "limit",
        "limit walltime",
        "model",
        "memory",
        "memory limit",
        "memory model",
    ):
        table.add_column(
            column, justify="left" if column in ("platform", "model", "memory model") else "right", no_wrap=True
        )
    for p, e in shown.items():
        cells = [_cell(e[k]) for k in ("seconds", "walltime", "lower", "upper", "limit", "limit_walltime")]
        memory = [_cell(e[k]) for k in ("memory_slurm", "memory_limit_slurm")]
        table.add_row(
            p,
            *cells,
            _model(e["model_name"], e["model_version"]),
            *memory,
            _model(e["memory_model_name"], e["memory_model_version"]),
        )
    print_table(table)
    for p, e in shown.items():
        if e["reason"]:
            console.print(f"{p}: {e['reason']}", markup=False, highlight=False)


def _model(name: str | None, version: str | None) -> str:
    """A model cell: its registered name and version, the fallback's name alone, or '-'."""
    return f"{name} v{version}" if version else (name or "-")


def _cell(value: float | str | None) -> str:
    """A table cell: seconds to the millisecond, a walltime as it is, '-' for none."""
    if value is None:
        return "-"
    return value if isinstance(value, str) else f"{value:.3f}"
