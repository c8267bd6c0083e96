"""Commands that fill and read the measurement store: ingest, profile, sweep, export, describe, and the catalog's algorithms."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.table import Table

from cli.common import (
    PathsCommand,
    console,
    err_console,
    fail,
    load_settings,
    open_store,
    parse_duration,
    parse_pairs,
    plain,
    print_table,
    typed_params,
)

if TYPE_CHECKING:
    from predictor.domain import Measurement

commands = typer.Typer()


@commands.command(cls=PathsCommand)
def ingest(
    files: Annotated[
        list[Path],
        typer.Argument(
            metavar="FILE",
            help="CSV, Parquet, SWF or Slurm accounting files of finished runs.",
            exists=True,
            dir_okay=False,
        ),
    ],
    algorithm: Annotated[str | None, typer.Option(help="Algorithm for rows that do not name one.")] = None,
    platform: Annotated[str | None, typer.Option(help="Platform for rows that do not name one.")] = None,
    map_: Annotated[
        list[str] | None, typer.Option("--map", metavar="COLUMN=FIELD", help="Rename a column (repeatable).")
    ] = None,
    machine: Annotated[str | None, typer.Option(help="Machine for rows that do not name one.")] = None,
    file_format: Annotated[
        Literal["csv", "parquet", "swf", "sacct", "jobcomp"] | None,
        typer.Option(
            "--format",
            help="How to read the files (default: by suffix; .swf is a Standard Workload Format log; sacct: `sacct -P -X` "
            "output, jobcomp: a Slurm jobcomp/filetxt log, jobs mapped by PREDICTOR_SLURM_RULES).",
        ),
    ] = None,
    rejects_dir: Annotated[
        Path | None, typer.Option(help="Folder for rejects files (default: beside each input).")
    ] = None,
) -> None:
    """Validate and store measurements (CSV, Parquet, SWF or Slurm job logs); bad rows go to a rejects file beside the input."""
    from data.ingest import IngestError, ingest_file
    from data.swf_ingest import ingest_swf
    from predictor.catalog import load_catalog
    from slurm.ingest import Inputs, ingest_slurm
    from slurm.rules import RulesError, load_rules
    from slurm.settings import SlurmSettings

    settings = load_settings()
    catalog = load_catalog(*settings.catalog_paths)
    store = open_store(settings)
    mapping = parse_pairs(map_, "--map")
    any_rejected = False
    for path in files:
        kind = file_format or path.suffix.lower().lstrip(".")
        try:
            if kind in ("swf", "sacct", "jobcomp") and mapping:
                article = "an SWF" if kind == "swf" else f"a Slurm {kind}"
                raise IngestError(f"--map renames CSV and Parquet columns; {article} log has fixed fields")
            match kind:
                case "swf":
                    report = ingest_swf(
                        path,
                        store,
                        catalog,
                        algorithm=algorithm,
                        platform=platform,
                        machine=machine,
                        rejects_dir=rejects_dir,
                    )
                case "sacct" | "jobcomp":
                    if algorithm or platform or machine:
                        raise IngestError(
                            "Slurm jobs are mapped by PREDICTOR_SLURM_RULES and their own words, not --algorithm/--platform/--machine"
                        )
                    slurm = SlurmSettings()
                    report = ingest_slurm(
                        path,
                        store,
                        catalog,
                        load_rules(slurm.rules),
                        file_format=kind,
                        cluster=slurm.cluster,
                        rejects_dir=rejects_dir,
                        inputs=Inputs.of(settings.data_roots, slurm),
                    )
                case _:
                    report = ingest_file(
                        path,
                        store,
                        catalog,
                        algorithm=algorithm,
                        platform=platform,
                        mapping=mapping,
                        machine=machine,
                        file_format=file_format,
                        rejects_dir=rejects_dir,
                    )
        except (IngestError, RulesError) as exc:
            raise fail(str(exc)) from None
        console.print(
            f"{path}: {report.rows} rows, {report.stored} stored, {report.duplicates} already stored, "
            f"{len(report.skipped)} skipped, {len(report.rejected)} rejected"
        )
        for message, count in Counter(s.message for s in report.skipped).items():
            console.print(f"  skipped {count}: {message}")
        for reject in report.rejected[:20]:
            err_console.print(plain(f"  line {reject.line}, {reject.field}: {reject.message}"))
        if report.rejected:
            any_rejected = True
            err_console.print(f"  rejected rows written to {report.rejects_path}")
    if any_rejected:
        raise typer.Exit(code=1)


@commands.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def profile(
    ctx: typer.Context,
    algorithm: Annotated[str, typer.Option(help="Algorithm being run.")],
    platform: Annotated[str, typer.Option(help="Platform it runs on.")],
    param: Annotated[
        list[str] | None, typer.Option(metavar="NAME=VALUE", help="Job parameter (repeatable); input files too.")
    ] = None,
    launcher: Annotated[
        bool, typer.Option(help="Prefix the platform's launcher (e.g. taskset) to the command.")
    ] = True,
    run_id: Annotated[str | None, typer.Option(help="Run id (default: a new UUID).")] = None,
    timeout: Annotated[float | None, typer.Option(help="Kill the command after this many seconds.")] = None,
) -> None:
    """Run COMMAND (after --), measure it, extract its features and store the measurement."""
    from data.profile import MissingProgram, profile_command
    from features import FeatureError
    from predictor.catalog import load_catalog

    command = list(ctx.args)
    if not command:
        raise fail("give the command to run after --")
    settings = load_settings()
    catalog = load_catalog(*settings.catalog_paths)
    try:
        params = typed_params(parse_pairs(param, "--param"), algorithm, catalog)
        measurement = profile_command(
            command,
            catalog=catalog,
            algorithm=algorithm,
            platform=platform,
            params=params,
            use_launcher=launcher,
            run_id=run_id,
            timeout=timeout,
        )
    except (FeatureError, KeyError, MissingProgram) as exc:
        raise fail(str(exc).strip('"')) from None
    open_store(settings).add([measurement])
    if measurement.succeeded:
        status = "ok"
    elif measurement.censored:
        status = (
            f"STOPPED before it finished (exit {measurement.exit_status}): stored censored, its wall time a lower bound"
        )
    else:
        status = f"FAILED (exit {measurement.exit_status})"
    console.print(
        f"{measurement.run_id}: {status}, wall {measurement.wall_seconds:.3f} s, cpu {measurement.cpu_seconds:.3f} s, "
        f"max rss {measurement.max_rss_kb} KiB"
    )
    if not measurement.succeeded:
        raise typer.Exit(code=measurement.exit_status or 1)


@commands.command()
def sweep(
    plan: Annotated[Path, typer.Option(help="Sweep plan (YAML).", exists=True, dir_okay=False)],
    budget: Annotated[str | None, typer.Option(help="Stop starting runs after this long, e.g. 30m, 90s, 2h.")] = None,
    workdir: Annotated[
        Path | None, typer.Option(help="Where generated inputs go (default: HOME/sweep-inputs).")
    ] = None,
) -> None:
    """Run a parameter sweep of real programs through the profiler; each run is stored as it finishes."""
    from cli.progress import progress
    from data.profile import MissingProgram
    from data.sweep import PlanError, load_plan, run_sweep
    from features import FeatureError
    from predictor.catalog import load_catalog

    settings = load_settings()
    budget_s = parse_duration(budget, "--budget") if budget else None
    catalog = load_catalog(*settings.catalog_paths)
    try:
        sweep_plan = load_plan(plan)
        store = open_store(settings)
        with progress(console, "sweep") as update:
            runs = run_sweep(
                sweep_plan,
                catalog,
                store,
                workdir or settings.resolved_home / "sweep-inputs",
                budget_s=budget_s,
                on_run=lambda m, done, total: update(done, total, _run_label(m)),
            )
    except (PlanError, FeatureError, MissingProgram) as exc:
        raise fail(str(exc)) from None
    failed = sum(not m.succeeded for m in runs)
    console.print(f"{len(runs)} runs stored ({failed} failed)")


def _run_label(measurement: Measurement | None) -> str:
    """How the sweep's progress names a finished run (``run_sweep``'s callback may be given none)."""
    if measurement is None:
        return "no measurement"
    return f"{measurement.algorithm}@{measurement.platform} {measurement.wall_seconds:.2f}s"


@commands.command()
def export(
    out: Annotated[Path, typer.Argument(help="CSV file to write (the format `predictor ingest` reads).")],
    algorithm: Annotated[str | None, typer.Option(help="Only this algorithm.")] = None,
) -> None:
    """Write stored measurements as CSV, one column per parameter and feature."""
    from data.export import export_csv

    rows = export_csv(open_store(load_settings()), out, algorithm=algorithm)
    console.print(f"wrote {rows} measurements to {out}")


@commands.command()
def describe(
    algorithm: Annotated[str | None, typer.Option(help="Only this algorithm.")] = None,
    platform: Annotated[str | None, typer.Option(help="Only this platform.")] = None,
    plots: Annotated[
        Path | None, typer.Option(help="Save a scatter plot (PNG) of runtime against each feature here.")
    ] = None,
) -> None:
    """Per algorithm and platform: runs, runtime range and each feature's rank correlation with runtime."""
    from data.describe import describe_pairs, plot_features, summary_table

    described = 0
    for summary, frame in describe_pairs(open_store(load_settings()), algorithm, platform):
        console.print(summary_table(summary))
        if plots:
            written = plot_features(summary, frame, plots)
            console.print(f"{len(written)} plots in {written[0].parent if written else plots}")
        described += 1
    if not described:
        raise fail("no successful measurements stored" + "".join(f" for {x}" for x in (algorithm, platform) if x))


