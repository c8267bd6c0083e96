"""The ``predictor`` command: one entry point, one subcommand per job."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer.core import TyperArgument, TyperCommand

from predictor import __version__
from predictor.progress import progress
from predictor.settings import Settings

if TYPE_CHECKING:
    from predictor.client import PredictorClient
    from training.report import SessionReport

T = TypeVar("T")


class _PathsCommand(TyperCommand):
    """A command whose help types a repeated path argument as ``<file>...``, where typer prints ``<list[Path]>``."""

    def get_params(self, ctx: typer.Context) -> list[Any]:
        params = super().get_params(ctx)
        for param in params:
            if isinstance(param, TyperArgument) and param.type_descriptor.is_list:
                shown = f"<{param.type_descriptor.path_type}>..."
                param.display_type_rich = lambda ctx, shown=shown: shown  # type: ignore[method-assign]
        return params


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


def _wide_console() -> Console:
    """Standard output at least 150 columns wide, for tables with many columns (a pipe would cut them at 80)."""
    return Console(width=max(console.width, 150))


def _fail(message: str) -> typer.Exit:
    err_console.print(f"[red]error:[/red] {escape(message)}")
    return typer.Exit(code=2)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"predictor {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Runtime prediction for heterogeneous clusters."""


@app.command(cls=_PathsCommand)
def ingest(
    files: Annotated[list[Path], typer.Argument(metavar="FILE", help="CSV, Parquet or SWF files of finished runs.", exists=True, dir_okay=False)],
    algorithm: Annotated[str | None, typer.Option(help="Algorithm for rows that do not name one.")] = None,
    platform: Annotated[str | None, typer.Option(help="Platform for rows that do not name one.")] = None,
    map_: Annotated[list[str] | None, typer.Option("--map", metavar="COLUMN=FIELD", help="Rename a column (repeatable).")] = None,
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
    param: Annotated[list[str] | None, typer.Option(metavar="NAME=VALUE", help="Job parameter (repeatable); input files too.")] = None,
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
    if measurement.succeeded:
        status = "ok"
    elif measurement.censored:
        status = f"STOPPED before it finished (exit {measurement.exit_status}): stored censored, its wall time a lower bound"
    else:
        status = f"FAILED (exit {measurement.exit_status})"
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
    from features import FeatureError
    from predictor.catalog import load_catalog
    from predictor.sweep import PlanError, load_plan, run_sweep

    settings = _settings()
    budget_s = _parse_duration(budget) if budget else None
    catalog = load_catalog(*settings.catalog_paths)
    try:
        sweep_plan = load_plan(plan)
        store = _open_store(settings)
        with progress(console, "sweep") as update:
            runs = run_sweep(
                sweep_plan, catalog, store, workdir or settings.resolved_home / "sweep-inputs", budget_s=budget_s,
                on_run=lambda m, done, total: update(done, total, f"{m.algorithm}@{m.platform} {m.wall_seconds:.2f}s"),
            )  # fmt: skip
    except (PlanError, FeatureError) as exc:
        raise _fail(str(exc)) from None
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
    algorithm: Annotated[list[str] | None, typer.Option(metavar="ALGORITHM", help="Only these algorithms (repeatable).")] = None,
    model: Annotated[list[str] | None, typer.Option(metavar="MODEL", help="Only these zoo members (repeatable).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Promote each pair's best candidate even if it does not beat the serving champion.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Cross-validate and judge, but register and promote nothing.")] = False,
) -> None:
    """Cross-validate the zoo per (algorithm, platform), track it in MLflow, and promote what beats the serving champion."""
    from training.dataset import load_training_sets
    from training.guard import Verdict
    from training.pipeline import count_steps, decision_row, train as train_sets

    settings = _settings()
    store = _open_store(settings)
    training_sets = load_training_sets(store, algorithm)
    total = count_steps(settings, training_sets, models=model)
    if total == 0:
        raise _fail("no measurements to train on; run `predictor ingest` first")
    with progress(console, "training", total) as update:
        steps = count(1)

        def advance(label: str) -> None:
            done = next(steps)  # the serving champions' members and the registrations add steps to the estimate
            update(done, max(done, total), label)

        outcomes = train_sets(settings, training_sets, models=model, progress=advance, force=force, dry_run=dry_run)
    if not dry_run:
        for o in outcomes:
            if o.decision.verdict is not Verdict.UNCHANGED:
                store.add_decision(decision_row(o, "predictor train --force" if force else "predictor train"))
    if force:
        err_console.print("[yellow]--force:[/yellow] the champion guard was overridden; every pair's best candidate was promoted")
    metric = settings.selection_metric
    table = Table(title="Dry run: what training would do (nothing registered)" if dry_run else "Champions")
    for column in ("algorithm", "platform", "best candidate", metric.upper(), "decision", "serving", "version"):
        table.add_column(column, no_wrap=True)
    for o in outcomes:
        table.add_row(
            o.algorithm, o.platform, o.challenger, f"{o.metrics[o.challenger].get(metric, float('nan')):.2f}", o.decision.verdict.value,
            o.serving or "-", o.version or "-",
        )  # fmt: skip
    _wide_console().print(table)
    for o in outcomes:
        console.print(f"{o.algorithm}/{o.platform} {o.decision.verdict.value}: {o.decision.reason}", markup=False, highlight=False)


