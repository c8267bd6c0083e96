"""The ``predictor`` command: one entry point, one subcommand per job."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
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
    files: Annotated[list[Path], typer.Argument(help="CSV, Parquet or SWF files of finished runs.", exists=True, dir_okay=False)],
    algorithm: Annotated[str | None, typer.Option(help="Algorithm for rows that do not name one.")] = None,
    platform: Annotated[str | None, typer.Option(help="Platform for rows that do not name one.")] = None,
    map_: Annotated[list[str] | None, typer.Option("--map", help="Rename a column: COLUMN=FIELD (repeatable).")] = None,
    machine: Annotated[str | None, typer.Option(help="Machine for rows that do not name one.")] = None,
    file_format: Annotated[
        Literal["csv", "parquet", "swf"] | None,
        typer.Option("--format", help="How to read the files (default: by suffix; .swf is a Standard Workload Format log)."),
    ] = None,
    rejects_dir: Annotated[Path | None, typer.Option(help="Folder for rejects files (default: beside each input).")] = None,
) -> None:
    """Validate and store measurements (CSV, Parquet, or SWF job logs); bad rows go to a rejects file beside the input."""
    from predictor.catalog import load_catalog
    from predictor.ingest import IngestError, ingest_file
    from predictor.swf_ingest import ingest_swf

    settings = _settings()
    catalog = load_catalog(*settings.catalog_paths)
    store = _open_store(settings)
    mapping = _parse_pairs(map_, "--map")
    any_rejected = False
    for path in files:
        options = {"algorithm": algorithm, "platform": platform, "machine": machine, "rejects_dir": rejects_dir}
        try:
            if (file_format or path.suffix.lower().lstrip(".")) == "swf":
                if mapping:
                    raise IngestError("--map renames CSV and Parquet columns; an SWF log has fixed fields")
                report = ingest_swf(path, store, catalog, **options)
            else:
                report = ingest_file(path, store, catalog, mapping=mapping, file_format=file_format, **options)
        except IngestError as exc:
            raise _fail(str(exc)) from None
        console.print(
            f"{path}: {report.rows} rows, {report.stored} stored, {report.duplicates} already stored, "
            f"{len(report.skipped)} skipped, {len(report.rejected)} rejected"
        )
        for message, count in Counter(s.message for s in report.skipped).items():
            console.print(f"  skipped {count}: {message}")
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
    param: Annotated[list[str] | None, typer.Option(help="Job parameter NAME=VALUE (repeatable); input files too.")] = None,
    launcher: Annotated[bool, typer.Option(help="Prefix the platform's launcher (e.g. taskset) to the command.")] = True,
    run_id: Annotated[str | None, typer.Option(help="Run id (default: a new UUID).")] = None,
    timeout: Annotated[float | None, typer.Option(help="Kill the command after this many seconds.")] = None,
) -> None:
    """Run COMMAND (after --), measure it, extract its features and store the measurement."""
    from features import FeatureError
    from predictor.catalog import load_catalog
    from predictor.profile import profile_command

    command = list(ctx.args)
    if not command:
        raise _fail("give the command to run after --")
    settings = _settings()
    catalog = load_catalog(*settings.catalog_paths)
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
    budget: Annotated[str | None, typer.Option(help="Stop starting runs after this long, e.g. 30m, 90s, 2h.")] = None,
    workdir: Annotated[Path | None, typer.Option(help="Where generated inputs go (default: HOME/sweep-inputs).")] = None,
) -> None:
    """Run a parameter sweep of real programs through the profiler; each run is stored as it finishes."""
    from predictor.catalog import load_catalog
    from predictor.sweep import PlanError, load_plan, run_sweep

    settings = _settings()
    try:
        sweep_plan = load_plan(plan)
    except PlanError as exc:
        raise _fail(str(exc)) from None
    catalog = load_catalog(*settings.catalog_paths)
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
    algorithm: Annotated[list[str] | None, typer.Option(help="Only these algorithms (repeatable).")] = None,
    model: Annotated[list[str] | None, typer.Option(help="Only these zoo members (repeatable).")] = None,
) -> None:
    """Cross-validate the zoo per (algorithm, platform), track it in MLflow and promote champions."""
    from training.dataset import load_training_sets
    from training.pipeline import count_steps, train as train_sets

    settings = _settings()
    training_sets = load_training_sets(_open_store(settings), algorithm)
    total = count_steps(settings, training_sets, models=model)
    if total == 0:
        raise _fail("no measurements to train on; run `predictor ingest` first")
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console) as bar:
        task = bar.add_task("training", total=total)

        def advance(label: str) -> None:
            bar.update(task, advance=1, description=label)

        outcomes = train_sets(settings, training_sets, models=model, progress=advance)
    table = Table(title="Champions")
    for column in ("algorithm", "platform", "champion", "version", settings.selection_metric.upper()):
        table.add_column(column)
    for o in outcomes:
        table.add_row(o.algorithm, o.platform, o.champion, str(o.version), f"{o.metrics[o.champion][settings.selection_metric]:.2f}")
    console.print(table)


@app.command()
def report(
    algorithm: Annotated[str, typer.Option(help="Algorithm whose latest training session to show.")],
    platform: Annotated[str | None, typer.Option(help="Only this platform.")] = None,
) -> None:
    """Seed 001's Table 2 for the latest training session per platform, and the champion's lead over the runner-up."""
    from training.report import REPORT_METRICS, NoSession, champion_lead, latest_session

    try:
        session = latest_session(_settings(), algorithm, platform)
    except NoSession as exc:
        raise _fail(str(exc)) from None
    coverage = "" if session.nominal_coverage is None else f"; intervals of nominal coverage {session.nominal_coverage:g}"
    console.print(f"{algorithm}: training session {session.run_id}{coverage}; * = champion (by {session.selection_metric})")
    wide = Console(width=max(console.width, 150))
    for name in sorted({r.platform for r in session.rows}):
        table = Table(title=f"{algorithm} on {name}")
        for column in ("model", "target", *REPORT_METRICS.values(), "fit s"):
            table.add_column(column, justify="left" if column in ("model", "target") else "right", no_wrap=True)
        for r in (r for r in session.rows if r.platform == name):
            values = [f"{r.metrics[m]:.4g}" if m in r.metrics else "-" for m in REPORT_METRICS]
            table.add_row(("* " if r.champion else "") + r.model, r.target_transform, *values, f"{r.fit_seconds:.2f}")
        wide.print(table)
        lead = champion_lead(session, name)
        if lead is not None:
            gaps = ", ".join(
                f"{d.metric.upper()} {d.observed:+.2f} [{d.low:+.2f}, {d.high:+.2f}]" for d in lead.differences.values()
            )
            console.print(
                f"champion {lead.champion} minus runner-up {lead.runner_up}, % points with 95 % intervals "
                f"(paired bootstrap over {lead.n_jobs} jobs): {gaps}"
            )


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (default from settings).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default from settings).")] = None,
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
    uvicorn.run(create_app(settings), host=host, port=port, log_level="info", access_log=False)  # the app logs each request


@app.command()
def predict(
    algorithm: Annotated[str, typer.Option(help="Algorithm to estimate.")],
    param: Annotated[list[str] | None, typer.Option(help="Job parameter NAME=VALUE (repeatable).")] = None,
    platform: Annotated[list[str] | None, typer.Option(help="Only these platforms (repeatable).")] = None,
    url: Annotated[str | None, typer.Option(help="Ask a running service instead of loading models here.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Estimated run time of one job on each platform."""
    from features import FeatureError
    from predictor.catalog import load_catalog

    settings = _settings()
    catalog = load_catalog(*settings.catalog_paths)
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
    algorithm: Annotated[str | None, typer.Option(help="Only this algorithm.")] = None,
) -> None:
    """Write stored measurements as CSV, one column per parameter and feature."""
    from predictor.export import export_csv

    rows = export_csv(_open_store(_settings()), out, algorithm=algorithm)
    console.print(f"wrote {rows} measurements to {out}")


