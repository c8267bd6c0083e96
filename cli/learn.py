"""Commands of the learning loop: train, report, the retrain worker, and the champion models' list and history.

Each (algorithm, platform) has a model per target, run time and peak memory; every command says which.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from itertools import count
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from cli.common import console, err_console, fail, from_service, load_settings, open_store, plain, print_table
from predictor.target import Target

if TYPE_CHECKING:
    from predictor.catalog import Catalog
    from predictor.settings import Settings
    from serving.client import PredictorClient
    from training.pipeline import TrainingOutcome
    from training.report import SessionReport

commands = typer.Typer()
TARGET_HELP = "What the models learn: run time (seconds) or peak memory (bytes)."
# How a target is named beside a table's title (run time's tables keep the titles they had).
TITLED = {Target.TIME: "", Target.MEMORY: " (peak memory)"}


@commands.command()
def train(
    algorithm: Annotated[
        list[str] | None, typer.Option(metavar="ALGORITHM", help="Only these algorithms (repeatable).")
    ] = None,
    model: Annotated[
        list[str] | None, typer.Option(metavar="MODEL", help="Only these zoo members (repeatable).")
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Train every pair again, even one whose runs, members and settings are "
            "unchanged; the champion guard still judges what is promoted.",
        ),
    ] = False,
    promote: Annotated[
        bool,
        typer.Option(
            "--promote",
            help="Promote each pair's best candidate whatever the champion guard says "
            "(trains every pair again, as --force; recorded as forced).",
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Cross-validate and judge, but register and promote nothing.")
    ] = False,
    target: Annotated[Target, typer.Option(help=TARGET_HELP)] = Target.TIME,
) -> None:
    """Cross-validate the zoo per (algorithm, platform), track it in MLflow, and promote what beats the serving champion.

    ``--target memory`` learns each run's peak resident memory instead (runs that measured it), with a champion of its own.
    """
    from predictor.catalog import load_catalog
    from training.settings import TrainingSettings

    settings = TrainingSettings()
    store = open_store(settings)
    _check_train_choices(algorithm, model, {a for a, _ in store.pairs()}, lambda: load_catalog(*settings.catalog_paths))
    # training's libraries (MLflow, the zoo, pandas) only once the choices are sound
    from cli.progress import progress
    from training.champions import MlflowChampions
    from training.dataset import load_training_sets
    from training.guard import Verdict
    from training.live_members import refresh_live_members
    from training.pipeline import count_steps, decision_row
    from training.pipeline import train as train_sets

    training_sets = load_training_sets(store, algorithm, target=target)
    total = count_steps(settings, training_sets, models=model)
    if total == 0 and target is Target.MEMORY:
        raise fail("no runs with a peak memory (max_rss_kb) to train on; `predictor profile` or `sweep` measure it")
    if total == 0:
        raise fail("no measurements to train on; run `predictor ingest` first")
    with progress(console, "training", total) as update:
        steps = count(1)

        def advance(label: str) -> None:
            # the serving champions' members and the registrations add steps to the estimate
            done = next(steps)
            update(done, max(done, total), label)

        book = MlflowChampions(settings.resolved_tracking_uri)
        outcomes = train_sets(
            settings,
            training_sets,
            models=model,
            progress=advance,
            champions=book,
            retrain=force,
            force=promote,
            dry_run=dry_run,
            target=target,
        )
    if not dry_run:
        refresh_live_members(store, book, outcomes)
    trigger = "predictor train" + (" --promote" if promote else " --force" if force else "")
    trigger += "" if target is Target.TIME else f" --target {target.value}"
    if not dry_run:
        for o in outcomes:
            if o.decision.verdict is not Verdict.UNCHANGED:
                store.add_decision(decision_row(o, trigger))
    if promote:
        err_console.print(
            "[yellow]--promote:[/yellow] the champion guard was overridden; every pair's best candidate was promoted"
        )
    title = "Dry run: what training would do (nothing registered)" if dry_run else "Champions"
    table = Table(title=title + TITLED[target])
    for column in (
        "algorithm",
        "platform",
        "target",
        "best candidate",
        "forward score",
        "decision",
        "serving",
        "version",
    ):
        table.add_column(column, no_wrap=True)
    for o in outcomes:
        table.add_row(
            o.algorithm,
            o.platform,
            o.target.value,
            o.challenger,
            f"{o.metric.upper()} {o.metrics[o.challenger].get(o.metric, float('nan')):.2f}",
            o.decision.verdict.value,
            o.serving or "-",
            o.version or "-",
        )
    print_table(table)
    for o in outcomes:
        console.print(f"{_pair(o)} {o.decision.verdict.value}: {o.decision.reason}", markup=False, highlight=False)


def _pair(outcome: TrainingOutcome) -> str:
    """``algorithm/platform`` of an outcome, and its target unless run time (whose lines read as before there were targets)."""
    said = f"{outcome.algorithm}/{outcome.platform}"
    return said if outcome.target is Target.TIME else f"{said} {outcome.target.value}"


def _check_train_choices(
    algorithms: list[str] | None, models: list[str] | None, stored: set[str], catalog: Callable[[], Catalog]
) -> None:
    """Refuse, as one error line, an algorithm the catalog lacks or the store has no run of, and a zoo member that does not
    exist; the zoo (torch, LightGBM) is imported only when members are named."""
    for name in algorithms or []:
        if name not in stored:
            try:
                catalog().algorithm(name)
            except KeyError as exc:
                raise fail(str(exc).strip('"')) from None
            raise fail(f"no runs of {name} are stored; `predictor ingest`, `profile` or `sweep` store some first")
    if models:
        from models import available_models

        known = available_models()
        for name in models:
            if name not in known:
                raise fail(f"unknown model {name!r}; known: {', '.join(known)}")


@commands.command()
def report(
    algorithm: Annotated[str | None, typer.Option(help="Only this algorithm (default: every trained one).")] = None,
    platform: Annotated[str | None, typer.Option(help="Only this platform.")] = None,
    live: Annotated[
        bool, typer.Option("--live", help="Show the live error of the served estimates instead (prequential).")
    ] = False,
    target: Annotated[Target | None, typer.Option(help="Only this target (default: run time and peak memory).")] = None,
) -> None:
    """Table 2 of Brandstätter-Müller et al. (2011) for the latest training session per platform and target, and the
    champion's lead over the runner-up.

    The paper: "Improving job scheduling on a heterogeneous cluster by predicting job execution times using heuristics".
    """
    from training.report import NoSession, latest_session, tracked_algorithms
    from training.settings import TrainingSettings

    settings = TrainingSettings()
    if live:
        _live_report(settings, algorithm, platform, target)
        return
    sessions, missing = [], []
    for each in [target] if target else list(Target):
        for name in [algorithm] if algorithm else tracked_algorithms(settings, each):
            try:
                sessions.append(latest_session(settings, name, target=each))
            except NoSession as exc:
                missing.append(str(exc))
    if not sessions:
        raise fail(missing[0] if algorithm else "no finished training session is tracked; run `predictor train` first")
    trained_on = sorted({r.platform for session in sessions for r in session.rows})
    if platform is not None and platform not in trained_on:
        from predictor.catalog import load_catalog

        try:
            load_catalog(*settings.catalog_paths).platform(platform)
        except KeyError as exc:
            raise fail(f"{str(exc).strip(chr(34))}; trained on: {', '.join(trained_on)}") from None
        latest = f"{algorithm}'s latest training session" if algorithm else "no latest training session"
        raise fail(
            f"{latest} trained nothing on {platform} (unchanged or no runs there: `predictor models list` shows what serves it; "
            f"`predictor train --force` trains it again); the latest sessions trained: {', '.join(trained_on)}"
        )
    for session in sessions:
        if platform is None or any(r.platform == platform for r in session.rows):
            _print_session(session, platform)


def _print_session(session: SessionReport, platform: str | None) -> None:
    """One session's table per platform (only ``platform``'s, if given) and each champion's lead."""
    from training.report import REPORT_METRICS, champion_lead

    algorithm, target = session.algorithm, session.target
    coverage = (
        "" if session.nominal_coverage is None else f"; intervals of nominal coverage {session.nominal_coverage:g}"
    )
    learns = "run time (seconds)" if target is Target.TIME else "peak memory (bytes)"
    console.print(
        f"{algorithm}: training session {session.run_id} of {learns}{coverage}; * = champion (by {session.selection_metric})"
    )
    for name in sorted({r.platform for r in session.rows} if platform is None else {platform}):
        table = Table(title=f"{algorithm} on {name}{TITLED[target]}")
        for column in ("model", "target", *REPORT_METRICS.values(), "fit s"):
            table.add_column(column, justify="left" if column in ("model", "target") else "right", no_wrap=True)
        for r in (r for r in session.rows if r.platform == name):
            values = [f"{r.metrics[m]:.4g}" if m in r.metrics else "-" for m in REPORT_METRICS]
            table.add_row(
                ("* " if r.champion else "") + r.model,
                f"{target.value}, {r.target_transform}",
                *values,
                f"{r.fit_seconds:.2f}",
            )
        print_table(table)
        lead = champion_lead(session, name)
        if lead is not None:
            gaps = ", ".join(
                f"{d.metric.upper()} {d.observed:+.2f} [{d.low:+.2f}, {d.high:+.2f}]" for d in lead.differences.values()
            )
            console.print(
                f"champion {lead.champion} minus runner-up {lead.runner_up}, % points with 95 % intervals "
                f"(paired bootstrap over {lead.n_jobs} jobs): {gaps}"
            )


