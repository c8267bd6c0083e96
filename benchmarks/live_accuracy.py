"""Accuracy of the live path on a real log replayed as a site's accounting, in time order, as production learns.

    .venv/bin/python benchmarks/live_accuracy.py --log ../shared/data/traces/hpc2n.swf --recording submit-and-end \
        --json benchmarks/results/live_accuracy-hpc2n-submit-and-end.json --markdown /tmp/live_accuracy-hpc2n.md

The log is imported as the service imports it (:func:`data.swf_ingest.ingest_swf`: job classes, platforms,
censoring) into a scratch store, which says what each job was (class, platform, run time, status). Then the whole
log is replayed as accounting into an empty store's ``job_history`` (SQLite), in time order, what that store learns
at each instant set by ``--recording`` (:data:`RECORDING`; by default each job is recorded as submitted when it is
submitted and with its start and end when it ends). Each job is estimated at its submission from
:func:`slurm.submit_history.submit_features` over that store (the features the Slurm route computes), and
the service is production's own loop (:class:`training.service_loop.ServiceLoop`): each job that ends is recorded
with the features it was submitted with and the estimate it was served; the retrain worker's rule retrains what is
due under the guard (forward validation, the site's rules among the candidates) and online champions learn every
run. The first ``--train-fraction`` of the jobs (in submit order) are the past: the runs that end before the first
later submission are recorded together at that instant, which trains every job class once; every later job is
scored, on the platform it ran on, beside the users' requests and the last two runs (the project's
``last_two_mean`` rule, Tsafrir, Etsion & Feitelson 2007).

``--site-catalog`` adds a site's catalog (its platforms and job classes, as docs/slurm.md tells a site to write one)
to the bundled one, so a site can measure on its own accounting before it turns the plugin on.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
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
from predictor.catalog import load_catalog
from predictor.domain import Estimate, Measurement, ServedEstimate
from predictor.settings import BUNDLED_DATA
from predictor.store import MeasurementStore
from predictor.store.job_history import JobHistory, JobRecord
from slurm.submit_history import Submission, submit_features
from training.service_loop import ServiceLoop
from training.settings import WorkerSettings

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


class Replay:
    """The log replayed as accounting while the service learns (module docstring): each job's live features, what the
    service answered for the scored ones, and what each step cost."""

    def __init__(self, log: SwfLog, history: JobHistory, loop: ServiceLoop, measured: dict[str, Measurement]) -> None:
        self.log, self.history, self.loop, self.measured = log, history, loop, measured
        self.features: dict[str, dict[str, float]] = {}
        self.served: dict[str, Estimate] = {}
        self.timings: dict[str, list[float]] = {"submit_features": [], "estimate": [], "record": [], "learn": []}
        self.past: list[Measurement] | None = []  # runs ended before the cut, recorded together at it; None after
        self.ended: set[str] = set()

    def run(self, recording: str, cut_key: str, scored: set[str]) -> dict[str, Any]:
        """Replay every event; the costs. The job ``cut_key`` is the first after the cut: the past is learned there."""
        records = history_records(self.log)
        pending: list[JobRecord] = []
        cpu, wall = time.process_time(), time.perf_counter()
        for _, phase, _, rec, stored in events(records, recording):
            if not phase:
                pending.append(rec)
                if rec.end_at is not None:
                    self._ended(rec.key, rec.end_at)
                continue
            if pending:
                started = time.perf_counter()
                self.history.record(pending)
                self.timings["record"].append(time.perf_counter() - started)
                pending = []
            if rec.key == cut_key and self.past is not None:
                self._learn(self.past, [])
                self.past = None
            self._submitted(rec, rec.key in scored)
            if stored:
                pending.append(replace(rec, start_at=None, end_at=None, state=None))
            if len(self.features) % PROGRESS_EVERY == 0:
                print(f"  replay: {len(self.features)}/{len(records)} jobs, {len(self.served)} served", flush=True)
        if pending:
            self.history.record(pending)
        costs: dict[str, Any] = {
            "jobs": len(records),
            "cpu_ms_per_job": 1e3 * (time.process_time() - cpu) / max(len(records), 1),
            "wall_s": time.perf_counter() - wall,
            "retrains": self.loop.costs.retrains,
            "train_cpu_s": self.loop.costs.train_cpu_s,
        }
        for name, values in self.timings.items():
            ms = 1e3 * np.asarray(values)
            costs[name] = {
                "calls": len(values),
                "p50_ms": _pct(ms, 50),
                "p99_ms": _pct(ms, 99),
                "max_ms": _pct(ms, 100),
            }
        return costs

    def _submitted(self, rec: JobRecord, score: bool) -> None:
        """A job is submitted: its live features, and the service's answer when it is scored."""
        job = Submission(rec.cluster, rec.user, rec.submit_at, rec.time_limit_s, rec.min_cpus, rec.seq)
        started = time.perf_counter()
        self.features[rec.key] = found = submit_features(self.history, job, self.log.timezone)
        self.timings["submit_features"].append(time.perf_counter() - started)
        m = self.measured.get(rec.key)
        if m is not None and score:
            started = time.perf_counter()
            oracle = self.loop.oracle
            self.served[rec.key] = oracle.estimate_jobs([oracle.prepare(m.algorithm, None, [m.platform], found)])[0][
                m.platform
            ]
            self.timings["estimate"].append(time.perf_counter() - started)
        if rec.key in self.ended:  # it ended at the instant it was submitted (no wait, no run)
            self._ended(rec.key, rec.submit_at)

    def _ended(self, key: str, at: datetime) -> None:
        """A job ended: the service records its run with the features it was submitted with, beside its answer."""
        m = self.measured.get(key)
        if m is None:
            return
        if key not in self.features:
            self.ended.add(key)  # learned once its submission is replayed
            return
        run = m.model_copy(update={"features": self.features[key], "recorded_at": at})
        answer = self.served.get(key)
        served = [] if answer is None else [ServedEstimate.of(key, m.algorithm, answer, origin="slurm")]
        if self.past is not None:
            self.past.append(run)
        else:
            self._learn([run], [s for s in served if s is not None])

    def _learn(self, runs: list[Measurement], served: list[ServedEstimate]) -> None:
        started = time.perf_counter()
        self.loop.record(runs, served)
        self.timings["learn"].append(time.perf_counter() - started)


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
    rule on the live features, the limit the request (it needs no fit: its fallback, the training mean, serves only
    rows without a request, and every scored row has one).
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
                "service_member": "request" if e.seconds is None else ("median" if e.fallback else e.member or "?"),
                "extrapolating": e.extrapolating,
                "request": request,
                "request_limit": request,
                "last two_limit": request,
            }
        )
    frame = pd.DataFrame(rows)
    columns = list(last_two.columns)
    X = pd.DataFrame([{c: features[k].get(c, math.nan) for c in columns} for k in keys], columns=columns)
    frame["last two"] = last_two.fit(X, X["request.time"]).predict(X) if len(X) else []
    return frame


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
            "male": float(np.mean(np.abs(np.log(np.maximum(est, MIN_RUN) / run)))),
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
    settings = result["settings"]
    lines = [
        f"Log `{result['log']}`, recording `{result['recording']}`: {result['jobs']} jobs; past = first "
        f"{result['train_fraction']:.0%} ({result['past_jobs']} jobs, cut {result['cut']}); scored: "
        f"{result['scores']['all']['jobs']} runs of >= 1 s after the cut; live features equal to the replay's for "
        f"{result['jobs'] - result['feature_mismatches']}/{result['jobs']} jobs. Service settings: "
        + ", ".join(f"{k} {v}" for k, v in settings.items())
        + ".",
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
    decisions = result["decisions"]
    lines += [
        "",
        "Guard decisions: "
        + ", ".join(f"{k} {v}" for k, v in sorted(decisions["verdicts"].items()))
        + " (triggered by "
        + ", ".join(f"{k} {v}" for k, v in sorted(decisions.get("triggers", {}).items()))
        + "). Serving at "
        "the end: "
        + ", ".join(f"{pair} {s['member']} (v{s['version']})" for pair, s in sorted(decisions["serving"].items()))
        + f"; live online members: {', '.join(decisions['live_members']) or 'none'}.",
    ]
    costs = result["replay"]
    lines += [
        "",
        f"Replay: {costs['cpu_ms_per_job']:.2f} ms CPU per job (process_time, everything: records, features, estimates, "
        f"learning), {costs['wall_s']:.1f} s wall; {costs['retrains']} pair retrains, {costs['train_cpu_s']:.1f} s CPU "
        f"of training; submit_features p50 {costs['submit_features']['p50_ms']:.2f} ms, p99 "
        f"{costs['submit_features']['p99_ms']:.2f} ms; oracle estimate p50 {costs['estimate']['p50_ms']:.2f} ms, p99 "
        f"{costs['estimate']['p99_ms']:.2f} ms; learning a run p50 {costs['learn']['p50_ms']:.2f} ms, p99 "
        f"{costs['learn']['p99_ms']:.2f} ms. Service answers: "
        + ", ".join(f"{k} {v}" for k, v in result["service_models"].items())
        + ".",
    ]
    lines += [
        "",
        "Which member answered the scored jobs, per class: "
        + "; ".join(
            f"{name} " + ", ".join(f"{member} {n}" for member, n in counts.items())
            for name, counts in result.get("members", {}).items()
        )
        + ".",
    ]
    lines += [
        "",
        "| class / member that answered | jobs | MdALE service | last two on the same jobs |",
        "|---|--:|--:|--:|",
        *(
            f"| {key} | {row['jobs']} | {row['service']:.2f} | {row['last two']:.2f} |"
            for key, row in result.get("by_member", {}).items()
        ),
    ]
    if result["losses"]:
        lines += ["", "Where the service loses:", "", *[f"- {loss}" for loss in result["losses"]]]
    return "\n".join(lines) + "\n"


def bench(args: argparse.Namespace) -> dict[str, Any]:
    """Everything for one log (see the module docstring)."""
    log = read_swf(args.log)
    catalog = load_catalog(BUNDLED_DATA / "catalog.yaml", *([args.site_catalog] if args.site_catalog else []))
    result: dict[str, Any] = {
        "log": log.name,
        "train_fraction": args.train_fraction,
        "recording": args.recording,
        "jobs": len(log.jobs),
    }
    with tempfile.TemporaryDirectory() as work:
        settings = WorkerSettings(home=Path(work) / "home", seed=args.seed)
        result["settings"] = {
            "job_class_metric": settings.job_class_metric,
            "drift_min_runs": settings.drift_min_runs,
            "cv_folds": settings.cv_folds,
            "forward_start": settings.forward_start,
            "retrain_min_new_runs": settings.retrain_min_new_runs,
            "retrain_min_new_fraction": settings.retrain_min_new_fraction,
            "limit_quantile": settings.limit_quantile,
        }
        store = MeasurementStore(f"sqlite:///{work}/import.db")
        store.migrate()
        report = ingest_swf(args.log, store, catalog, rejects_dir=Path(work))
        print(
            f"{log.name}: {report.stored} measurements, {len(report.skipped)} skipped, {len(report.rejected)} rejected",
            flush=True,
        )
        measured = {m.run_id: m for m in store.measurements(successful_only=False)}
        store.dispose()
        order, n_past, cut, _ = split(log, args.train_fraction)
        result.update(past_jobs=n_past, cut=datetime.fromtimestamp(log.start_time + cut, UTC).isoformat())
        later = [k for k in order[n_past:] if k in measured]
        scored = {k for k in later if measured[k].wall_seconds >= MIN_RUN}
        live = MeasurementStore(f"sqlite:///{work}/live.db")
        live.migrate()
        loop = ServiceLoop(settings, catalog)
        replayed = Replay(log, JobHistory(live.engine), loop, measured)
        costs = replayed.run(args.recording, order[n_past], scored)
        live.dispose()
    features, served = replayed.features, replayed.served
    result["replay"] = costs
    result["load"] = os.getloadavg()
    result["feature_mismatches"] = mismatches(log, features)
    result["decisions"] = _decisions(loop)
    keys = [k for k in later if k in scored and features[k].get("request.time", 0) > 0]
    result["left_out"] = {
        "not measured or unknown class": len(order) - n_past - len(later),
        "run < 1 s": len(later) - len(scored),
        "no request": len(scored) - len(keys),
    }
    frame = answers(keys, {k: measured[k] for k in keys}, features, served, make_model("last_two_mean"))
    result["service_models"] = dict(Counter(frame["service_model"]).most_common())
    result["members"] = {
        str(name): dict(Counter(group["service_member"]).most_common()) for name, group in frame.groupby("algorithm")
    }
    result["by_member"] = {
        f"{name} / {member}": {m: scores(part)[m]["mdale"] for m in ("service", "last two")} | {"jobs": len(part)}
        for (name, member), part in frame.groupby(["algorithm", "service_member"])
    }
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


def _decisions(loop: ServiceLoop) -> dict[str, Any]:
    """What the guard decided during the replay: counts by verdict, and what served each pair at the end."""
    verdicts = Counter(str(d["decision"]) for d in loop.decisions)
    triggers = Counter(
        "drift" if "live " in str(d["trigger"]) else "new runs" if "new runs" in str(d["trigger"]) else "first"
        for d in loop.decisions
    )
    serving = {
        f"{a}/{p}": {"member": version.champion.tags.get("model_kind"), "version": version.number}
        for (a, p, _), version in loop.book.alias.items()
    }
    return {
        "verdicts": dict(verdicts),
        "triggers": dict(triggers),
        "serving": serving,
        "live_members": sorted(f"{a}/{p}" for a, p, _ in loop.store.live),
        # each decision in order, to say why a class's member served where it lost
        "log": [
            {k: d[k] for k in ("algorithm", "platform", "trigger", "decision", "challenger", "n_rows", "reason")}
            for d in loop.decisions
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, required=True, help="an SWF log (read in place, never copied)")
    parser.add_argument(
        "--train-fraction", type=float, default=0.3, help="the past: this share of the jobs in submit order"
    )
    parser.add_argument(
        "--site-catalog", type=Path, default=None, help="a site catalog naming the log's platforms and job classes"
    )
    parser.add_argument(
        "--recording", choices=tuple(RECORDING), default="submit-and-end", help="what the store learns when"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--markdown", type=Path, default=None)
    args = parser.parse_args()
    if not 0 < args.train_fraction < 1:
        parser.error("--train-fraction must be between 0 and 1")
    result = bench(args)
    text = markdown(result)
    print(text, flush=True)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
