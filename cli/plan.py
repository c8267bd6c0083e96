"""Commands that choose how the scheduler plans, by replaying the site's own accounting (``predictor plan choose``)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.table import Table

from cli.common import console, fail, load_settings, open_store, plain, print_table, repeat_passes

if TYPE_CHECKING:
    from predictor.store import MeasurementStore
    from simulator.plan_choice import Family, LiveScore, Serving

commands = typer.Typer()
plan_app = typer.Typer(help="Choose the planning configuration by replaying the site's past.", no_args_is_help=True)
commands.add_typer(plan_app, name="plan")


@plan_app.command("choose")
def choose_plan(
    accounting: Annotated[
        Path,
        typer.Argument(
            help="The site's accounting as an SWF log (its cluster in LOG.swf.machines).", exists=True, dir_okay=False
        ),
    ],
    family: Annotated[
        Literal["easy", "conservative", "edf"], typer.Option(help="The site's scheduling policy.")
    ] = "easy",
    objective: Annotated[
        Literal["avebsld", "mean_wait", "mean_completion"], typer.Option(help="What the site wants low.")
    ] = "avebsld",
    margin: Annotated[
        float,
        typer.Option(min=0.0, max=0.99, help="How much better (a fraction of the serving score) a candidate must be."),
    ] = 0.02,
    window: Annotated[
        float,
        typer.Option(
            min=0.01, max=0.95, help="The recent share of the log replayed; what is before it is the learner's history."
        ),
    ] = 0.25,
    windows: Annotated[
        int, typer.Option(min=1, max=10, help="Consecutive stretches the replayed share is cut into and scored on.")
    ] = 3,
    nodes: Annotated[
        Literal["pooled", "packed"], typer.Option(help="Each cluster as one pool of CPUs or as its nodes.")
    ] = "pooled",
    record: Annotated[
        bool, typer.Option(help="Record the decision in the store (listed by `predictor models history`).")
    ] = True,
    every: Annotated[
        float | None,
        typer.Option(
            min=0.01,
            help="Choose again every this many hours (the log re-read each time) until Ctrl-C; once when not given.",
        ),
    ] = None,
    live_jobs: Annotated[
        int,
        typer.Option(
            min=1,
            help="Jobs the log must have after the serving decision to score it live against its runner-up.",
        ),
    ] = 100,
) -> None:
    """Score the serving configuration on the jobs since it was chosen and revert to its runner-up if it fell behind by
    the margin; else replay the log's recent past under every planning configuration and keep the serving one unless
    another wins by the margin."""
    store = open_store(load_settings())

    def one_pass() -> None:
        _choose_once(store, accounting, family, objective, margin, window, windows, nodes, record, live_jobs)

    def passes(stop: threading.Event) -> None:
        while True:
            one_pass()
            if stop.wait(3600.0 * (every or 0)):
                return

    repeat_passes(one_pass, passes, lambda _: None, every is None, f"choosing every {every:g} h" if every else "")


def _choose_once(
    store: MeasurementStore,
    accounting: Path,
    family: Family,
    objective: str,
    margin: float,
    window: float,
    windows: int,
    nodes: Literal["pooled", "packed"],
    record: bool,
    live_jobs: int,
) -> None:
    """One pass on the log as it is now: read the serving configuration, score it live (revert if it fell behind), else
    replay, print, record."""
    from simulator.plan_choice import Serving, choose, last_submit, past_windows, site_rule

    job_class, platform = accounting.stem, f"planning:{family}"
    previous = store.decisions(job_class, platform, limit=1)
    serving = None
    if previous and isinstance(previous[0].get("details"), dict) and "config" in previous[0]["details"]:
        try:
            serving = Serving.from_details(previous[0]["details"])
        except (TypeError, ValueError, KeyError):
            console.print(
                f"the last recorded configuration of {job_class} is unreadable: starting from the site's rule"
            )
    incumbent = serving.config if serving is not None else site_rule(family)
    trigger = f"replayed {accounting.name}"
    try:
        seen = last_submit(accounting)
        live = _live(accounting, family, serving, objective, nodes, live_jobs)
        if live is not None and live.behind(margin):
            row = live.reverted_row(job_class, trigger, margin, seen)
            console.print(plain(f"reverted: {live.runner_up.label(family)} ({row['reason']})"))
            if record:
                store.add_decision(row)
            return
        past = past_windows(accounting, 1.0 - window, 1.0, windows, nodes)
        choice = choose(past, family, incumbent, objective=objective, margin=margin)
    except (ValueError, OSError) as exc:
        raise fail(str(exc)) from None
    table = Table(
        title=f"{job_class}, {family}: the best of {len(choice.scores)} planning configurations on {choice.jobs} past jobs"
    )
    for column in ("configuration", f"{objective} / serving", "per window"):
        table.add_column(column, justify="left" if column == "configuration" else "right")
    ranked = sorted(choice.scores.items(), key=lambda kv: kv[1])
    shown = ranked[:10] + [(incumbent, choice.scores[incumbent])] * (incumbent not in dict(ranked[:10]))
    for config, score in shown:
        mark = " (serving)" if config == incumbent else ""
        table.add_row(
            plain(config.label(family) + mark), f"{score:.3f}", " ".join(f"{v:.2f}" for v in choice.raw[config])
        )
    print_table(table)
    console.print(
        plain(f"{'promoted' if choice.promoted else 'kept'}: {choice.chosen.label(family)} ({choice.reason})")
    )
    if record:
        store.add_decision(choice.decision_row(job_class, trigger, seen_until=seen, serving=serving, live=live))


def _live(
    accounting: Path,
    family: Family,
    serving: Serving | None,
    objective: str,
    nodes: Literal["pooled", "packed"],
    live_jobs: int,
) -> LiveScore | None:
    """The serving configuration's live score against its runner-up on the log's jobs since it began to serve (None,
    said why, without a decision that recorded both, or with fewer than ``live_jobs`` jobs since)."""
    from simulator.plan_choice import jobs_after, live_score

    if serving is None or serving.runner_up is None or serving.since is None:
        return None
    after = jobs_after(accounting, serving.since, nodes)
    label = serving.config.label(family)
    if len(after.jobs) < live_jobs:
        console.print(
            plain(f"live: {len(after.jobs)} jobs since {label} began to serve, fewer than {live_jobs}: not scored yet")
        )
        return None
    live = live_score(after, family, serving, objective)
    console.print(
        plain(
            f"live: {label} {objective} {live.serving_value:.4g} against {live.runner_up_value:.4g} for the runner-up "
            f"({live.runner_up.label(family)}) on {live.jobs} jobs since it began to serve: {live.score:.3f}"
        )
    )
    return live