def _live_report(settings: Settings, algorithm: str | None, platform: str | None, target: Target | None) -> None:
    """Live error per pair and target over its latest served runs (see predictor.live): run time's, and peak memory's
    where runs were served a memory estimate and measured their peak."""
    from predictor.live import live_report

    report = live_report(open_store(settings), settings.live_window)
    rows = {
        (a, p, each): values
        for each in ([target] if target else list(Target))
        for (a, p), values in report[each].items()
        if algorithm in (None, a) and platform in (None, p)
    }
    if not rows:
        raise fail(
            "no served estimates recorded yet"
            + "".join(f" for {x}" for x in (algorithm, platform, target and target.value) if x)
        )
    table = Table(title=f"Live error over each pair's latest {settings.live_window} served runs")
    for column in ("algorithm", "platform", "target", "runs", "RAE%", "in25%", "under", "limit exceeded", "cover"):
        table.add_column(
            column, justify="left" if column in ("algorithm", "platform", "target") else "right", no_wrap=True
        )
    order = {t: i for i, t in enumerate(Target)}
    for (a, p, each), v in sorted(rows.items(), key=lambda row: (row[0][0], row[0][1], order[row[0][2]])):
        cells = [
            f"{v[m]:.3g}" if v[m] == v[m] else "-"
            for m in ("rae", "within_25pct", "underestimate_rate", "limit_exceeded", "interval_coverage")
        ]
        table.add_row(a, p, each.value, f"{int(v['runs'])}", *cells)
    print_table(table)