@app.command()
def report(
    algorithm: Annotated[str | None, typer.Option(help="Only this algorithm (default: every trained one).")] = None,
    platform: Annotated[str | None, typer.Option(help="Only this platform.")] = None,
    live: Annotated[bool, typer.Option("--live", help="Show the live error of the served estimates instead (prequential).")] = False,
) -> None:
    """Seed 001's Table 2 for the latest training session per platform, and the champion's lead over the runner-up."""
    from training.report import NoSession, latest_session, tracked_algorithms

    settings = _settings()
    if live:
        _live_report(settings, algorithm, platform)
        return
    sessions = []
    for name in [algorithm] if algorithm else tracked_algorithms(settings):
        try:
            sessions.append(latest_session(settings, name))
        except NoSession as exc:
            if algorithm:
                raise _fail(str(exc)) from None
    if not sessions:
        raise _fail("no finished training session is tracked; run `predictor train` first")
    trained_on = sorted({r.platform for session in sessions for r in session.rows})
    if platform is not None and platform not in trained_on:
        where = f"{algorithm}'s latest training session has none" if algorithm else "no training session has any"
        raise _fail(f"unknown platform {platform!r}: {where}; trained on: {', '.join(trained_on)}")
    for session in sessions:
        if platform is None or any(r.platform == platform for r in session.rows):
            _print_session(session, platform)


def _print_session(session: SessionReport, platform: str | None) -> None:
    """One session's table per platform (only ``platform``'s, if given) and each champion's lead."""
    from training.report import REPORT_METRICS, champion_lead

    algorithm = session.algorithm
    coverage = "" if session.nominal_coverage is None else f"; intervals of nominal coverage {session.nominal_coverage:g}"
    console.print(f"{algorithm}: training session {session.run_id}{coverage}; * = champion (by {session.selection_metric})")
    wide = _wide_console()
    for name in sorted({r.platform for r in session.rows} if platform is None else {platform}):
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


def _live_report(settings: Settings, algorithm: str | None, platform: str | None) -> None:
    """Live error per pair over its latest served runs (see predictor.live)."""
    from predictor.live import live_report

    rows = {
        pair: values
        for pair, values in live_report(_open_store(settings), settings.live_window).items()
        if algorithm in (None, pair[0]) and platform in (None, pair[1])
    }
    if not rows:
        raise _fail("no served estimates recorded yet" + "".join(f" for {x}" for x in (algorithm, platform) if x))
    table = Table(title=f"Live error over each pair's latest {settings.live_window} served runs")
    for column in ("algorithm", "platform", "runs", "RAE%", "in25%", "under", "limit exceeded", "cover"):
        table.add_column(column, justify="left" if column in ("algorithm", "platform") else "right", no_wrap=True)
    for (a, p), v in sorted(rows.items()):
        cells = [f"{v[m]:.3g}" if v[m] == v[m] else "-" for m in ("rae", "within_25pct", "underestimate_rate", "limit_exceeded", "interval_coverage")]
        table.add_row(a, p, f"{int(v['runs'])}", *cells)
    _wide_console().print(table)


@app.command()
def worker(
    once: Annotated[bool, typer.Option("--once", help="One pass over the store, then exit.")] = False,
) -> None:
    """The retrain worker: retrain pairs with enough new runs or drifting live error, under the champion guard."""
    import logging

    from training.worker import run

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = _settings()

    def said(outcomes) -> None:
        for o in outcomes:
            console.print(f"{o.algorithm}/{o.platform} {o.decision.verdict.value}: {o.decision.reason}", markup=False, highlight=False)
        if once and not outcomes:
            console.print("nothing is due for training")

    run(settings, _open_store(settings), once=once, on_pass=said)


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (default from settings).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default from settings).")] = None,
) -> None:
    """Serve the HTTP API with uvicorn."""
    import uvicorn

    from serving import create_app
    from serving.server import server_options

    settings = _with_token(_settings())
    host, port = host or settings.api_host, port or settings.api_port
    typer.echo(f"serving on http://{host}:{port}  (docs: http://{host}:{port}/docs)")
    typer.echo(
        f"try: curl -s -X POST http://{host}:{port}/v1/predict -H 'content-type: application/json' "
        "-d '{\"algorithm\": \"mafft\", \"params\": {\"input\": \"samples/family-40x300.fa\"}}'"
    )
    uvicorn.run(create_app(settings), host=host, port=port, log_level="info", access_log=False, **server_options(settings))  # the app logs each request


