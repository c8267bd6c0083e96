"""Idle-time probing, measured: learning curves on real programs, and probes in the simulated NCBI-like day.

    .venv/bin/python benchmarks/probing.py curves --pool HOME --heldout HOME [--seeds 0 1 2]
    .venv/bin/python benchmarks/probing.py report
    .venv/bin/python benchmarks/probing.py ncbi [--hours 25] [--seeds 0 1 2]

``curves``: pool-based active learning on real runs. Every candidate of ``data/plans/probe.yaml`` was
run once into the ``--pool`` home (``predictor sweep --plan data/plans/probe.yaml``) and the held-out
jobs of ``data/plans/probe-heldout.yaml`` into the ``--heldout`` home: other input files, sizes
between the candidates' and above the bundled sweep's range. Each strategy then picks runs from the
pool, in batches, and after each batch the pair's model is fitted on the runs picked so far and
judged on the held-out runs: RAE and underestimate rate, overall and on the jobs above the range of
the bundled dataset (``data/measurements/realtools.csv``). Strategies: ``random`` (a seeded
permutation of the pool), ``sweep`` (the bundled sweep's own jobs in the order it ran them, as
recorded in realtools.csv), and each acquisition rule of :mod:`data.acquisition` by value alone
and by value per estimated second. Every strategy but ``sweep`` starts from the same seeded random
batch. The model at each point is the best by 3-fold RAE of three fast zoo members
(:data:`data.acquisition.COMMITTEE`: a line, a quadratic and boosted trees, all on log
seconds), served as the oracle serves it (training envelope, power law outside it): the whole zoo
at every point of every curve would take hours on this machine; these three fit in milliseconds
and span the zoo's shapes. Writes ``benchmarks/results/probing_curves.json`` and ``.svg``.

``ncbi``: the NCBI-like workload (Kontothanassis & Goddeau 2004) simulated with and without idle-time probes (EDF, noisy
estimates); see :func:`ncbi_day`.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import KFold, cross_val_predict

sys.path.insert(0, str(Path(__file__).resolve().parent))

from apisetup import ROOT

from data.acquisition import COMMITTEE, RULES, rank
from models.zoo import make_model
from predictor.catalog import Catalog, load_catalog
from predictor.envelope import TrainingEnvelope
from predictor.oracle import RuntimeOracle, serve_model
from predictor.registry import Champion
from predictor.settings import BUNDLED_DATA
from predictor.store import MeasurementStore
from scheduler.probing import IdleProber, ProbeBudget, RankedCandidates
from scheduler.specs import make_policy
from simulator.scenarios import parse_estimates
from simulator.simulate import SimResult, simulate
from simulator.workload import JobSpec, Workload
from simulator.workloads import ncbi
from training.dataset import training_set_from_frame
from training.metrics import compute_metrics

RESULTS = ROOT / "benchmarks" / "results"
PAIRS = [("mafft", "cpu1"), ("mafft", "cpu2"), ("blastp", "cpu1"), ("blastp", "cpu2")]
POINTS = (10, 20, 30, 40, 60, 80, 100, 130, 160, 200)
FIRST_BATCH = 10


@dataclass(frozen=True)
class PairData:
    """One pair's pool and held-out runs over the pool's informative features; which held-out jobs lie above the old range."""

    pool: pd.DataFrame
    pool_seconds: np.ndarray
    heldout: pd.DataFrame
    heldout_seconds: np.ndarray
    above: np.ndarray
    sweep_order: list[int]


def _job_key(params: dict) -> tuple:
    """A job's parameters with input files named by their file (or database folder) name, numbers as numbers."""
    out = []
    for name, value in sorted(params.items()):
        if isinstance(value, str) and "/" in value:
            path = Path(value)
            value = path.parent.name if path.name in ("db", "seqs.fa") else path.name
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            value = float(value)
        out.append((name, value))
    return tuple(out)


def _bundled(algorithm: str, platform: str) -> pd.DataFrame:
    """The bundled sweep's runs of the pair, in the order they were recorded."""
    frame = pd.read_csv(BUNDLED_DATA / "measurements" / "realtools.csv", low_memory=False)
    frame = frame[(frame["algorithm"] == algorithm) & (frame["platform"] == platform)]
    return frame.sort_values("recorded_at", kind="stable")