@commands.command()
def worker(
    once: Annotated[bool, typer.Option("--once", help="One pass over the store, then exit.")] = False,
    parent_pid: Annotated[
        int | None, typer.Option(hidden=True, help="Stop when this process (the API that started it) is gone.")
    ] = None,
) -> None:
    """The retrain worker: train pairs without a champion, and retrain those with enough new runs or drifting live error,
    under the champion guard; its progress is kept for `/readyz` and `predictor models list`."""
    import logging

    from predictor.addresses import RedactingFormatter
    from training.settings import WorkerSettings

    handler = logging.StreamHandler()
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    # the store's migrations at each start say nothing here
    logging.getLogger("alembic").setLevel(logging.WARNING)
    settings = WorkerSettings()
    store = open_store(settings)
    from cli.background import exit_on_sigterm, stop_with
    from training.status import StatusReport
    from training.worker import run

    exit_on_sigterm()
    if parent_pid is not None:
        stop_with(parent_pid)
    report = StatusReport(settings.resolved_home, settings.worker_interval_s)

    def said(outcomes) -> None:
        report.passed(outcomes)
        for o in outcomes:
            console.print(f"{_pair(o)} {o.decision.verdict.value}: {o.decision.reason}", markup=False, highlight=False)
        if once and not outcomes:
            console.print("nothing is due for training")

    try:
        run(settings, store, once=once, on_pass=said, progress=report, on_start=report.start)
    except KeyboardInterrupt:
        console.print("stopped")
    finally:
        report.stopped()