@app.command()
def describe(
    algorithm: Annotated[str | None, typer.Option(help="Only this algorithm.")] = None,
    platform: Annotated[str | None, typer.Option(help="Only this platform.")] = None,
    plots: Annotated[Path | None, typer.Option(help="Save a scatter plot (PNG) of runtime against each feature here.")] = None,
) -> None:
    """Per algorithm and platform: runs, runtime range and each feature's rank correlation with runtime."""
    from predictor.describe import describe_pairs, plot_features, summary_table

    described = 0
    for summary, frame in describe_pairs(_open_store(_settings()), algorithm, platform):
        console.print(summary_table(summary))
        if plots:
            written = plot_features(summary, frame, plots)
            console.print(f"{len(written)} plots in {written[0].parent if written else plots}")
        described += 1
    if not described:
        raise _fail("no successful measurements stored" + "".join(f" for {x}" for x in (algorithm, platform) if x))




@app.command()
def simulate(
    workload: Annotated[str, typer.Option(help="fig11..fig14, ncbi[:hours=25,...], dataset[:load=0.8,...], a measurements .csv or an .swf log[:limit=N,speedup=S].")],
    cluster: Annotated[str | None, typer.Option(help="ncbi[:per_type=N], ncbi-homo, catalog:N, a .machines or .yaml file (default: the workload's).")] = None,
    policy: Annotated[str, typer.Option(help="Policy, with options as NAME:key=value,... (edf, edf:objective=makespan, fcfs, ...).")] = "edf",
    estimates: Annotated[str | None, typer.Option(help="oracle | model[:MEMBER] | noisy:SIGMA | none | requested | champions (default: model when the workload has history, else oracle).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of generated workloads, noise and models.")] = 0,
    gantt: Annotated[Path | None, typer.Option(help="Gantt chart PNG (default: HOME/simulations/<workload>-<policy>-<estimates>.png).")] = None,
    chart: Annotated[bool, typer.Option(help="Draw the Gantt chart.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON.")] = False,
) -> None:
    """Replay a workload through the scheduler in a discrete-event simulation: metrics table and Gantt chart."""
    from predictor.catalog import load_catalog
    from scheduler.gantt import plot
    from scheduler.runner import load_cluster, load_workload, run

    settings = _settings()
    catalog = load_catalog(*settings.catalog_paths)
    try:
        w = load_workload(workload, catalog, seed)
        if cluster:
            w.cluster = load_cluster(cluster, catalog)
        chosen = estimates or ("model" if w.history else "oracle")
        result, metrics = run(w, policy, chosen, seed=seed, champions=lambda: _local_oracle(settings, catalog))
    except (ValueError, KeyError, FileNotFoundError) as exc:
        raise _fail(str(exc).strip('"')) from None
    if as_json:
        console.print_json(json.dumps(metrics.as_dict()))
    else:
        table = Table(title=f"{w.name} on {w.cluster.describe()}: {result.policy}, estimates {chosen}")
        table.add_column("metric")
        table.add_column("value", justify="right")
        for name, value in metrics.as_dict().items():
            table.add_row(name, f"{value:,.3f}" if isinstance(value, float) else f"{value:,}")
        table.add_row("simulation seconds", f"{result.wall_seconds:.2f}")
        console.print(table)
    if chart:
        name = f"{w.name}-{result.policy}-{chosen}".replace(":", "_").replace("/", "_")
        path = plot(result, gantt or settings.resolved_home / "simulations" / f"{name}.png")
        err_console.print(f"Gantt chart: {path}")