def load_pair(pool_store: MeasurementStore, heldout_store: MeasurementStore, algorithm: str, platform: str) -> PairData:
    """The pair's pool and held-out runs (finished ones), the sweep's order over the pool, and the above-range mask."""
    pool_frame = pool_store.frame(algorithm, platform)
    held_frame = heldout_store.frame(algorithm, platform)
    features = training_set_from_frame(pool_frame, algorithm, platform).feature_names
    pool_frame = pool_frame.sort_values("run_id", kind="stable").reset_index(drop=True)
    bundled = _bundled(algorithm, platform)
    params = [c for c in bundled.columns if c.startswith("param.")]
    defaults = {name: p.default for name, p in CATALOG.algorithm(algorithm).parameters.items() if p.default is not None}
    index = {_job_key(defaults | p): i for i, p in enumerate(pool_frame["params"])}
    order = []
    for _, row in bundled.iterrows():
        key = _job_key(defaults | {c.removeprefix("param."): row[c] for c in params if not pd.isna(row[c])})
        if key in index and index[key] not in order:
            order.append(index[key])
    sizes = [c for c in features if c.endswith((".residues", ".sequences"))]
    top = {c: bundled[f"feature.{c}"].max() for c in sizes}
    above = np.logical_or.reduce([held_frame[c].to_numpy() > top[c] for c in sizes])
    return PairData(
        pool=pool_frame[features].astype("float64").fillna(0.0),
        pool_seconds=pool_frame["wall_seconds"].to_numpy(dtype="float64"),
        heldout=held_frame.reindex(columns=features).astype("float64").fillna(0.0),
        heldout_seconds=held_frame["wall_seconds"].to_numpy(dtype="float64"),
        above=above,
        sweep_order=order,
    )


def served_seconds(
    algorithm: str,
    platform: str,
    X: pd.DataFrame,
    y: np.ndarray,
    test: pd.DataFrame,
    seed: int,
    catalog: Catalog | None = None,
) -> np.ndarray:
    """What the oracle would serve for ``test`` after training on (X, y): the best member by 3-fold RAE, with its envelope."""
    folds = KFold(3, shuffle=True, random_state=seed)
    best, best_rae = COMMITTEE[0], math.inf
    for name in COMMITTEE:
        oof = cross_val_predict(make_model(name, seed=seed), X, y, cv=folds)
        rae = compute_metrics(y, oof, np.full(len(y), y.mean()))["rae"]
        if rae < best_rae:
            best, best_rae = name, rae
    model = make_model(best, seed=seed).fit(X, y)
    champion = Champion(
        algorithm, platform, best, "1", "sklearn", list(X.columns), model, envelope=TrainingEnvelope.fit(X, y)
    )
    oracle = RuntimeOracle(catalog or CATALOG, {}, coverage=0.9, limit_quantile=0.95)
    oracle.swap({(algorithm, platform): serve_model(champion, X.to_numpy())})
    answer = oracle.estimate_matrix(algorithm, list(X.columns), test.to_numpy(), [platform])[0]
    fallback = float(
        y.mean()
    )  # a non-finite answer: the service falls back to the pair's mean run time (profile table)
    return np.array([fallback if s is None else s for s in answer.seconds], dtype="float64")


def picks(data: PairData, strategy: str, seed: int, points: list[int]) -> list[int]:
    """The pool rows a strategy measures, in order, up to the last point."""
    n = len(data.pool)
    if strategy == "sweep":
        return data.sweep_order[: points[-1]]
    order = list(np.random.default_rng(seed).permutation(n))
    if strategy == "random":
        return order[: points[-1]]
    rule, _, per_second = strategy.partition("/")
    chosen = order[:FIRST_BATCH]
    for target in points[1:]:
        left = [i for i in range(n) if i not in set(chosen)]
        batch = rank(
            data.pool.iloc[left].reset_index(drop=True),
            data.pool.iloc[chosen],
            data.pool_seconds[chosen],
            rule=rule,
            n=target - len(chosen),
            cost_weight=1.0 if per_second else 0.0,
            seed=seed,  # type: ignore[arg-type]
        )
        chosen += [left[p.index] for p in batch]
    return chosen