models_app = typer.Typer(
    help="The champion models: what serves each algorithm and platform, and what training decided.",
    no_args_is_help=True,
)
commands.add_typer(models_app, name="models")
MODEL_METRICS = ("rae", "rrse", "median_ape", "within_factor_2", "interval_coverage")  # shown by `models list`


@models_app.command("list")
def models_list(
    url: Annotated[str | None, typer.Option(help="Ask a running service instead of the local registry.")] = None,
) -> None:
    """Each (algorithm, platform)'s champion per target: registered version, zoo member (marked when it is one of the
    site's simple rules), forward-validation metrics and the live RAE of the estimates of its target the pair was
    served (`predictor report --live` shows the rest); below them, each site's newest planning decision per policy
    family (`predictor plan choose`): the configuration, its score on the past windows and its live score since."""
    settings = load_settings()
    champions = from_service(url, lambda client: client.models()) if url else _registered_champions(settings)
    training = _training_summary(settings, url)
    planning = from_service(url, lambda client: client.planning()) if url else _planning(settings)
    if champions:
        _print_champions(champions, f"served by {url}" if url else f"registry {settings.resolved_tracking_uri}")
    else:
        err_console.print(
            "no champions registered; `predictor train` trains and registers them"
            if training is None
            else "no champions registered yet: the retrain worker trains them (until then each pair is answered with "
            "the median of its measured runs)"
        )
    if training is not None:
        console.print(plain(training), highlight=False)
    if planning:
        _print_planning(planning)


def _print_champions(champions: list[dict[str, Any]], where: str) -> None:
    """The champions' table of `models list`."""
    from predictor.addresses import redact_addresses
    from training.report import REPORT_METRICS

    table = Table(title=f"Champions ({redact_addresses(where)})")
    metric_columns = (*(REPORT_METRICS[m] for m in MODEL_METRICS), "live RAE%")
    for column in ("algorithm", "platform", "version", "member", *metric_columns, "target"):
        table.add_column(
            column, justify="left" if column in ("algorithm", "platform", "member", "target") else "right", no_wrap=True
        )
    # run time first; a service's row without a target is run time's
    order = {t.value: i for i, t in enumerate(Target)}
    for c in sorted(
        champions, key=lambda c: (c["algorithm"], c["platform"], order.get(c.get("target") or "time", len(order)))
    ):
        metrics = [f"{c['metrics'][m]:.4g}" if m in c["metrics"] else "-" for m in MODEL_METRICS]
        live_rae = (c.get("live") or {}).get("rae")
        metrics.append("-" if live_rae is None or live_rae != live_rae else f"{live_rae:.4g}")
        table.add_row(
            c["algorithm"],
            c["platform"],
            str(c["version"]),
            (c.get("model_kind") or "-") + (" (rule)" if c.get("rule") else ""),
            *metrics,
            plain(c.get("target") or "time"),
        )
    print_table(table)


def _training_summary(settings: Settings, url: str | None) -> str | None:
    """What the retrain worker of the home (or of the service at ``url``) does, in one line; None when none has run."""
    if url:
        from serving.client import PredictorError

        def training_of(client: PredictorClient) -> dict[str, Any] | None:
            try:
                return client.ready().get("training")
            # not ready (503): its champions are listed all the same
            except PredictorError:
                return None

        training = from_service(url, training_of)
        return None if not training else str(training.get("summary"))
    from predictor.training_status import read_status

    status = read_status(settings.resolved_home)
    return None if status.state == "none" else status.summary()


