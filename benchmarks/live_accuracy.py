"""Accuracy of the live path (issue 29) on a real log replayed as a site's accounting, in submit order.

    .venv/bin/python benchmarks/live_accuracy.py --log ../shared/data/traces/hpc2n.swf --recording submit-and-end \
        --json benchmarks/results/live_accuracy-hpc2n-submit-and-end.json --markdown /tmp/live_accuracy-hpc2n.md

The log is imported as the service imports it (:func:`data.swf_ingest.ingest_swf`: job classes, platforms,
history features, censoring) into a scratch store. Its jobs, in submit order (ties in log order), are cut at
``--train-fraction``: the past is the first part, and of it the runs that had ended by the first later submission
(what a service trained at that instant would have). The project's training (:func:`training.pipeline.train`:
10-fold cross-validation, selection by the settings' metric, the guard, refit; tracking and registry in memory as the
simulator keeps them) picks a champion per job class and platform among ``--models``, and the project's
:class:`~predictor.oracle.RuntimeOracle` serves it.

Then the whole log is replayed as accounting into a second, empty store's ``job_history`` (SQLite), in time order,
what the store learns at each instant set by ``--recording`` (:data:`RECORDING`; by default each job is recorded as
submitted when it is submitted and with its start and end when it ends); at one instant records come before
submissions, which keep log order, and the records due before a submission are written in one
:meth:`JobHistory.record` call before it. Each job is estimated at its submit time from
:func:`scheduler.slurm.submit_history.submit_features` over that store; each job after the cut is served by the oracle on
the platform it ran on, as the API would serve it, and compared with its real run time, beside the users' requests and
the last two runs (the project's ``last_two_mean`` member, Tsafrir et al. 2007).
The replay's features are checked against :func:`features.history.history_features` of the same log.

``--member-check`` runs a diagnostic instead of the replay: each member of each pair scored by time rather than by
random folds (:func:`member_check`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from data.swf_ingest import history_records, ingest_swf
from features.history import history_features
from features.swf import SwfLog, read_swf
from models import make_model
from models.zoo import applicable
from predictor.catalog import load_catalog
from predictor.domain import Estimate, Measurement
from predictor.oracle import RuntimeOracle
from predictor.settings import BUNDLED_DATA
from predictor.store import MeasurementStore
from predictor.store.job_history import JobHistory, JobRecord
from scheduler.slurm.submit_history import Submission, submit_features
from training.champions import check_selection_metric
from training.crossval import fit_fold, refit
from training.dataset import TrainingSet, load_training_sets
from training.folds import FoldPlan
from training.memory import MemoryChampions, MemoryMeasurements, MemoryTracker
from training.pipeline import train
from training.settings import TrainingSettings

MODELS = ("mean", "requested_time", "last_two_mean", "linear_log", "tobit_log", "lightgbm_log", "online_log")
METHODS = ("service", "request", "last two")
MIN_RUN = 1.0  # runs shorter than this are left out of the scores (their log error is meaningless)
PROGRESS_EVERY = 2000


def split(log: SwfLog, fraction: float) -> tuple[list[str], int, float, set[str]]:
    """The log's run ids in submit order (ties by line), how many form the past, the cut (the submit time of the first
    job after it), and the past's runs that had ended by then."""
    order = sorted(log.jobs, key=lambda j: (j.submit, j.line))
    n_past = min(max(round(fraction * len(order)), 1), len(order) - 1)
    cut = order[n_past].submit
    ended = {run_id(log, j.job) for j in order[:n_past] if j.end is not None and j.end <= cut}
    return [run_id(log, j.job) for j in order], n_past, cut, ended


def run_id(log: SwfLog, job: int) -> str:
    """The run id (and job-history key) the SWF import gives a job."""
    return f"swf-{log.name}-{job}"


