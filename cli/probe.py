"""``predictor probe``: where the models know least (``plan``), measuring it by hand (``run``), and carrying out the
scheduler's probe orders on this host (``serve-orders``)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from cli.common import console, fail, load_settings, open_store, parse_duration, print_table, repeat_passes

if TYPE_CHECKING:
    from data.sweep import SweepPlan
    from predictor.catalog import Catalog
    from predictor.store import MeasurementStore

commands = typer.Typer(
    help="Measure where the models know least: rank candidate runs, run them within a budget.", no_args_is_help=True
)
PlanOption = Annotated[
    Path | None,
    typer.Option(
        "--plan",
        help="Sweep plan whose jobs are the candidates (default: the bundled data/plans/probe.yaml).",
        exists=True,
        dir_okay=False,
    ),
]
# data.acquisition.RULES, written out: importing it would load the model zoo for --help (tests/cli/test_probe.py keeps them equal)
RuleOption = Annotated[str, typer.Option(help="Acquisition rule: uncertainty, coverage.")]
CostOption = Annotated[
    float, typer.Option(help="Divide each value by estimated seconds to this power (0: ignore cost).", min=0)
]
WorkdirOption = Annotated[
    Path | None,
    typer.Option(help="Where generated inputs go (default: PREDICTOR_PROBE_WORKDIR, else HOME/sweep-inputs)."),
]


@contextmanager
def _probing(
    plan_file: Path | None, workdir: Path | None, rule: str
) -> Iterator[tuple[Catalog, SweepPlan, MeasurementStore, Path, Any]]:
    """The catalog, the plan (default: the bundled one), the store, the inputs' folder, the checked rule; bad ones: one error line."""
    from data.acquisition import RULES
    from data.profile import MissingProgram
    from data.sweep import PlanError, load_plan
    from features import FeatureError
    from predictor.catalog import load_catalog
    from predictor.settings import BUNDLED_DATA
    from scheduler.settings import ProbeSettings

    if rule not in RULES:
        raise typer.BadParameter(f"{rule!r} is not a rule; choose {', '.join(RULES)}", param_hint="--rule")
    settings = load_settings()
    try:
        sweep_plan = load_plan(plan_file or BUNDLED_DATA / "plans" / "probe.yaml")
        yield (
            load_catalog(*settings.catalog_paths),
            sweep_plan,
            open_store(settings),
            workdir or ProbeSettings().resolved_workdir(settings),
            rule,
        )
    except (PlanError, FeatureError, KeyError, MissingProgram) as exc:
        raise fail(str(exc).strip('"')) from None


@commands.command()
def plan(
    algorithm: Annotated[str, typer.Option(help="Algorithm to probe.")],
    platform: Annotated[str, typer.Option(help="Platform to probe.")],
    n: Annotated[int, typer.Option("-n", help="How many candidates to show.", min=1)] = 20,
    rule: RuleOption = "coverage",
    cost_weight: CostOption = 1.0,
    plan_file: PlanOption = None,
    workdir: WorkdirOption = None,
) -> None:
    """Rank the plan's candidate runs of ALGORITHM on PLATFORM by the value of measuring them, per estimated second."""
    from data.probe import candidates, rank_candidates

    with _probing(plan_file, workdir, rule) as (catalog, sweep_plan, store, inputs, checked):
        pool = candidates(sweep_plan, catalog, inputs, algorithm, platform)
        ranked = rank_candidates(pool, store, seed=sweep_plan.seed, rule=checked, n=n, cost_weight=cost_weight)
    table = Table(
        title=f"{algorithm} on {platform}: {len(ranked)} of {len(pool)} candidates, by {rule}", title_justify="left"
    )
    for column in ("rank", "score", "value", "est. s", "job"):
        table.add_column(column, justify="right" if column != "job" else "left")
    for place, item in enumerate(ranked, 1):
        params = ", ".join(
            f"{k}={Path(v).name if isinstance(v, str) and '/' in v else v}"
            for k, v in sorted(item.candidate.run.params.items())
        )
        table.add_row(str(place), f"{item.pick.score:.3g}", f"{item.pick.value:.3g}", f"{item.pick.cost_s:.3g}", params)
    print_table(table)