@models_app.command("history")
def models_history(
    algorithm: Annotated[str | None, typer.Option(help="Only this algorithm.")] = None,
    platform: Annotated[str | None, typer.Option(help="Only this platform.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many decisions, newest first.", min=1)] = 50,
    target: Annotated[Target | None, typer.Option(help="Only decisions about this target's models.")] = None,
) -> None:
    """Every decision of the champion guard, and every rollback: trained, promoted, refreshed, kept or rolled back, and why.

    A row the store cannot read back whole is shown with ``!`` after its number and what could not be read.
    """
    rows = open_store(load_settings()).decisions(algorithm, platform, limit, target.value if target else None)
    if not rows:
        raise fail(
            "no training decisions recorded"
            + "".join(f" for {x}" for x in (algorithm, platform, target and target.value) if x)
        )
    table = Table(title="Champion decisions, newest first")
    columns = (
        "#",
        "when (UTC)",
        "algorithm",
        "platform",
        "target",
        "decision",
        "trigger",
        "challenger",
        "incumbent",
        "registered",
        "serving",
        "runs",
    )
    for column in columns:
        table.add_column(column, no_wrap=True)
    for r in rows:
        when = r["decided_at"]
        table.add_row(
            *map(
                plain,
                (
                    f"{r['id']}{'!' if r['unreadable'] else ''}",
                    f"{when:%Y-%m-%d %H:%M:%S}" if isinstance(when, datetime) else when,
                    r["algorithm"],
                    r["platform"],
                    r["target"],
                    r["decision"],
                    r["trigger"],
                    r["challenger"],
                    r["incumbent"] or "-",
                    r["version"] or "-",
                    r["serving_version"] or "-",
                    r["n_rows"],
                ),
            )
        )
    print_table(table)
    for r in rows:
        unreadable = f" [unreadable: {', '.join(r['unreadable'])}]" if r["unreadable"] else ""
        console.print(
            plain(f"#{r['id']} {r['algorithm']}/{r['platform']} {r['target']}: {r['reason']}{unreadable}"),
            highlight=False,
        )


@models_app.command("rollback")
def models_rollback(
    algorithm: Annotated[str, typer.Argument(help="The algorithm whose champion moves back.")],
    platform: Annotated[str, typer.Argument(help="Its platform.")],
    to: Annotated[
        str | None,
        typer.Option(
            "--to", metavar="VERSION", help="This registered version (default: the champion before the serving one)."
        ),
    ] = None,
    target: Annotated[Target, typer.Option(help="The model rolled back: run time's or peak memory's.")] = Target.TIME,
) -> None:
    """Move the pair's champion alias back to the version that served before (or to --to VERSION); recorded in `models history`.

    A running service serves the restored version within PREDICTOR_API_RELOAD_INTERVAL_S. The next `predictor train`
    judges the pair again against it.
    """
    from datetime import UTC

    from mlflow.exceptions import MlflowException

    from predictor.registry import CHAMPION_ALIAS, registered_name, registry_client
    from training.champions import JUDGED_TAG
    from training.worker import runs_of

    settings = load_settings()
    name = registered_name(algorithm, platform, target)
    client = registry_client(settings.resolved_tracking_uri)
    try:
        serving = client.get_model_version_by_alias(name, CHAMPION_ALIAS)
        versions = {str(v.version): v for v in client.search_model_versions(f"name='{name}'")}
    except MlflowException as exc:
        raise fail(f"no {_champion(target)} of {algorithm} on {platform} to roll back ({exc.error_code})") from None
    if to is None:
        earlier = [
            v
            for v in versions.values()
            if int(v.version) < int(serving.version) and v.tags.get("role") == CHAMPION_ALIAS
        ]
        if not earlier:
            raise fail(
                f"version {serving.version} is the first {_champion(target)} of {algorithm} on {platform}: nothing served before it"
            )
        to = str(max(earlier, key=lambda v: int(v.version)).version)
    if to not in versions:
        raise fail(f"{name} has no version {to}; registered: {', '.join(sorted(versions, key=int))}")
    if to == str(serving.version):
        raise fail(f"version {to} already serves {algorithm} on {platform}")
    chosen = versions[to]
    client.set_registered_model_alias(name, CHAMPION_ALIAS, to)
    if JUDGED_TAG in client.get_registered_model(name).tags:
        # the session it noted judged another version: the next train judges again
        client.delete_registered_model_tag(name, JUDGED_TAG)
    reason = (
        f"rolled back by hand from version {serving.version} to version {to}: kept until new runs arrive (runs set "
        "aside with `predictor runs set-aside` are never trained on)"
    )
    store = open_store(settings)
    store.add_decision(
        {
            "decided_at": datetime.now(UTC),
            "algorithm": algorithm,
            "platform": platform,
            "target": target.value,
            "decision": "rolled back",
            "trigger": "predictor models rollback",
            "challenger": chosen.tags.get("model_kind", "?"),
            "incumbent": serving.tags.get("model_kind"),
            "version": None,
            "serving_version": to,
            "n_rows": runs_of(store, algorithm, platform, target),  # the worker counts new runs from here
            "reason": reason,
            "details": {"from_version": str(serving.version), "to_version": to},
        }
    )
    console.print(
        plain(f"{algorithm}/{platform}{'' if target is Target.TIME else ' ' + target.value}: {reason}"), highlight=False
    )