def champions(
    past: Iterable[Measurement], settings: TrainingSettings, models: Sequence[str], progress: Callable[[str], None]
) -> tuple[MemoryChampions, MemoryMeasurements, list[dict[str, Any]]]:
    """Train the past's job classes with the project's pipeline; the champions, the past, and what each pair chose."""
    memory = MemoryMeasurements()
    memory.add(past)
    book = MemoryChampions()
    outcomes = train(
        settings,
        load_training_sets(memory),
        models=models,
        tracker=MemoryTracker(settings.interval_coverage),
        champions=book,
        progress=progress,
    )
    chosen = [
        {
            "algorithm": o.algorithm,
            "platform": o.platform,
            "rows": o.n_rows,
            "serving": o.serving,
            "challenger": o.challenger,
            "verdict": o.decision.verdict.value,
            "cv": {name: {k: m[k] for k in ("rae", "median_ape") if k in m} for name, m in o.metrics.items()},
        }
        for o in outcomes
    ]
    return book, memory, chosen


RECORDING = {
    "submit-and-end": "each job recorded as submitted at its submit time, with its start and end when it ends",
    "every-event": "each job recorded at its submission, its start and its end: the log's full knowledge",
    "ended-only": "each job recorded (submit, start, end) only when it ends, as `slurm follow` and accounting import do",
}


def events(records: Sequence[JobRecord], recording: str) -> list[tuple[float, int, int, JobRecord, bool]]:
    """The log's submissions and what the store learns of its jobs when (:data:`RECORDING`), sorted, as (time, phase,
    seq, record, stored): phase 1 a job's submission (it is estimated there; ``stored``: it is recorded as submitted),
    phase 0 a record (at one instant, before the submissions). A job that never ran (no end) is recorded at its
    submission in every mode."""
    out = []
    for rec in records:
        out.append((rec.submit_at.timestamp(), 1, rec.seq, rec, recording != "ended-only" or rec.end_at is None))
        if rec.start_at is not None and recording == "every-event":
            out.append((rec.start_at.timestamp(), 0, rec.seq, replace(rec, end_at=None, state=None), True))
        if rec.end_at is not None:
            out.append((rec.end_at.timestamp(), 0, rec.seq, rec, True))
    return sorted(out, key=lambda e: e[:3])


def replay(
    log: SwfLog,
    history: JobHistory,
    oracle: RuntimeOracle,
    scored: dict[str, Measurement],
    recording: str,
) -> tuple[dict[str, dict[str, float]], dict[str, Estimate], dict[str, Any]]:
    """Replay the log as accounting (module docstring): every job's live features, the oracle's answer for the scored
    ones, and the costs (CPU per job, latency percentiles of each step)."""
    records = history_records(log)
    features: dict[str, dict[str, float]] = {}
    served: dict[str, Estimate] = {}
    timings: dict[str, list[float]] = {"submit_features": [], "estimate": [], "record": []}
    pending: list[JobRecord] = []
    cpu, wall = time.process_time(), time.perf_counter()
    for _, phase, _, rec, stored in events(records, recording):
        if not phase:
            pending.append(rec)
            continue
        if pending:
            started = time.perf_counter()
            history.record(pending)
            timings["record"].append(time.perf_counter() - started)
            pending = []
        job = Submission(
            cluster=rec.cluster,
            user=rec.user,
            submit=rec.submit_at,
            time_limit_s=rec.time_limit_s,
            procs=rec.min_cpus,
            seq=rec.seq,
        )
        started = time.perf_counter()
        features[rec.key] = found = submit_features(history, job, log.timezone)
        timings["submit_features"].append(time.perf_counter() - started)
        m = scored.get(rec.key)
        if m is not None:
            started = time.perf_counter()
            prepared = oracle.prepare(m.algorithm, None, [m.platform], features=found)
            served[rec.key] = oracle.estimate_jobs([prepared])[0][m.platform]
            timings["estimate"].append(time.perf_counter() - started)
        if stored:
            pending.append(replace(rec, start_at=None, end_at=None, state=None))
        if len(features) % PROGRESS_EVERY == 0:
            print(f"  replay: {len(features)}/{len(records)} jobs, {len(served)} served", flush=True)
    if pending:
        history.record(pending)
    costs: dict[str, Any] = {
        "jobs": len(records),
        "cpu_ms_per_job": 1e3 * (time.process_time() - cpu) / max(len(records), 1),
        "wall_s": time.perf_counter() - wall,
    }
    for name, values in timings.items():
        ms = 1e3 * np.asarray(values)
        costs[name] = {"calls": len(values), "p50_ms": _pct(ms, 50), "p99_ms": _pct(ms, 99), "max_ms": _pct(ms, 100)}
    return features, served, costs