@commands.command()
def algorithms(algorithm: Annotated[str | None, typer.Option(help="Only this algorithm.")] = None) -> None:
    """The catalog's algorithms: each parameter (type, default, range, choices, the extractor of a file) and the platforms."""
    from predictor.catalog import load_catalog

    catalog = load_catalog(*load_settings().catalog_paths)
    try:
        chosen = [catalog.algorithm(algorithm)] if algorithm else list(catalog.algorithms.values())
    except KeyError as exc:
        raise fail(str(exc).strip('"')) from None
    for algo in chosen:
        table = Table(title=f"{algo.name}: {algo.description}" if algo.description else algo.name, title_justify="left")
        for column in ("parameter", "type", "required", "default", "range", "choices", "extractor"):
            table.add_column(column)
        for name, p in algo.parameters.items():
            default = "" if p.default is None else str(p.default)
            table.add_row(
                name,
                p.type,
                "yes" if p.required else "",
                default,
                _range(p.min, p.max),
                ", ".join(p.choices or ()),
                p.extractor or "",
            )
        print_table(table)
        console.print(f"platforms: {', '.join(algo.platforms)}", markup=False, highlight=False)


def _range(low: float | None, high: float | None) -> str:
    """A parameter's bounds as ``4..64``, ``>= 0`` or ``<= 9`` ('' when unbounded)."""
    if low is not None and high is not None:
        return f"{low:g}..{high:g}"
    return f">= {low:g}" if low is not None else (f"<= {high:g}" if high is not None else "")