def _champion(target: Target) -> str:
    """A champion of ``target``, in words."""
    return "champion" if target is Target.TIME else f"{target.value} champion"


def _print_planning(planning: list[dict[str, Any]]) -> None:
    """The planning decisions' table of `models list`, as `GET /v1/planning` gives them."""
    table = Table(title="Planning: the newest decision per site and policy family, newest first")
    columns = (
        "site",
        "family",
        "#",
        "decision",
        "configuration",
        "objective",
        "past",
        "per window",
        "live",
        "runner-up",
    )
    for column in columns:
        table.add_column(column, justify="right" if column in ("#", "past", "live") else "left")
    for p in planning:
        live, past = p.get("live"), p.get("past_score")
        table.add_row(
            *map(
                plain,
                (
                    p["site"],
                    p["family"],
                    str(p["id"]),
                    p["decision"],
                    p["label"],
                    p.get("objective") or "-",
                    "-" if past is None else f"{past:.3f}",
                    " ".join(f"{v:.3g}" for v in p.get("past_per_window") or []) or "-",
                    "not yet" if not live else f"{live['score']:.3f} on {live['jobs']} jobs",
                    p.get("runner_up") or "-",
                ),
            )
        )
    print_table(table)
    console.print(
        "past: the objective on the windows it was chosen on, over the configuration serving before; live: its "
        "objective over the runner-up's on the jobs since it began to serve (below 1: ahead)",
        highlight=False,
    )


def _planning(settings: Settings) -> list[dict[str, Any]]:
    """The store's newest planning decision of each site and family, as `GET /v1/planning` lists them."""
    from scheduler.planning import planning_decisions
    from serving.schemas.planning import PlanningOut

    return [PlanningOut.of(d).model_dump(mode="json") for d in planning_decisions(open_store(settings))]


def _registered_champions(settings: Settings) -> list[dict[str, Any]]:
    """Every champion in the registry, as the API's ``/v1/models`` lists them (algorithm, platform, version, member,
    metrics, and the live error of its target from the store)."""
    from mlflow.exceptions import MlflowException

    from predictor.live import live_report
    from predictor.registry import cv_metrics
    from training.champions import list_champions

    try:
        versions = [(target, v) for target in Target for v in list_champions(settings.resolved_tracking_uri, target)]
    except MlflowException as exc:
        raise fail(f"model registry {settings.resolved_tracking_uri} unavailable: {exc.message}") from None
    live = live_report(open_store(settings), settings.live_window) if versions else {}
    return [
        {
            "algorithm": v.tags.get("algorithm", "?"),
            "platform": v.tags.get("platform", "?"),
            "target": target.value,
            "version": v.version,
            "model_kind": v.tags.get("model_kind"),
            "rule": v.tags.get("rule") == "true",
            "metrics": cv_metrics(v.tags),
            "live": live[target].get((v.tags.get("algorithm", "?"), v.tags.get("platform", "?"))) if live else None,
        }
        for target, v in versions
    ]