def _pct(values: np.ndarray, q: float) -> float | None:
    return float(np.percentile(values, q)) if len(values) else None


def mismatches(log: SwfLog, live: dict[str, dict[str, float]]) -> int:
    """How many jobs' live features differ from the replay's (:func:`features.history.history_features`)."""
    replayed = history_features(log.jobs, log.start_time, log.timezone)
    return sum(live[run_id(log, j.job)] != f for j, f in zip(log.jobs, replayed, strict=True))


def answers(
    keys: Sequence[str],
    scored: dict[str, Measurement],
    features: dict[str, dict[str, float]],
    served: dict[str, Estimate],
    last_two: Any,
) -> pd.DataFrame:
    """One row per scored job: run, class, and each method's estimate and limit (seconds).

    The service's seconds and limit are the oracle's; where it serves no seconds (no champion nor measured runs) or
    no limit, the job keeps its request, as the Slurm plugin leaves it. The last two runs: the ``last_two_mean``
    member on the live features, the limit the request.
    """
    rows = []
    for key in keys:
        m, f, e = scored[key], features[key], served[key]
        request = f["request.time"]
        rows.append(
            {
                "run_id": key,
                "algorithm": m.algorithm,
                "platform": m.platform,
                "run": m.wall_seconds,
                "censored": m.censored,
                "exit_status": m.exit_status,
                "service": e.seconds if e.seconds is not None else request,
                "service_limit": e.limit if e.limit is not None else request,
                "service_model": "none" if e.seconds is None else ("fallback" if e.fallback else e.model_name),
                "extrapolating": e.extrapolating,
                "request": request,
                "request_limit": request,
                "last two_limit": request,
            }
        )
    frame = pd.DataFrame(rows)
    columns = list(last_two.feature_names_in_)
    X = pd.DataFrame([{c: features[k].get(c, math.nan) for c in columns} for k in keys], columns=columns)
    frame["last two"] = last_two.predict(X) if len(X) else []
    return frame


HOLDOUT = 1 / 3  # the share of each pair's past (its latest runs) the member check holds out


