"""Commands that replay workloads through the scheduler: simulate one run, compare policies and estimate sources."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from cli.common import console, err_console, fail, load_settings, local_oracle, print_table

commands = typer.Typer()


@commands.command()
def simulate(
    workload: Annotated[
        str,
        typer.Option(
            help="fig11..fig14, ncbi[:hours=25,...], dataset[:load=0.8,...], a measurements .csv or an .swf log[:limit=N,speedup=S,nodes=pooled|packed]."
        ),
    ],
    cluster: Annotated[
        str | None,
        typer.Option(
            help="ncbi[:per_type=N], ncbi-homo, catalog:N, a .machines or .yaml file (default: the workload's)."
        ),
    ] = None,
    policy: Annotated[
        str, typer.Option(help="Policy, with options as NAME:key=value,... (edf, edf:objective=makespan, fcfs, ...).")
    ] = "edf",
    estimates: Annotated[
        str | None,
        typer.Option(
            help="oracle | model[:MEMBER] | noisy:SIGMA | none | requested | champions (default: model when the workload has history, else oracle)."
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of generated workloads, noise and models.")] = 0,
    gantt: Annotated[
        Path | None,
        typer.Option(help="Gantt chart PNG (default: HOME/simulations/<workload>-<policy>-<estimates>.png)."),
    ] = None,
    chart: Annotated[bool, typer.Option(help="Draw the Gantt chart.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON.")] = False,
) -> None:
    """Replay a workload through the scheduler in a discrete-event simulation: metrics table and Gantt chart."""
    from predictor.catalog import load_catalog
    from scheduler import specs
    from simulator import scenarios
    from simulator.gantt import plot
    from simulator.runner import run

    settings = load_settings()
    catalog = load_catalog(*settings.catalog_paths)
    try:
        recipe, chosen_policy = scenarios.parse_workload(workload, catalog), specs.parse_policy(policy)
        machines = scenarios.parse_cluster(cluster, catalog) if cluster else None
        w = recipe.make(seed)
        if machines is not None:
            w.cluster = machines
        chosen = estimates or ("model" if w.history else "oracle")
        source = scenarios.parse_estimates(chosen, champions=partial(local_oracle, settings, catalog))
        result, metrics = run(w, chosen_policy.build(), source.oracle(w, seed), label=chosen)
    except (ValueError, KeyError, FileNotFoundError) as exc:
        raise fail(str(exc).strip('"')) from None
    if as_json:
        console.print_json(json.dumps(metrics.as_dict()))
    else:
        table = Table(title=f"{w.name} on {w.cluster.describe()}: {result.policy}, estimates {chosen}")
        table.add_column("metric")
        table.add_column("value", justify="right")
        for name, value in metrics.as_dict().items():
            table.add_row(name, f"{value:,.3f}" if isinstance(value, float) else f"{value:,}")
        table.add_row("simulation seconds", f"{result.wall_seconds:.2f}")
        print_table(table)
    if chart:
        name = f"{w.name}-{result.policy}-{chosen}".replace(":", "_").replace("/", "_")
        path = plot(result, gantt or settings.resolved_home / "simulations" / f"{name}.png")
        err_console.print(f"Gantt chart: {path}")


@commands.command()
def compare(
    workload: Annotated[str, typer.Option(help="Workload spec, as for `predictor simulate`.")],
    cluster: Annotated[
        str | None, typer.Option(help="Cluster spec, as for `predictor simulate` (default: the workload's).")
    ] = None,
    policies: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated policies, each NAME[:key=value,...] (default: every policy the workload can run)."
        ),
    ] = None,
    estimates: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated estimate sources (default: oracle,model,noisy:0.5; model only when the workload has history)."
        ),
    ] = None,
    seeds: Annotated[
        int, typer.Option(help="Seeds 0..N-1: each generates the workload, the noise and the models anew.", min=1)
    ] = 3,
    metric: Annotated[str, typer.Option(help="Metric to plot and rank the table by.")] = "mean_completion",
    out: Annotated[
        Path | None,
        typer.Option(help="Folder for the runs CSV, the summary CSV and the plot (default: HOME/comparisons)."),
    ] = None,
    as_markdown: Annotated[bool, typer.Option("--markdown", help="Print the table as markdown.")] = False,
) -> None:
    """Every applicable policy x estimate source x seed on one workload: metrics with 95% t-intervals, CSVs and a plot."""
    from cli.progress import progress
    from predictor.catalog import load_catalog
    from scheduler import specs
    from simulator import compare as grid
    from simulator import scenarios

    if metric not in grid.METRICS:
        raise fail(f"unknown metric {metric!r}; known: {', '.join(grid.METRICS)}")
    settings = load_settings()
    catalog = load_catalog(*settings.catalog_paths)
    try:
        recipe = scenarios.parse_workload(workload, catalog)
        machines = scenarios.parse_cluster(cluster, catalog) if cluster else None
        chosen_policies = {text: specs.parse_policy(text) for text in specs.split_specs(policies or "")}
        champions = partial(local_oracle, settings, catalog)  # loaded only if a source asks for it
        chosen_estimates = {
            text: scenarios.parse_estimates(text, champions) for text in specs.split_specs(estimates or "")
        }
        with progress(err_console, "compare") as update:
            runs = grid.run_grid(
                recipe,
                cluster=machines,
                seeds=seeds,
                policies=chosen_policies,
                estimates=chosen_estimates,
                progress=lambda label, done, total: update(done, total, label),
            )
    except (ValueError, KeyError, FileNotFoundError) as exc:
        raise fail(str(exc).strip('"')) from None
    summary = grid.summarize(runs)
    header, rows = grid.table(summary, grid.table_metrics(runs, [metric]), metric)
    if as_markdown:
        console.print(grid.markdown(header, rows), markup=False, highlight=False)
    else:
        table = Table(
            title=f"{workload}: {seeds} seed{'s' * (seeds > 1)}, mean ± {grid.CONFIDENCE:.0%} t-interval; makespan_ratio = makespan / lower bound"
        )
        for i, column in enumerate(header):
            table.add_column(column, justify="left" if i < 2 else "right")
        for row in rows:
            table.add_row(*row)
        print_table(table)
    for path in grid.save(runs, summary, metric, out or settings.resolved_home / "comparisons", Path(workload).name):
        err_console.print(f"wrote {path}")
