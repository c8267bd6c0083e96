"""Every candidate of an algorithm's latest training session of a target, from MLflow, compared as in Table 2 of
Brandstätter-Müller et al. (2011), *Improving job scheduling on a heterogeneous cluster by predicting job execution
times using heuristics*."""

from __future__ import annotations

from dataclasses import dataclass

import mlflow

from predictor.domain import Target
from predictor.registry import registry_client
from predictor.settings import Settings
from training.settings import TrainingSettings
from training.significance import Difference, paired_bootstrap
from training.tracking import all_pages, experiment_name, load_out_of_fold

# Column label of each metric shown: Weka's (Brandstätter-Müller et al. 2011, Table 2, plus RRSE), what a scheduler
# cares about, and the coverage the intervals achieved out of fold.
REPORT_METRICS: dict[str, str] = {
    "cc": "CC",
    "mae": "MAE",
    "rmse": "RMSE",
    "rae": "RAE%",
    "rrse": "RRSE%",
    "mape": "MAPE%",
    "median_ape": "MdAPE%",
    "male": "MALE",
    "mdale": "MdALE",
    "within_25pct": "in25%",
    "within_factor_2": "in x2",
    "underestimate_rate": "under",
    "interval_coverage": "cover",
}


@dataclass(frozen=True)
class ReportRow:
    """One candidate of a session on one platform: its child run, pooled out-of-fold metrics and summed fold-fit seconds."""

    platform: str
    model: str
    run_id: str
    target_transform: str
    metrics: dict[str, float]
    fit_seconds: float
    champion: bool


@dataclass(frozen=True)
class SessionReport:
    """The latest finished training session of an algorithm's ``target`` and its candidates, best first per platform, read
    from the tracking store at ``tracking_uri``."""

    algorithm: str
    run_id: str
    start_time_ms: int
    nominal_coverage: float | None
    selection_metric: str
    rows: list[ReportRow]
    tracking_uri: str
    target: Target = Target.TIME


class NoSession(LookupError):
    """No finished training session of the algorithm (and target) is tracked."""


def tracked_algorithms(settings: Settings, target: Target = Target.TIME) -> list[str]:
    """The algorithms training has tracked an experiment of ``target`` for, by name."""
    client = registry_client(settings.resolved_tracking_uri)
    prefix = experiment_name("", target)
    experiments = all_pages(
        lambda token: client.search_experiments(filter_string=f"name LIKE '{prefix}%'", page_token=token)
    )
    names = (e.name for e in experiments)
    return sorted(name.removeprefix(prefix) for name in names)


def latest_session(
    settings: TrainingSettings, algorithm: str, platform: str | None = None, target: Target = Target.TIME
) -> SessionReport:
    """Read the candidates of ``algorithm``'s latest finished session of ``target`` (only ``platform``'s, if given)."""
    client = registry_client(settings.resolved_tracking_uri)
    experiment = client.get_experiment_by_name(experiment_name(algorithm, target))
    parents = (
        []
        if experiment is None
        else client.search_runs(
            [experiment.experiment_id],
            filter_string=f"attributes.run_name = 'train-{algorithm}' AND attributes.status = 'FINISHED'",
            order_by=["attributes.start_time DESC"],
            max_results=1,
        )
    )
    if not parents:
        if target is Target.TIME:
            raise NoSession(f"no finished training session of {algorithm!r} is tracked; run `predictor train` first")
        raise NoSession(
            f"no finished {target.value} training session of {algorithm!r} is tracked; "
            f"run `predictor train --target {target.value}` first"
        )
    parent = parents[0]
    children = all_pages(
        lambda token: client.search_runs(
            [parent.info.experiment_id],
            filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'",
            page_token=token,
        )
    )
    rows = [_row(child, parent.data.tags) for child in children]
    rows = [r for r in rows if platform is None or r.platform == platform]
    judged_by = {v for k, v in parent.data.tags.items() if k.startswith("metric.")}  # one per program or job class
    metric = judged_by.pop() if len(judged_by) == 1 else settings.selection_metric
    rows.sort(key=lambda r: (r.platform, r.metrics.get(metric, float("inf")), r.model))
    coverages = {
        coverage for child in children if (coverage := child.data.params.get("interval_nominal_coverage")) is not None
    }
    return SessionReport(
        algorithm=algorithm,
        run_id=parent.info.run_id,
        start_time_ms=parent.info.start_time,
        nominal_coverage=float(coverages.pop()) if len(coverages) == 1 else None,
        selection_metric=metric,
        rows=rows,
        tracking_uri=settings.resolved_tracking_uri,
        target=target,
    )


def _row(child: mlflow.entities.Run, parent_tags: dict[str, str]) -> ReportRow:
    """A report row from a candidate's child run."""
    tags, metrics = child.data.tags, child.data.metrics
    platform, model = tags["platform"], tags["model_kind"]
    # the serving ensemble's fixed weights, beside the session's own
    if child.data.params.get("role") == "incumbent":
        model = f"{model} (incumbent)"
    return ReportRow(
        platform=platform,
        model=model,
        run_id=child.info.run_id,
        target_transform=tags.get("target_transform", "raw"),
        metrics={k: metrics[f"cv_{k}"] for k in REPORT_METRICS if f"cv_{k}" in metrics},
        fit_seconds=metrics.get("fit_seconds", float("nan")),
        champion=_is_champion(child, parent_tags, platform),
    )


def _is_champion(child: mlflow.entities.Run, parent_tags: dict[str, str], platform: str) -> bool:
    """Whether ``child`` is the candidate that serves ``platform``: by its run id (one session may log two runs of one
    member, an ensemble as challenger and as incumbent); sessions older than that tag, by the member's name."""
    if (run := parent_tags.get(f"champion_run.{platform}")) is not None:
        return child.info.run_id == run
    return parent_tags.get(f"champion.{platform}") == child.data.tags["model_kind"]


@dataclass(frozen=True)
class Lead:
    """The champion against the runner-up of one platform: RAE and RRSE differences over ``n_jobs`` resampled jobs."""

    champion: str
    runner_up: str
    n_jobs: int
    differences: dict[str, Difference]


def champion_lead(session: SessionReport, platform: str) -> Lead | None:
    """How far the champion of ``platform`` is ahead of the runner-up (next by the selection metric), with 95 % intervals.

    Both candidates' logged out-of-fold predictions (of the runs a fold scored) are compared by a paired bootstrap
    over jobs;
    None where there is no champion or runner-up, or their runs predate ``out_of_fold.csv``.
    """
    rows = [r for r in session.rows if r.platform == platform]
    champion = next((r for r in rows if r.champion), None)
    runner_up = next((r for r in rows if not r.champion), None)
    if champion is None or runner_up is None:
        return None
    try:
        ours, theirs = (load_out_of_fold(session.tracking_uri, row.run_id) for row in (champion, runner_up))
    except FileNotFoundError:
        return None
    if ours["run_id"].tolist() != theirs["run_id"].tolist():
        return None
    scored = ours["predicted_seconds"].notna() & theirs["predicted_seconds"].notna()  # a forward plan's later runs
    ours, theirs = ours[scored].reset_index(drop=True), theirs[scored].reset_index(drop=True)
    differences = paired_bootstrap(
        ours["measured_seconds"],
        ours["prior_seconds"],
        ours["predicted_seconds"],
        theirs["predicted_seconds"],
        ours["job"].tolist(),
        censored=ours["censored"],
    )
    return Lead(champion.model, runner_up.model, int(ours["job"][~ours["censored"]].nunique()), differences)