def member_check(
    sets: Sequence[TrainingSet],
    position: dict[str, int],
    later: Sequence[Measurement],
    models: Sequence[str],
    seed: int,
) -> dict[str, Any]:
    """Each member of each pair, scored by time instead of random folds: fitted on the first two thirds of the pair's
    past (the project's :func:`training.crossval.fit_fold` on a two-fold plan in submit order), MdALE on the last
    third; and fitted on the whole past (:func:`training.crossval.refit`), MdALE on the pair's later runs (features as
    the replay computes them, i.e. ``every-event``; the model's own answer, no oracle). Pooled over pairs, with the
    member each pair's time-ordered holdout would choose."""
    by_pair: dict[tuple[str, str], list[Measurement]] = {}
    for m in later:
        by_pair.setdefault((m.algorithm, m.platform), []).append(m)
    pooled: dict[str, dict[str, list[float]]] = {}
    chosen_errors: list[float] = []
    pairs = []
    for ts in sets:
        future = [m for m in by_pair.get((ts.algorithm, ts.platform), []) if m.features.get("request.time", 0) > 0]
        rows = np.argsort([position[r] for r in ts.run_ids], kind="stable")
        folds = np.zeros(len(ts), dtype="int64")
        folds[rows[int(len(ts) * (1 - HOLDOUT)) :]] = 1
        plan = FoldPlan(run_ids=list(ts.run_ids), folds=folds)
        held = (folds == 1) & ~ts.censored & (ts.y >= MIN_RUN)
        if not future or held.sum() < 3 or (~held).sum() < 3:
            continue
        X = pd.DataFrame(
            [{c: m.features.get(c, math.nan) for c in ts.feature_names} for m in future], columns=ts.feature_names
        )
        run = np.array([m.wall_seconds for m in future])
        found: dict[str, float] = {}
        later_errors: dict[str, np.ndarray] = {}
        for name in (n for n in models if applicable(n, ts.feature_names, int((folds == 0).sum()))):
            try:
                holdout = fit_fold(name, ts, plan, 1, seed=seed).predictions[held[folds == 1]]
                predicted = np.asarray(refit(name, ts, seed=seed).predict(X), dtype=float)
            except Exception as exc:  # a member that cannot fit this pair's rows is left out of it, as in training
                print(f"  member check: {name} on {ts.algorithm}/{ts.platform}: {exc}", flush=True)
                continue
            errors = _log_errors(holdout, ts.y[held]), _log_errors(predicted, run)
            found[name] = float(np.median(errors[0]))
            later_errors[name] = errors[1]
            slot = pooled.setdefault(name, {"holdout": [], "later": [], "under": []})
            slot["holdout"] += errors[0].tolist()
            slot["later"] += errors[1].tolist()
            slot["under"] += (predicted < run).tolist()
        if found:
            chosen_errors += later_errors[min(found, key=found.get)].tolist()
            pairs.append(
                {
                    "algorithm": ts.algorithm,
                    "platform": ts.platform,
                    "later_runs": len(future),
                    "holdout_mdale": found,
                    "time_choice": min(found, key=found.get),
                }
            )
    members = {
        name: {
            "pairs": sum(name in p["holdout_mdale"] for p in pairs),
            "holdout_mdale": float(np.median(v["holdout"])),
            "later_mdale": float(np.median(v["later"])),
            "later_under": float(np.mean(v["under"])),
            "later_runs": len(v["later"]),
        }
        for name, v in pooled.items()
    }
    time_choice = float(np.median(chosen_errors)) if chosen_errors else None
    return {
        "pairs": pairs,
        "members": members,
        "time_choice_later_mdale": time_choice,
        "later_runs": len(chosen_errors),
    }


def _log_errors(estimate: np.ndarray, run: np.ndarray) -> np.ndarray:
    """|ln(estimate / run)|, estimates floored at 1 s."""
    return np.abs(np.log(np.maximum(np.asarray(estimate, dtype=float), MIN_RUN) / run))


def scores(frame: pd.DataFrame) -> dict[str, Any]:
    """Per method: median |ln(estimate / run)|, the share of estimates below the run, the share of runs beyond the
    limit, the median limit over the request; estimates floored at 1 s for the logarithm. ``extrapolating``: the share
    of the service's answers from beyond its champion's training envelope."""
    run = frame["run"].to_numpy(dtype=float)
    out: dict[str, Any] = {"jobs": len(frame), "extrapolating": float(frame["extrapolating"].mean())}
    for method in METHODS:
        est = frame[method].to_numpy(dtype=float)
        limit = frame[f"{method}_limit"].to_numpy(dtype=float)
        out[method] = {
            "mdale": float(np.median(np.abs(np.log(np.maximum(est, MIN_RUN) / run)))),
            "under": float(np.mean(est < run)),
            "over_limit": float(np.mean(run > limit)),
            "limit_over_request": float(np.median(limit / frame["request"].to_numpy(dtype=float))),
        }
    return out


def losses(rows: dict[str, dict[str, Any]]) -> list[str]:
    """Where the service does worse than the requests or the last two runs: '<row>: <metric> <service> vs <baseline>'."""
    out = []
    for name, row in rows.items():
        for metric in ("mdale", "under", "over_limit"):
            for base in ("request", "last two"):
                if row["service"][metric] > row[base][metric]:
                    out.append(f"{name}: {metric} {row['service'][metric]:.3f} vs {base} {row[base][metric]:.3f}")
    return out