def curve(algorithm: str, platform: str, data: PairData, strategy: str, seed: int) -> list[dict]:
    """RAE and underestimate rate on the held-out runs (all, and above the old range) at each point of the curve."""
    points = [p for p in POINTS if p <= (len(data.sweep_order) if strategy == "sweep" else len(data.pool))]
    order = picks(data, strategy, seed, points)
    rows = []
    for k in points:
        chosen = order[:k]
        X, y = data.pool.iloc[chosen], data.pool_seconds[chosen]
        pred = served_seconds(algorithm, platform, X, y, data.heldout, seed)
        prior = np.full(len(data.heldout_seconds), y.mean())
        every = compute_metrics(data.heldout_seconds, pred, prior)
        high = compute_metrics(data.heldout_seconds[data.above], pred[data.above], prior[data.above])
        rows.append(
            {
                "algorithm": algorithm,
                "platform": platform,
                "strategy": strategy,
                "seed": seed,
                "runs": k,
                "machine_seconds": float(y.sum()),
                "rae": every["rae"],
                "underestimate_rate": every["underestimate_rate"],
                "rae_above": high["rae"],
                "underestimate_above": high["underestimate_rate"],
            }
        )
    return rows


STRATEGIES = ("random", "sweep", *RULES, *(f"{r}/s" for r in RULES))
CATALOG = load_catalog(BUNDLED_DATA / "catalog.yaml")


def curves(pool_home: Path, heldout_home: Path, seeds: list[int]) -> pd.DataFrame:
    pool_store = MeasurementStore(f"sqlite:///{pool_home / 'store.db'}")
    heldout_store = MeasurementStore(f"sqlite:///{heldout_home / 'store.db'}")
    rows = []
    for algorithm, platform in PAIRS:
        data = load_pair(pool_store, heldout_store, algorithm, platform)
        print(
            f"{algorithm}@{platform}: pool {len(data.pool)}, held-out {len(data.heldout)} ({int(data.above.sum())} above the old range), "
            f"sweep order {len(data.sweep_order)}",
            flush=True,
        )
        for strategy in STRATEGIES:
            for seed in seeds if strategy != "sweep" else seeds[:1]:
                rows += curve(algorithm, platform, data, strategy, seed)
    return pd.DataFrame(rows)


def table(frame: pd.DataFrame) -> str:
    """Per pair and strategy, the mean over seeds at 40, 100 and the pool's last point: RAE all / above range, underestimates."""
    lines = [
        "| pair | strategy | runs | RAE % | RAE above % | under % | under above % | machine s |",
        "|" + " --- |" * 8,
    ]
    for (algorithm, platform, strategy), group in frame.groupby(["algorithm", "platform", "strategy"], sort=False):
        last = int(group["runs"].max())
        for k in sorted({40, 100, last} & set(group["runs"])):
            mean = group[group["runs"] == k].mean(numeric_only=True)
            lines.append(
                f"| {algorithm}@{platform} | {strategy} | {k} | {mean['rae']:.1f} | {mean['rae_above']:.1f} | "
                f"{100 * mean['underestimate_rate']:.0f} | {100 * mean['underestimate_above']:.0f} | {mean['machine_seconds']:.0f} |"
            )
    return "\n".join(lines)


