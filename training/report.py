"""The seed 001 Table-2-style comparison of every candidate of an algorithm's latest training session, from MLflow."""

from __future__ import annotations

from dataclasses import dataclass

import mlflow

from predictor.settings import Settings
from training.tracking import configure_mlflow, experiment_name

# Column label of each metric shown: Weka's (seed 001, Table 2, plus RRSE), what a scheduler cares about,
# and the coverage the intervals achieved out of fold.
REPORT_METRICS: dict[str, str] = {
    "cc": "CC",
    "mae": "MAE",
    "rmse": "RMSE",
    "rae": "RAE%",
    "rrse": "RRSE%",
    "mape": "MAPE%",
    "median_ape": "MdAPE%",
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
    """The latest finished training session of an algorithm and its candidates, best first per platform."""

    algorithm: str
    run_id: str
    start_time_ms: int
    nominal_coverage: float | None
    selection_metric: str
    rows: list[ReportRow]


class NoSession(LookupError):
    """No finished training session of the algorithm is tracked."""


def latest_session(settings: Settings, algorithm: str, platform: str | None = None) -> SessionReport:
    """Read the candidates of ``algorithm``'s latest finished session (only ``platform``'s, if given)."""
    configure_mlflow(settings)
    experiment = mlflow.get_experiment_by_name(experiment_name(algorithm))
    parents = [] if experiment is None else mlflow.search_runs(
        [experiment.experiment_id],
        filter_string=f"attributes.run_name = 'train-{algorithm}' AND attributes.status = 'FINISHED'",
        order_by=["attributes.start_time DESC"],
        max_results=1,
        output_format="list",
    )
    if not parents:
        raise NoSession(f"no finished training session of {algorithm!r} is tracked; run `predictor train` first")
    parent = parents[0]
    children = mlflow.search_runs(
        [parent.info.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'",
        output_format="list",
    )
    rows = [_row(child, parent.data.tags) for child in children]
    rows = [r for r in rows if platform is None or r.platform == platform]
    metric = settings.selection_metric
    rows.sort(key=lambda r: (r.platform, r.metrics.get(metric, float("inf")), r.model))
    coverages = {child.data.params.get("interval_nominal_coverage") for child in children} - {None}
    return SessionReport(
        algorithm=algorithm,
        run_id=parent.info.run_id,
        start_time_ms=parent.info.start_time,
        nominal_coverage=float(coverages.pop()) if len(coverages) == 1 else None,
        selection_metric=metric,
        rows=rows,
    )


def _row(child: mlflow.entities.Run, parent_tags: dict[str, str]) -> ReportRow:
    """A report row from a candidate's child run."""
    tags, metrics = child.data.tags, child.data.metrics
    platform, model = tags["platform"], tags["model_kind"]
    return ReportRow(
        platform=platform,
        model=model,
        run_id=child.info.run_id,
        target_transform=tags.get("target_transform", "raw"),
        metrics={k: metrics[f"cv_{k}"] for k in REPORT_METRICS if f"cv_{k}" in metrics},
        fit_seconds=metrics.get("fit_seconds", float("nan")),
        champion=parent_tags.get(f"champion.{platform}") == model,
    )