@app.command()
def compare(
    workload: Annotated[str, typer.Option(help="Workload spec, as for `predictor simulate`.")],
    cluster: Annotated[str | None, typer.Option(help="Cluster spec, as for `predictor simulate` (default: the workload's).")] = None,
    policies: Annotated[str | None, typer.Option(help="Comma-separated policies, each NAME[:key=value,...] (default: every policy the workload can run).")] = None,
    estimates: Annotated[str | None, typer.Option(help="Comma-separated estimate sources (default: oracle,model,noisy:0.5; model only when the workload has history).")] = None,
    seeds: Annotated[int, typer.Option(help="Seeds 0..N-1: each generates the workload, the noise and the models anew.", min=1)] = 3,
    metric: Annotated[str, typer.Option(help="Metric to plot and rank the table by.")] = "mean_completion",
    out: Annotated[Path | None, typer.Option(help="Folder for the runs CSV, the summary CSV and the plot (default: HOME/comparisons).")] = None,
    as_markdown: Annotated[bool, typer.Option("--markdown", help="Print the table as markdown.")] = False,
) -> None:
    """Every applicable policy x estimate source x seed on one workload: metrics with 95% t-intervals, CSVs and a plot."""
    from predictor.catalog import load_catalog
    from scheduler import compare as grid
    from scheduler.runner import load_cluster

    if metric not in grid.METRICS:
        raise _fail(f"unknown metric {metric!r}; known: {', '.join(grid.METRICS)}")
    settings = _settings()
    catalog = load_catalog(*settings.catalog_paths)
    try:
        machines = load_cluster(cluster, catalog) if cluster else None
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err_console) as bar:
            task = bar.add_task("compare", total=None)
            runs = grid.run_grid(
                workload, catalog, cluster=machines, seeds=seeds,
                policies=grid.split_specs(policies) if policies else None,
                estimates=grid.split_specs(estimates) if estimates else None,
                champions=lambda: _local_oracle(settings, catalog),
                progress=lambda label, done, total: bar.update(task, completed=done, total=total, description=label),
            )  # fmt: skip
    except (ValueError, KeyError, FileNotFoundError) as exc:
        raise _fail(str(exc).strip('"')) from None
    summary = grid.summarize(runs)
    header, rows = grid.table(summary, grid.table_metrics(runs, [metric]), metric)
    if as_markdown:
        console.print(grid.markdown(header, rows), markup=False, highlight=False)
    else:
        table = Table(title=f"{workload}: {seeds} seed{'s' * (seeds > 1)}, mean ± {grid.CONFIDENCE:.0%} t-interval; makespan_ratio = makespan / lower bound")
        for i, column in enumerate(header):
            table.add_column(column, justify="left" if i < 2 else "right")
        for row in rows:
            table.add_row(*row)
        console.print(table)
    for path in grid.save(runs, summary, metric, out or settings.resolved_home / "comparisons", Path(workload).name):
        err_console.print(f"wrote {path}")