@commands.command()
def run(
    budget: Annotated[
        str, typer.Option(help="Seconds of probe runs to spend, e.g. 10m, 90s, 2h (the last run may overrun).")
    ],
    algorithm: Annotated[
        str | None, typer.Option(help="Only this algorithm (default: every pair of the plan, in turn).")
    ] = None,
    platform: Annotated[str | None, typer.Option(help="Only this platform.")] = None,
    cap: Annotated[str | None, typer.Option(help="Kill a probe after this long (default: the plan's timeout).")] = None,
    rule: RuleOption = "coverage",
    cost_weight: CostOption = 1.0,
    plan_file: PlanOption = None,
    workdir: WorkdirOption = None,
) -> None:
    """Run the best-ranked candidates for real through the profiler until BUDGET is spent; each is stored as it ends."""
    from cli.progress import progress
    from data.probe import pairs_of, run_probes
    from data.sweep import PlanError

    budget_s = parse_duration(budget, "--budget")
    cap_s = parse_duration(cap, "--cap") if cap else None
    with _probing(plan_file, workdir, rule) as (catalog, sweep_plan, store, inputs, checked):
        pairs = [(a, p) for a, p in pairs_of(sweep_plan) if algorithm in (None, a) and platform in (None, p)]
        if not pairs:
            raise PlanError(
                f"{plan_file or 'the bundled probe plan'}: no job of {algorithm or 'any algorithm'} on {platform or 'any platform'}"
            )
        with progress(console, "probe", int(budget_s)) as update:
            runs = run_probes(
                sweep_plan,
                catalog,
                store,
                inputs,
                budget_s=budget_s,
                rule=checked,
                cap_s=cap_s,
                pairs=pairs,
                cost_weight=cost_weight,
                on_run=lambda m, spent: update(
                    min(int(spent), int(budget_s)), int(budget_s), f"{m.algorithm}@{m.platform} {m.wall_seconds:.2f}s"
                ),
            )
    failed = sum(not m.succeeded for m in runs)
    console.print(f"{len(runs)} probes stored ({failed} failed or stopped at the cap)")


@commands.command("serve-orders")
def serve_orders(
    machine: Annotated[
        str | None, typer.Option(help="The scheduler's name of this machine (default: the host name).")
    ] = None,
    interval: Annotated[float, typer.Option(min=0.1, help="Seconds between passes.")] = 2.0,
    state: Annotated[
        Path | None, typer.Option(help="The executor's state file (default: HOME/probe-executor-MACHINE.json).")
    ] = None,
    once: Annotated[bool, typer.Option(help="One pass, then exit.")] = False,
) -> None:
    """Carry out the scheduler's probe orders for this machine: run each probe through the profiler, kill it when cancelled.

    For a site with no resource manager to do it (the Slurm bridge does it on Slurm). Each probe stores its run with
    source probe; its end goes back to the scheduler's inbox. Killed and restarted, it starts nothing twice.
    """
    from predictor.catalog import load_catalog
    from scheduler.probe_executor import LocalProbeExecutor
    from scheduler.store import SchedulerStore

    settings = load_settings()
    name = machine or socket.gethostname()
    home = settings.resolved_home
    executor = LocalProbeExecutor(
        SchedulerStore(open_store(settings).engine),
        load_catalog(*settings.catalog_paths),
        name,
        state or home / f"probe-executor-{name}.json",
        home / "probe-logs",
    )

    def report(orders: int) -> None:
        if orders:
            console.print(f"{orders} orders read, {len(executor.state.running)} probes running")

    repeat_passes(
        executor.step,
        lambda stop: executor.run(interval, stop),
        report,
        once,
        f"carrying out the probe orders of {name} every {interval:g} s",
    )