runs_app = typer.Typer(help="Stored runs an operator sets aside.", no_args_is_help=True)
commands.add_typer(runs_app, name="runs")


@runs_app.command("set-aside")
def runs_set_aside(
    reason: Annotated[str, typer.Option(help="Why, kept beside each run (e.g. 'poisoned observations, ticket 42').")],
    run: Annotated[list[str] | None, typer.Option(metavar="RUN_ID", help="A run by its id (repeatable).")] = None,
    like: Annotated[
        str | None,
        typer.Option(metavar="RUN_ID", help="Every run of the same input as this run (features and parameters)."),
    ] = None,
    user: Annotated[str | None, typer.Option(help="The runs of this user (as accounting recorded them).")] = None,
    since: Annotated[
        str | None, typer.Option(metavar="TIME", help="Recorded at or after (ISO 8601; naive is UTC).")
    ] = None,
    until: Annotated[str | None, typer.Option(metavar="TIME", help="Recorded before (ISO 8601; naive is UTC).")] = None,
    algorithm: Annotated[str | None, typer.Option(help="Only runs of this algorithm.")] = None,
    platform: Annotated[str | None, typer.Option(help="Only runs on this platform.")] = None,
) -> None:
    """Move runs out of what training reads (into the store's measurements_set_aside, with the reason): a pair refreshed
    from poisoned runs is trained again without them by the next `predictor train`, and storing them again does nothing."""
    from predictor.records import RowError, parse_timestamp
    from predictor.store.selection import RunSelection

    try:
        selection = RunSelection(
            run_ids=frozenset(run or ()),
            like=like,
            user=user,
            since=None if since is None else parse_timestamp(since),
            until=None if until is None else parse_timestamp(until),
            algorithm=algorithm,
            platform=platform,
        )
    except RowError as exc:
        raise fail(f"--since/--until: {exc.message}") from None
    except ValueError as exc:
        raise fail(str(exc)) from None
    moved = open_store(load_settings()).set_aside_runs(selection, reason)
    if not moved:
        raise fail("no stored run matches" + (f" (is {like!r} a stored run id?)" if like else ""))
    console.print(plain(f"set aside {len(moved)} run(s): {', '.join(moved[:5])}{' ...' if len(moved) > 5 else ''}"))
