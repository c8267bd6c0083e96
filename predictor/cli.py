"""The ``predictor`` command: one entry point, one subcommand per job."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from predictor.settings import Settings

app = typer.Typer(help="Runtime prediction for heterogeneous clusters.", no_args_is_help=True, add_completion=False)
console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)


def _settings() -> Settings:
    return Settings()


def _parse_pairs(items: list[str] | None, what: str) -> dict[str, str]:
    """Parse repeated ``key=value`` options."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint=what)
        out[key] = value
    return out


def _typed_params(raw: dict[str, str], algorithm: str, catalog: Any) -> dict[str, Any]:
    """Convert ``--param`` strings to the types the catalog declares."""
    schema = catalog.algorithm(algorithm).parameters
    converters = {"int": int, "float": float}
    out: dict[str, Any] = {}
    for key, value in raw.items():
        kind = schema[key].type if key in schema else "string"
        try:
            out[key] = converters[kind](value) if kind in converters else value
        except ValueError:
            raise typer.BadParameter(f"{key}={value!r} is not a valid {kind}", param_hint="--param") from None
    return out


def _open_store(settings: Settings):
    from predictor.store import MeasurementStore

    store = MeasurementStore(settings.resolved_store_url)
    store.migrate()
    return store


def _fail(message: str) -> typer.Exit:
    err_console.print(f"[red]error:[/red] {message}")
    return typer.Exit(code=2)


@app.command()
def ingest(
    files: Annotated[list[Path], typer.Argument(help="CSV or Parquet files of finished runs.", exists=True, dir_okay=False)],
    algorithm: Annotated[Optional[str], typer.Option(help="Algorithm for rows that do not name one.")] = None,
    platform: Annotated[Optional[str], typer.Option(help="Platform for rows that do not name one.")] = None,
    map_: Annotated[Optional[list[str]], typer.Option("--map", help="Rename a column: COLUMN=FIELD (repeatable).")] = None,
    machine: Annotated[Optional[str], typer.Option(help="Machine for rows that do not name one.")] = None,
) -> None:
    """Validate and store measurements; bad rows go to a rejects file beside the input."""
    from predictor.catalog import load_catalog
    from predictor.ingest import IngestError, ingest_file

    settings = _settings()
    catalog = load_catalog(settings.catalog_path)
    store = _open_store(settings)
    mapping = _parse_pairs(map_, "--map")
    any_rejected = False
    for path in files:
        try:
            report = ingest_file(path, store, catalog, algorithm=algorithm, platform=platform, mapping=mapping, machine=machine)
        except IngestError as exc:
            raise _fail(str(exc)) from None
        console.print(
            f"{path}: {report.rows} rows, {report.stored} stored, {report.duplicates} already stored, "
            f"{len(report.rejected)} rejected"
        )
        for reject in report.rejected[:20]:
            err_console.print(f"  line {reject.line}, {reject.field}: {reject.message}")
        if report.rejected:
            any_rejected = True
            err_console.print(f"  rejected rows written to {report.rejects_path}")
    if any_rejected:
        raise typer.Exit(code=1)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def profile(
    ctx: typer.Context,
    algorithm: Annotated[str, typer.Option(help="Algorithm being run.")],
    platform: Annotated[str, typer.Option(help="Platform it runs on.")],
    param: Annotated[Optional[list[str]], typer.Option(help="Job parameter NAME=VALUE (repeatable); input files too.")] = None,
    launcher: Annotated[bool, typer.Option(help="Prefix the platform's launcher (e.g. taskset) to the command.")] = True,
    run_id: Annotated[Optional[str], typer.Option(help="Run id (default: a new UUID).")] = None,
    timeout: Annotated[Optional[float], typer.Option(help="Kill the command after this many seconds.")] = None,
) -> None:
    """Run COMMAND (after --), measure it, extract its features and store the measurement."""
    from features import FeatureError
    from predictor.catalog import load_catalog
    from predictor.profile import profile_command

    command = list(ctx.args)
    if not command:
        raise _fail("give the command to run after --")
    settings = _settings()
    catalog = load_catalog(settings.catalog_path)
    try:
        params = _typed_params(_parse_pairs(param, "--param"), algorithm, catalog)
        measurement = profile_command(
            command, catalog=catalog, algorithm=algorithm, platform=platform, params=params,
            use_launcher=launcher, run_id=run_id, timeout=timeout,
        )
    except (FeatureError, KeyError) as exc:
        raise _fail(str(exc).strip('"')) from None
    _open_store(settings).add([measurement])
    status = "ok" if measurement.succeeded else f"FAILED (exit {measurement.exit_status})"
    console.print(
        f"{measurement.run_id}: {status}, wall {measurement.wall_seconds:.3f} s, cpu {measurement.cpu_seconds:.3f} s, "
        f"max rss {measurement.max_rss_kb} KiB"
    )
    if not measurement.succeeded:
        raise typer.Exit(code=measurement.exit_status or 1)