def _with_token(settings: Settings) -> Settings:
    """``settings`` with an API token: PREDICTOR_API_TOKEN or the one under HOME, generated (and printed) on first start."""
    from pydantic import SecretStr

    from predictor.apitoken import ensure_token, token_path

    if settings.api_token is not None:
        return settings
    token, created = ensure_token(settings.resolved_home)
    if created:
        path = token_path(settings.resolved_home)
        typer.echo(f"generated the API token for write and admin endpoints, kept in {path} (owner-only); shown this once:")
        typer.echo(f"  {token}")
        typer.echo(f"send it as: -H \"Authorization: Bearer $(cat {path})\"  (PREDICTOR_API_TOKEN, if set, is used instead)")
    return settings.model_copy(update={"api_token": SecretStr(token)})


@app.command()
def predict(
    algorithm: Annotated[str, typer.Option(help="Algorithm to estimate.")],
    param: Annotated[list[str] | None, typer.Option(metavar="NAME=VALUE", help="Job parameter (repeatable).")] = None,
    platform: Annotated[list[str] | None, typer.Option(metavar="PLATFORM", help="Only these platforms (repeatable).")] = None,
    url: Annotated[str | None, typer.Option(help="Ask a running service instead of loading models here.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Estimated run time of one job on each platform: seconds, interval, walltime limit, and both as Slurm walltimes."""
    from features import FeatureError
    from predictor.catalog import load_catalog
    from predictor.walltime import optional_walltime

    settings = _settings()
    catalog = load_catalog(*settings.catalog_paths)
    try:
        params = _typed_params(_parse_pairs(param, "--param"), algorithm, catalog)
        if url:
            estimates = _from_service(url, lambda client: client.predict(algorithm, params, platform))
        else:
            estimates = _local_oracle(settings, catalog).estimate(algorithm, params, platform)
    except (FeatureError, KeyError) as exc:
        raise _fail(str(exc).strip('"')) from None
    shown = {
        p: e.model_dump() | {"walltime": optional_walltime(e.seconds), "limit_walltime": optional_walltime(e.limit)}
        for p, e in estimates.items()
    }
    if as_json:
        console.print_json(json.dumps(shown))
        return
    table = Table(title=f"{algorithm}: estimated run time (seconds; walltimes rounded up)")
    for column in ("platform", "seconds", "walltime", "lower", "upper", "limit", "limit walltime", "model"):
        table.add_column(column, justify="left" if column in ("platform", "model") else "right", no_wrap=True)
    for p, e in shown.items():
        cells = [_cell(e[k]) for k in ("seconds", "walltime", "lower", "upper", "limit", "limit_walltime")]
        model_label = f"{e['model_name']} v{e['model_version']}" if e["model_version"] else (e["model_name"] or "-")
        table.add_row(p, *cells, model_label)
    _wide_console().print(table)
    for p, e in shown.items():
        if e["reason"]:
            console.print(f"{p}: {e['reason']}", markup=False, highlight=False)


def _cell(value: float | str | None) -> str:
    """A table cell: seconds to the millisecond, a walltime as it is, '-' for none."""
    if value is None:
        return "-"
    return value if isinstance(value, str) else f"{value:.3f}"


def _from_service(url: str, ask: Callable[[PredictorClient], T]) -> T:
    """``ask`` a running service; an error answer, no answer or a foreign one is one CLI error line naming the URL."""
    import httpx

    from predictor.client import PredictorClient, PredictorError

    try:
        with PredictorClient(url) as client:
            return ask(client)
    except PredictorError as exc:
        raise _fail(f"{url} answered {exc}") from None
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise _fail(f"cannot reach {url}: {exc or type(exc).__name__}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise _fail(f"{url} did not answer like a runtime-predictor service ({type(exc).__name__}: {exc})") from None


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
        with progress(err_console, "compare") as update:
            runs = grid.run_grid(
                workload, catalog, cluster=machines, seeds=seeds,
                policies=grid.split_specs(policies) if policies else None,
                estimates=grid.split_specs(estimates) if estimates else None,
                champions=lambda: _local_oracle(settings, catalog),
                progress=lambda label, done, total: update(done, total, label),
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


@app.command()
def algorithms(algorithm: Annotated[str | None, typer.Option(help="Only this algorithm.")] = None) -> None:
    """The catalog's algorithms: each parameter (type, default, range, choices, the extractor of a file) and the platforms."""
    from predictor.catalog import load_catalog

    catalog = load_catalog(*_settings().catalog_paths)
    try:
        chosen = [catalog.algorithm(algorithm)] if algorithm else list(catalog.algorithms.values())
    except KeyError as exc:
        raise _fail(str(exc).strip('"')) from None
    wide = _wide_console()
    for algo in chosen:
        table = Table(title=f"{algo.name}: {algo.description}" if algo.description else algo.name, title_justify="left")
        for column in ("parameter", "type", "required", "default", "range", "choices", "extractor"):
            table.add_column(column)
        for name, p in algo.parameters.items():
            default = "" if p.default is None else str(p.default)
            table.add_row(name, p.type, "yes" if p.required else "", default, _range(p.min, p.max), ", ".join(p.choices or ()), p.extractor or "")
        wide.print(table)
        wide.print(f"platforms: {', '.join(algo.platforms)}", markup=False, highlight=False)


def _range(low: float | None, high: float | None) -> str:
    """A parameter's bounds as ``4..64``, ``>= 0`` or ``<= 9`` ('' when unbounded)."""
    if low is not None and high is not None:
        return f"{low:g}..{high:g}"
    return f">= {low:g}" if low is not None else (f"<= {high:g}" if high is not None else "")


models_app = typer.Typer(help="The champion models: what serves each algorithm and platform, and what training decided.", no_args_is_help=True)
app.add_typer(models_app, name="models")

MODEL_METRICS = ("rae", "rrse", "median_ape", "within_factor_2", "interval_coverage")  # shown by `models list`


@models_app.command("list")
def models_list(
    url: Annotated[str | None, typer.Option(help="Ask a running service instead of the local registry.")] = None,
) -> None:
    """Each (algorithm, platform)'s champion: registered version, zoo member and cross-validation metrics."""
    from training.report import REPORT_METRICS

    settings = _settings()
    champions = _from_service(url, lambda client: client.models()) if url else _registered_champions(settings)
    if not champions:
        err_console.print("no champions registered; `predictor train` trains and registers them")
        return
    table = Table(title=f"Champions ({'served by ' + url if url else 'registry ' + settings.resolved_tracking_uri})")
    for column in ("algorithm", "platform", "version", "member", *(REPORT_METRICS[m] for m in MODEL_METRICS)):
        table.add_column(column, justify="left" if column in ("algorithm", "platform", "member") else "right", no_wrap=True)
    for c in sorted(champions, key=lambda c: (c["algorithm"], c["platform"])):
        metrics = [f"{c['metrics'][m]:.4g}" if m in c["metrics"] else "-" for m in MODEL_METRICS]
        table.add_row(c["algorithm"], c["platform"], str(c["version"]), c.get("model_kind") or "-", *metrics)
    _wide_console().print(table)


@models_app.command("history")
def models_history(
    algorithm: Annotated[str | None, typer.Option(help="Only this algorithm.")] = None,
    platform: Annotated[str | None, typer.Option(help="Only this platform.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many decisions, newest first.", min=1)] = 50,
) -> None:
    """Every decision of the champion guard: trained, promoted, refreshed or kept, and why."""
    rows = _open_store(_settings()).decisions(algorithm, platform, limit)
    if not rows:
        raise _fail("no training decisions recorded" + "".join(f" for {x}" for x in (algorithm, platform) if x))
    table = Table(title="Champion decisions, newest first")
    for column in ("#", "when (UTC)", "algorithm", "platform", "decision", "trigger", "challenger", "incumbent", "registered", "serving", "runs"):
        table.add_column(column, no_wrap=True)
    for r in rows:
        table.add_row(
            str(r["id"]), f"{r['decided_at']:%Y-%m-%d %H:%M:%S}", r["algorithm"], r["platform"], r["decision"], r["trigger"],
            r["challenger"], r["incumbent"] or "-", r["version"] or "-", r["serving_version"] or "-", str(r["n_rows"]),
        )  # fmt: skip
    _wide_console().print(table)
    for r in rows:
        console.print(f"#{r['id']} {r['algorithm']}/{r['platform']}: {r['reason']}", markup=False, highlight=False)


def _registered_champions(settings: Settings) -> list[dict[str, Any]]:
    """Every champion in the registry, as the API's ``/v1/models`` lists them (algorithm, platform, version, member, metrics)."""
    from mlflow.exceptions import MlflowException

    from predictor.registry import cv_metrics
    from training.champions import list_champions
    from training.tracking import configure_mlflow

    try:
        configure_mlflow(settings)
        versions = list_champions()
    except MlflowException as exc:
        raise _fail(f"model registry {settings.resolved_tracking_uri} unavailable: {exc.message}") from None
    return [
        {
            "algorithm": v.tags.get("algorithm", "?"),
            "platform": v.tags.get("platform", "?"),
            "version": v.version,
            "model_kind": v.tags.get("model_kind"),
            "metrics": cv_metrics(v.tags),
        }
        for v in versions
    ]