def savings(frame: pd.DataFrame) -> str:
    """Per pair: random's mean error at its last point, and the fewest runs at which each strategy's mean is as low."""
    lines = [
        "| pair | metric | random at its last point | " + " | ".join(s for s in STRATEGIES if s != "random") + " |",
        "|" + " --- |" * (2 + len(STRATEGIES)),
    ]
    for (algorithm, platform), pair in frame.groupby(["algorithm", "platform"], sort=False):
        means = pair.groupby(["strategy", "runs"])[["rae", "rae_above"]].mean()
        last = int(pair[pair["strategy"] == "random"]["runs"].max())
        for metric in ("rae", "rae_above"):
            goal = float(means.loc[("random", last), metric])
            cells = []
            for strategy in STRATEGIES[1:]:
                curve = means.loc[strategy, metric]
                reached = [int(k) for k, v in curve.items() if v <= goal]
                cells.append(str(reached[0]) if reached else f"not by {int(curve.index.max())}")
            lines.append(f"| {algorithm}@{platform} | {metric} | {goal:.1f} % at {last} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report(frame: pd.DataFrame) -> None:
    """The figure, the table and the savings, from a frame of curve points."""
    figure(frame, RESULTS / "probing_curves.svg")
    print(table(frame))
    print()
    print(savings(frame))


def figure(frame: pd.DataFrame, path: Path) -> None:
    """RAE (all held-out runs, and those above the old range) against runs measured: one column per pair, mean over seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = [
        ("rae", "RAE %, all held-out"),
        ("rae_above", "RAE %, above old range"),
        ("underestimate_rate", "underestimate rate"),
    ]
    fig, axes = plt.subplots(len(metrics), len(PAIRS), figsize=(4.2 * len(PAIRS), 3.2 * len(metrics)), squeeze=False)
    for col, (algorithm, platform) in enumerate(PAIRS):
        pair = frame[(frame["algorithm"] == algorithm) & (frame["platform"] == platform)]
        for row, (metric, label) in enumerate(metrics):
            ax = axes[row][col]
            for strategy in STRATEGIES:
                lines = pair[pair["strategy"] == strategy].groupby("runs")[metric]
                if len(pair[pair["strategy"] == strategy]) == 0:
                    continue
                mean, low, high = lines.mean(), lines.min(), lines.max()
                ax.plot(mean.index, mean.values, marker=".", label=strategy)
                ax.fill_between(mean.index, low.values, high.values, alpha=0.15)
            ax.set_title(f"{algorithm} on {platform}" if row == 0 else "")
            ax.set_xlabel("runs measured" if row == len(metrics) - 1 else "")
            ax.set_ylabel(label if col == 0 else "")
            if metric != "underestimate_rate":
                ax.set_yscale("log")
                ax.set_ylim(
                    top=min(ax.get_ylim()[1], 400.0)
                )  # a first batch of 10 can extrapolate wildly: the scale is for the rest
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)


def _runs(
    workload: Workload, result: SimResult, probes: list
) -> dict[tuple[str, str], tuple[pd.DataFrame, np.ndarray]]:
    """What the store holds at the end of the day, per pair: the history, every real run that finished, the finished probes."""
    rows: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for m in [*workload.history, *(p for p in probes if p.succeeded)]:
        rows.setdefault((m.algorithm, m.platform), []).append((m.features["query.length"], m.wall_seconds))
    lengths = {j.id: j.features["query.length"] for j in workload.jobs}
    for s in result.segments:
        if s.outcome == "done":
            rows.setdefault((s.algorithm, s.platform), []).append((lengths[s.job], s.end - s.start))
    return {
        pair: (pd.DataFrame({"query.length": [r[0] for r in v]}), np.array([r[1] for r in v]))
        for pair, v in rows.items()
    }


def _model_error(workload: Workload, runs: dict, tests: dict[str, Workload], seed: int) -> dict[str, float]:
    """RAE and underestimate rate of the end-of-day models (every pair) on each test set's jobs, pooled over pairs."""
    catalog = ncbi.catalog(tuple(workload.cluster.platforms))
    out = {}
    for label, test in tests.items():
        truth, served, prior = [], [], []
        for (algorithm, platform), (X, y) in sorted(runs.items()):
            jobs = [j for j in test.jobs if j.algorithm == algorithm]
            if not jobs:
                continue
            features = pd.DataFrame({"query.length": [j.features["query.length"] for j in jobs]})
            served.append(served_seconds(algorithm, platform, X, y, features, seed, catalog))
            truth.append(np.array([j.true_times[platform] for j in jobs]))
            prior.append(np.full(len(jobs), y.mean()))
        metrics = compute_metrics(np.concatenate(truth), np.concatenate(served), np.concatenate(prior))
        out[f"rae_{label}"], out[f"under_{label}"] = metrics["rae"], metrics["underestimate_rate"]
    return out


def ncbi_day(hours: float, seed: int, budget: float, cap: float) -> dict:
    """One NCBI-like day under EDF with the zoo's fitted estimates, without and with idle-time probes (coverage rule, per second).

    Probes: each program at 16 query lengths from 20 to 20,000 residues, once per machine type, within ``budget``
    machine-seconds per type per hour and ``cap`` seconds each. The scheduler's estimates do not learn during the
    day, so the schedules differ only by the probes; the end-of-day models (history + the day's finished runs,
    + the probes) are judged on fresh jobs of the same mix and on long queries (5,000-20,000 residues).
    """
    workload = ncbi.generate(hours=hours, seed=seed)
    types = tuple(workload.cluster.platforms)
    estimates = parse_estimates("model")
    plain = simulate(workload, make_policy("edf"), estimates.oracle(workload))
    known: dict = {}
    for m in workload.history:
        known.setdefault((m.algorithm, m.platform), []).append((dict(m.features), m.wall_seconds))
    source = RankedCandidates(ncbi.probe_candidates(types, seed), known)
    prober = IdleProber(
        source,
        {t: ProbeBudget(budget, cap) for t in types},
        duration=lambda probe, platform: probe.true_times[platform],
    )
    probed = simulate(workload, make_policy("edf"), estimates.oracle(workload), prober=prober)
    before = {j.id: j.start for j in plain.jobs}
    later = sum(j.start is not None and before[j.id] is not None and j.start > before[j.id] + 1e-9 for j in probed.jobs)
    earlier = sum(
        j.start is not None and before[j.id] is not None and j.start < before[j.id] - 1e-9 for j in probed.jobs
    )
    span = max(s.end for s in plain.segments) - min(j.submit for j in workload.jobs)
    busy = sum(s.end - s.start for s in plain.segments)
    idle = span * len(workload.cluster.machines) - busy
    probe_seconds = sum(r.end - r.start for r in probed.probes)
    fresh = ncbi.generate(hours=1.0, seed=1000 + seed, history_runs=1)
    rng = np.random.default_rng(seed)
    long_jobs = []
    for k, length in enumerate(np.geomspace(5000.0, 20000.0, 40)):
        for name in ncbi.PROGRAMS:
            complexity = rng.lognormal(0.0, ncbi.COMPLEXITY_SIGMA, 1)
            times = {t: float(ncbi.true_seconds(name, t, np.array([length]), complexity)[0]) for t in types}
            long_jobs.append(JobSpec(f"long-{name}-{k}", 0.0, name, times, features={"query.length": float(length)}))
    tests = {"fresh": fresh, "long": Workload("long", long_jobs, fresh.cluster)}
    without = _model_error(workload, _runs(workload, plain, []), tests, seed)
    with_probes = _model_error(workload, _runs(workload, probed, source.measurements), tests, seed)
    outcomes = {k: sum(r.outcome == k for r in probed.probes) for k in ("done", "capped", "cancelled")}
    return {
        "seed": seed,
        "jobs": len(workload.jobs),
        "later": later,
        "earlier": earlier,
        "idle_machine_s": idle,
        "probe_machine_s": probe_seconds,
        "probe_share_of_idle": probe_seconds / idle,
        "probes": outcomes,
        "without": without,
        "with": with_probes,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("curves", help="learning curves on real runs")
    c.add_argument("--pool", type=Path, required=True, help="PREDICTOR_HOME holding the measured pool")
    c.add_argument("--heldout", type=Path, required=True, help="PREDICTOR_HOME holding the held-out runs")
    c.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    sub.add_parser(
        "report", help="the curves' table, savings and figure again, from benchmarks/results/probing_curves.json"
    )
    d = sub.add_parser("ncbi", help="probes in the simulated NCBI-like day")
    d.add_argument("--hours", type=float, default=25.0)
    d.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    d.add_argument("--budget", type=float, default=1800.0, help="probe machine-seconds per machine type per hour")
    d.add_argument("--cap", type=float, default=300.0, help="seconds one probe may run")
    args = parser.parse_args(argv)
    if args.command == "ncbi":
        days = []
        for seed in args.seeds:
            days.append(ncbi_day(args.hours, seed, args.budget, args.cap))
            print(json.dumps(days[-1]), flush=True)
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "probing_ncbi.json").write_text(json.dumps(days, indent=1))
    if args.command == "curves":
        frame = curves(args.pool, args.heldout, args.seeds)
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "probing_curves.json").write_text(frame.to_json(orient="records", indent=1))
        report(frame)
    if args.command == "report":
        report(pd.read_json(RESULTS / "probing_curves.json"))


if __name__ == "__main__":
    main()