def markdown(result: dict[str, Any]) -> str:
    """The results as the page's tables."""
    lines = [
        f"Log `{result['log']}`, recording `{result['recording']}`, champions chosen by "
        f"`{result['selection_metric']}`: {result['jobs']} jobs; past = first {result['train_fraction']:.0%} "
        f"({result['past_jobs']} jobs, {result['trained_runs']} runs ended by the cut); scored: {result['scores']['all']['jobs']} "
        f"runs of >= 1 s after the cut; live features equal to the replay's for {result['jobs'] - result['feature_mismatches']}"
        f"/{result['jobs']} jobs.",
        "",
        "| rows | jobs | extrapolating | MdALE service | request | last two | under service | request | last two "
        "| limit exceeded service | request | last two | service limit / request |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for name, row in result["scores"].items():
        cells = [f"{row[m]['mdale']:.2f}" for m in METHODS]
        cells += [f"{100 * row[m]['under']:.1f} %" for m in METHODS]
        cells += [f"{100 * row[m]['over_limit']:.1f} %" for m in METHODS]
        cells.append(f"{row['service']['limit_over_request']:.2f}")
        lines.append(f"| {name} | {row['jobs']} | {100 * row['extrapolating']:.0f} % | " + " | ".join(cells) + " |")
    lines += ["", "| job class | platform | past runs | champion (challenger, verdict) |", "|---|---|--:|---|"]
    lines += [
        f"| {c['algorithm']} | {c['platform']} | {c['rows']} | {c['serving']} ({c['challenger']}, {c['verdict']}) |"
        for c in result["champions"]
    ]
    costs = result["replay"]
    lines += [
        "",
        f"Replay: {costs['cpu_ms_per_job']:.2f} ms CPU per job (process_time, everything: records, features, estimates), "
        f"{costs['wall_s']:.1f} s wall; submit_features p50 {costs['submit_features']['p50_ms']:.2f} ms, "
        f"p99 {costs['submit_features']['p99_ms']:.2f} ms; oracle estimate p50 {costs['estimate']['p50_ms']:.2f} ms, "
        f"p99 {costs['estimate']['p99_ms']:.2f} ms; record p50 {costs['record']['p50_ms']:.2f} ms, "
        f"p99 {costs['record']['p99_ms']:.2f} ms. Service answers: "
        + ", ".join(f"{k} {v}" for k, v in result["service_models"].items())
        + ".",
    ]
    if result["losses"]:
        lines += ["", "Where the service loses:", "", *[f"- {loss}" for loss in result["losses"]]]
    return "\n".join(lines) + "\n"


def member_markdown(result: dict[str, Any]) -> str:
    """The member check as a table."""
    check = result["member_check"]
    lines = [
        f"Log `{result['log']}`, member check: {len(check['pairs'])} pairs, {check['later_runs']} later runs.",
        "",
        "| member | pairs | MdALE, last third of the past | MdALE, later runs | under, later runs |",
        "|---|--:|--:|--:|--:|",
    ]
    for name, m in check["members"].items():
        lines.append(
            f"| {name} | {m['pairs']} | {m['holdout_mdale']:.2f} | {m['later_mdale']:.2f} | {100 * m['later_under']:.1f} % |"
        )
    choice = check["time_choice_later_mdale"]
    lines += [
        "",
        f"Each pair's member chosen on the last third of its past: MdALE {choice:.2f} on the later runs. Choices: "
        + ", ".join(f"{p['algorithm']}/{p['platform']} {p['time_choice']}" for p in check["pairs"])
        + ".",
    ]
    return "\n".join(lines) + "\n"


def bench(args: argparse.Namespace) -> dict[str, Any]:
    """Everything for one log (see the module docstring)."""
    log = read_swf(args.log)
    models = args.models.split(",")
    catalog = load_catalog(BUNDLED_DATA / "catalog.yaml")
    result: dict[str, Any] = {
        "log": log.name,
        "train_fraction": args.train_fraction,
        "models": models,
        "recording": args.recording,
        "jobs": len(log.jobs),
    }
    with tempfile.TemporaryDirectory() as work:
        settings = TrainingSettings(home=Path(work) / "home", n_jobs=args.n_jobs, seed=args.seed)
        if args.selection_metric:
            settings = settings.model_copy(update={"selection_metric": check_selection_metric(args.selection_metric)})
        result["selection_metric"] = settings.selection_metric
        store = MeasurementStore(f"sqlite:///{work}/import.db")
        store.migrate()
        report = ingest_swf(args.log, store, catalog, rejects_dir=Path(work))
        print(
            f"{log.name}: {report.stored} measurements, {len(report.skipped)} skipped, {len(report.rejected)} rejected",
            flush=True,
        )
        measured = {m.run_id: m for m in store.measurements(successful_only=False)}
        store.dispose()
        order, n_past, cut, ended = split(log, args.train_fraction)
        result.update(past_jobs=n_past, cut=datetime.fromtimestamp(log.start_time + cut, UTC).isoformat())
        if args.member_check:
            past = MemoryMeasurements()
            past.add(measured[k] for k in order[:n_past] if k in ended and k in measured)
            later = [measured[k] for k in order[n_past:] if k in measured and measured[k].wall_seconds >= MIN_RUN]
            position = {k: i for i, k in enumerate(order)}
            result["member_check"] = member_check(load_training_sets(past), position, later, models, args.seed)
            return result
        started = time.process_time()
        book, memory, chosen = champions(
            (measured[k] for k in order[:n_past] if k in ended and k in measured),
            settings,
            models,
            lambda step: print(f"  train: {step}", flush=True) if "fold" not in step else None,
        )
        result.update(
            trained_runs=sum(c for _, c in memory.profile_table().values()),
            champions=chosen,
            train_cpu_s=time.process_time() - started,
        )
        oracle = RuntimeOracle(
            catalog,
            book.champions(),
            memory.profile_table(),
            coverage=settings.interval_coverage,
            limit_quantile=settings.limit_quantile,
        )
        later = [k for k in order[n_past:] if k in measured]
        scored = {k: measured[k] for k in later if measured[k].wall_seconds >= MIN_RUN}
        live = MeasurementStore(f"sqlite:///{work}/live.db")
        live.migrate()
        features, served, costs = replay(log, JobHistory(live.engine), oracle, scored, args.recording)
        live.dispose()
    result["replay"] = costs
    result["load"] = os.getloadavg()
    result["feature_mismatches"] = mismatches(log, features)
    keys = [k for k in scored if features[k].get("request.time", 0) > 0]
    result["left_out"] = {
        "not measured or unknown class": len(order) - n_past - len(later),
        "run < 1 s": len(later) - len(scored),
        "no request": len(scored) - len(keys),
    }
    past = [measured[k] for k in order[:n_past] if k in ended and k in measured]
    columns = ["history.last2_mean", "history.last1", "request.time"]
    last_two = make_model("last_two_mean").fit(
        pd.DataFrame([{c: m.features.get(c, math.nan) for c in columns} for m in past], columns=columns),
        np.array([m.wall_seconds for m in past]),
    )
    frame = answers(keys, scored, features, served, last_two)
    result["service_models"] = dict(Counter(frame["service_model"]).most_common())
    rows = {"all": scores(frame)}
    for name, part in (("inside the envelope", ~frame["extrapolating"]), ("extrapolating", frame["extrapolating"])):
        if part.any():
            rows[f"all, {name}"] = scores(frame[part])
    completed = frame[frame["exit_status"] == 0]
    if len(completed) < len(frame):
        rows["completed"] = scores(completed)
    if frame["algorithm"].nunique() > 1:
        rows.update({name: scores(group) for name, group in frame.groupby("algorithm")})
    result["scores"] = rows
    result["losses"] = losses(rows)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, required=True, help="an SWF log (read in place, never copied)")
    parser.add_argument(
        "--train-fraction", type=float, default=0.3, help="the past: this share of the jobs in submit order"
    )
    parser.add_argument("--models", default=",".join(MODELS), help="zoo members the champions are chosen among")
    parser.add_argument(
        "--selection-metric", default=None, help="the metric that picks champions (the settings' by default)"
    )
    parser.add_argument(
        "--recording", choices=tuple(RECORDING), default="submit-and-end", help="what the store learns when"
    )
    parser.add_argument("--member-check", action="store_true", help="only score each member by time (no replay)")
    parser.add_argument("--n-jobs", type=int, default=1, help="training processes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--markdown", type=Path, default=None)
    args = parser.parse_args()
    if not 0 < args.train_fraction < 1:
        parser.error("--train-fraction must be between 0 and 1")
    result = bench(args)
    text = member_markdown(result) if args.member_check else markdown(result)
    print(text, flush=True)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