@app.command()
def sweep(
    plan: Annotated[Path, typer.Option(help="Sweep plan (YAML).", exists=True, dir_okay=False)],
    budget: Annotated[Optional[str], typer.Option(help="Stop starting runs after this long, e.g. 30m, 90s, 2h.")] = None,
    workdir: Annotated[Optional[Path], typer.Option(help="Where generated inputs go (default: HOME/sweep-inputs).")] = None,
) -> None:
    """Run a parameter sweep of real programs through the profiler; each run is stored as it finishes."""
    from predictor.catalog import load_catalog
    from predictor.sweep import PlanError, load_plan, run_sweep

    settings = _settings()
    try:
        sweep_plan = load_plan(plan)
    except PlanError as exc:
        raise _fail(str(exc)) from None
    catalog = load_catalog(settings.catalog_path)
    store = _open_store(settings)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console) as bar:
        task = bar.add_task("sweep", total=None)

        def advance(m, done: int, total: int) -> None:
            bar.update(task, completed=done, total=total, description=f"{m.algorithm}@{m.platform} {m.wall_seconds:.2f}s")

        runs = run_sweep(
            sweep_plan, catalog, store, workdir or settings.resolved_home / "sweep-inputs",
            budget_s=_parse_duration(budget) if budget else None, on_run=advance,
        )
    failed = sum(not m.succeeded for m in runs)
    console.print(f"{len(runs)} runs stored ({failed} failed)")


def _parse_duration(text: str) -> float:
    """Seconds in ``90s``, ``30m``, ``2h`` or a bare number of seconds."""
    units = {"s": 1, "m": 60, "h": 3600}
    try:
        if text[-1] in units:
            return float(text[:-1]) * units[text[-1]]
        return float(text)
    except (ValueError, IndexError):
        raise typer.BadParameter(f"not a duration: {text!r} (use e.g. 90s, 30m, 2h)", param_hint="--budget") from None


@app.command()
def train(
    algorithm: Annotated[Optional[list[str]], typer.Option(help="Only these algorithms (repeatable).")] = None,
    model: Annotated[Optional[list[str]], typer.Option(help="Only these zoo members (repeatable).")] = None,
) -> None:
    """Cross-validate the zoo per (algorithm, platform), track it in MLflow and promote champions."""
    from training.pipeline import count_steps, run_training

    settings = _settings()
    store = _open_store(settings)
    total = count_steps(settings, store, algorithms=algorithm, models=model)
    if total == 0:
        raise _fail("no measurements to train on; run `predictor ingest` first")
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console) as bar:
        task = bar.add_task("training", total=total)

        def advance(label: str) -> None:
            bar.update(task, advance=1, description=label)

        outcomes = run_training(settings, store, algorithms=algorithm, models=model, progress=advance)
    table = Table(title="Champions")
    for column in ("algorithm", "platform", "champion", "version", settings.selection_metric.upper()):
        table.add_column(column)
    for o in outcomes:
        table.add_row(o.algorithm, o.platform, o.champion, str(o.version), f"{o.metrics[o.champion][settings.selection_metric]:.2f}")
    console.print(table)


@app.command()
def serve(
    host: Annotated[Optional[str], typer.Option(help="Bind address (default from settings).")] = None,
    port: Annotated[Optional[int], typer.Option(help="Port (default from settings).")] = None,
) -> None:
    """Serve the HTTP API with uvicorn."""
    import uvicorn

    from serving import create_app

    settings = _settings()
    host, port = host or settings.api_host, port or settings.api_port
    typer.echo(f"serving on http://{host}:{port}  (docs: http://{host}:{port}/docs)")
    typer.echo(
        f"try: curl -s -X POST http://{host}:{port}/v1/predict -H 'content-type: application/json' "
        "-d '{\"algorithm\": \"mafft\", \"params\": {\"input\": \"samples/family-40x300.fa\"}}'"
    )
    uvicorn.run(create_app(settings), host=host, port=port, log_level="info")


@app.command()
def predict(
    algorithm: Annotated[str, typer.Option(help="Algorithm to estimate.")],
    param: Annotated[Optional[list[str]], typer.Option(help="Job parameter NAME=VALUE (repeatable).")] = None,
    platform: Annotated[Optional[list[str]], typer.Option(help="Only these platforms (repeatable).")] = None,
    url: Annotated[Optional[str], typer.Option(help="Ask a running service instead of loading models here.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Estimated run time of one job on each platform."""
    from features import FeatureError
    from predictor.catalog import load_catalog

    settings = _settings()
    catalog = load_catalog(settings.catalog_path)
    try:
        params = _typed_params(_parse_pairs(param, "--param"), algorithm, catalog)
        if url:
            from predictor.client import PredictorClient

            estimates = PredictorClient(url).predict(algorithm, params, platform)
        else:
            estimates = _local_oracle(settings, catalog).estimate(algorithm, params, platform)
    except (FeatureError, KeyError) as exc:
        raise _fail(str(exc).strip('"')) from None
    if as_json:
        console.print_json(json.dumps({p: e.model_dump() for p, e in estimates.items()}))
        return
    table = Table(title=f"{algorithm}: estimated run time")
    for column in ("platform", "seconds", "model", "note"):
        table.add_column(column)
    for p, e in estimates.items():
        seconds = "-" if e.seconds is None else f"{e.seconds:.3f}"
        model_label = f"{e.model_name} v{e.model_version}" if e.model_version else (e.model_name or "-")
        table.add_row(p, seconds, model_label, e.reason or "")
    console.print(table)


def _local_oracle(settings: Settings, catalog: Any):
    from predictor.oracle import build_oracle

    return build_oracle(catalog, settings, _open_store(settings).profile_table())


@app.command()
def export(
    out: Annotated[Path, typer.Argument(help="CSV file to write (the format `predictor ingest` reads).")],
    algorithm: Annotated[Optional[str], typer.Option(help="Only this algorithm.")] = None,
) -> None:
    """Write stored measurements as CSV, one column per parameter and feature."""
    from predictor.export import export_csv

    rows = export_csv(_open_store(_settings()), out, algorithm=algorithm)
    console.print(f"wrote {rows} measurements to {out}")


