"""Peers on the same folds: Weka 3.6 and FANN's Cascade2 against the zoo, per algorithm and platform (Brandstätter-Müller et al. 2011, Table 2).

1. The bundled measurements (``data/measurements/*.csv``) are ingested into a fresh store under ``--home``
   and the zoo is trained by the pipeline (cross-validated, tracked in MLflow, champions promoted), which
   writes each pair's fold plan to ``HOME/folds/<algorithm>-<platform>.csv``.
2. For each pair and each fold of that plan, train and test ARFF files are written; Debian's Weka 3.6
   builds each classifier with its defaults on the training fold (``-t train.arff -d model -no-cv``; its
   own "Time taken to build model" is the fit time) and predicts the test fold (``-l model -T test.arff
   -p 0``). The class is written in milliseconds, so Weka's three printed decimals keep microseconds
   (every Weka learner here is equivariant to the unit). FANN's Cascade2 runs on the same folds through
   ``benchmarks/fann/driver.py``.
3. Peers' out-of-fold predictions are clipped at zero as the zoo's are (a run time is never negative, and
   the oracle serves clipped answers; it only helps the peers) and scored by ``training.metrics.compute_metrics``
   with each row's training-fold mean as prior, exactly as the zoo's are; the zoo's rows come from its
   MLflow session.
4. The summary sets the champion against the best peer by RAE and by RRSE; each difference gets a 95 %
   interval from a paired bootstrap over jobs (``training.significance``: all repeats of a job resampled
   together, both contenders scored on each resample, the champion's out-of-fold predictions read back
   from its run's ``out_of_fold.csv``). An interval that straddles zero means these runs cannot tell the two apart.
   Each pair's table also has a noise-floor row: every run predicted by the mean of its job's other repeats.

    .venv/bin/python benchmarks/peers.py --jobs 2
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from data.ingest import ingest_file
from predictor.catalog import load_catalog
from predictor.store import MeasurementStore
from training.crossval import check_plan
from training.dataset import TrainingSet, load_training_sets
from training.folds import FoldPlan
from training.metrics import compute_metrics
from training.pipeline import fold_plan_path, run_training
from training.report import latest_session
from training.settings import TrainingSettings
from training.significance import Difference, paired_bootstrap
from training.tracking import OUT_OF_FOLD, load_out_of_fold

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for benchmarks.fann, imported when FANN runs

WEKA_JAR = Path("/usr/share/java/weka.jar")
WEKA = {
    "MultilayerPerceptron": "weka.classifiers.functions.MultilayerPerceptron",
    "LinearRegression": "weka.classifiers.functions.LinearRegression",
    "IsotonicRegression": "weka.classifiers.functions.IsotonicRegression",
    "SimpleLinearRegression": "weka.classifiers.functions.SimpleLinearRegression",
    "PaceRegression": "weka.classifiers.functions.PaceRegression",
    "SMOreg": "weka.classifiers.functions.SMOreg",
    "M5P": "weka.classifiers.trees.M5P",
}
MILLISECONDS = 1000.0


@dataclass(frozen=True)
class Row:
    """One contender's cross-validated result on one pair (out-of-fold predictions kept for peers and the champion)."""

    name: str
    kind: str
    metrics: dict[str, float]
    fit_seconds: float
    predictions: np.ndarray | None = None


# A peer fits on a training fold and predicts a test fold: (X_train, y_train, X_test, fold, workdir) -> (pred, seconds).
Peer = Callable[[pd.DataFrame, np.ndarray, pd.DataFrame, int, Path], tuple[np.ndarray, float]]


def write_arff(path: Path, X: pd.DataFrame, y: np.ndarray) -> None:
    """Numeric features and the class ``y`` (last) as an ARFF file."""
    header = ["@relation runs", *(f"@attribute '{c}' numeric" for c in X.columns), "@attribute wall_ms numeric"]
    body = np.column_stack([X.to_numpy(dtype=float), y])
    lines = [",".join(f"{v:.17g}" for v in row) for row in body]
    path.write_text("\n".join([*header, "@data", *lines]) + "\n")


def weka(classifier: str) -> Peer:
    """Weka ``classifier`` with its default options, built and timed by Weka itself."""

    def run(
        X_train: pd.DataFrame, y_train: np.ndarray, X_test: pd.DataFrame, fold: int, work: Path
    ) -> tuple[np.ndarray, float]:
        train, test, model = work / "train.arff", work / "test.arff", work / f"{classifier}.model"
        write_arff(train, X_train, y_train * MILLISECONDS)
        write_arff(test, X_test, np.zeros(len(X_test)))
        java = ["java", "-cp", str(WEKA_JAR), WEKA[classifier]]
        built = _run([*java, "-t", str(train), "-d", str(model), "-no-cv", "-o"])
        seconds = float(re.search(r"Time taken to build model: ([\d.]+) seconds", built).group(1))
        predicted = _run([*java, "-l", str(model), "-T", str(test), "-p", "0"])
        values = re.findall(r"^\s*\d+\s+\S+\s+(\S+)\s+\S+", predicted.split("=== Predictions")[1], re.MULTILINE)
        if len(values) != len(X_test):
            raise RuntimeError(f"{classifier}: {len(values)} predictions for {len(X_test)} test rows")
        return np.array([float(v) for v in values]) / MILLISECONDS, seconds

    return run


def fann(max_neurons: int) -> Peer:
    """FANN's Cascade2 (the seed's network) through the C driver, seeded per fold."""
    from benchmarks.fann.driver import run_cascade2

    def run(
        X_train: pd.DataFrame, y_train: np.ndarray, X_test: pd.DataFrame, fold: int, work: Path
    ) -> tuple[np.ndarray, float]:
        result = run_cascade2(X_train, y_train, X_test, max_neurons=max_neurons, seed=fold)
        return result.predictions, result.fit_seconds

    return run


def _run(command: list[str]) -> str:
    """stdout of ``command``, which must succeed."""
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[3:5])} failed: {done.stderr.strip()[:500]}")
    return done.stdout


def cross_validate_peer(
    peer: Peer, ts: TrainingSet, plan: FoldPlan, work: Path
) -> tuple[np.ndarray, dict[str, float], float]:
    """``peer``'s out-of-fold predictions on ``plan``, their pooled metrics (priors: training-fold means), fit seconds."""
    predictions, priors, seconds = np.empty_like(ts.y), np.empty_like(ts.y), 0.0
    for fold, (train, test) in enumerate(plan.splits()):
        folder = work / f"fold{fold:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        predicted, fit_seconds = peer(ts.X.iloc[train], ts.y[train], ts.X.iloc[test], fold, folder)
        predictions[test] = np.maximum(predicted, 0.0)
        priors[test] = ts.y[train].mean()
        seconds += fit_seconds
    return predictions, compute_metrics(ts.y, predictions, priors), seconds


@dataclass(frozen=True)
class Pair:
    """Every contender on one (algorithm, platform), best RAE first, and each run's prior (its training folds' mean)."""

    ts: TrainingSet
    priors: np.ndarray
    rows: list[Row]


def champion_out_of_fold(tracking_uri: str, run_id: str, ts: TrainingSet) -> pd.DataFrame:
    """The champion's out-of-fold table, logged with its MLflow run at ``tracking_uri``, checked to be of ``ts``'s runs in order."""
    table = load_out_of_fold(tracking_uri, run_id)
    if table["run_id"].tolist() != ts.run_ids:
        raise RuntimeError(f"{ts.algorithm}/{ts.platform}: the champion's {OUT_OF_FOLD} is not of the pair's runs")
    return table


def repeats_row(ts: TrainingSet, priors: np.ndarray) -> Row:
    """The noise floor of a pair: each run predicted by the mean of its job's other repeats (runs without one left out).

    No model can know a job better than its own repeats do, so a contender near this row is as
    good as the measurements' noise lets anyone be.
    """
    jobs = pd.Series(ts.y).groupby(ts.jobs)
    n, total = jobs.transform("count").to_numpy(), jobs.transform("sum").to_numpy()
    repeated = n > 1
    others = (total[repeated] - ts.y[repeated]) / (n[repeated] - 1)
    return Row(
        "mean of the job's other repeats", "noise floor", compute_metrics(ts.y[repeated], others, priors[repeated]), 0.0
    )


def compare(
    settings: TrainingSettings, ts: TrainingSet, peers: dict[str, tuple[str, Peer]], work: Path, jobs: int
) -> Pair:
    """The zoo's candidates from the latest session and every peer on the pair's saved fold plan."""
    plan = FoldPlan.load(fold_plan_path(settings, ts.algorithm, ts.platform))
    check_plan(ts, plan)
    session = latest_session(settings, ts.algorithm, ts.platform)
    rows = [Row(r.model, "zoo", r.metrics, r.fit_seconds) for r in session.rows if not r.champion]
    champion = next(r for r in session.rows if r.champion)
    table = champion_out_of_fold(settings.resolved_tracking_uri, champion.run_id, ts)
    rows.append(
        Row(champion.model, "zoo *", champion.metrics, champion.fit_seconds, table["predicted_seconds"].to_numpy())
    )

    def one(name: str) -> Row:
        kind, peer = peers[name]
        predictions, metrics, seconds = cross_validate_peer(
            peer, ts, plan, work / f"{ts.algorithm}-{ts.platform}" / name
        )
        return Row(name, kind, metrics, seconds, predictions)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        rows += list(pool.map(one, peers))
    priors = table["prior_seconds"].to_numpy()
    if len(set(ts.jobs)) < len(ts):
        rows.append(repeats_row(ts, priors))
    return Pair(ts, priors, sorted(rows, key=lambda r: r.metrics["rae"]))


def print_pair(pair: Pair) -> None:
    """One Markdown table: every contender of a pair."""
    ts = pair.ts
    print(f"\n### {ts.algorithm} on {ts.platform} ({len(ts)} runs, {len(ts.feature_names)} features)\n")
    print("| model | from | CC | MAE (s) | RMSE (s) | RAE % | RRSE % | fit s (all folds) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in pair.rows:
        m = r.metrics
        print(
            f"| {r.name} | {r.kind} | {m['cc']:.4f} | {m['mae']:.4g} | {m['rmse']:.4g} | {m['rae']:.2f} | {m['rrse']:.2f} | {r.fit_seconds:.2f} |"
        )


def champion_against(pair: Pair, peer: Row, metric: str) -> Difference:
    """The champion's ``metric`` minus ``peer``'s, with a 95 % interval from resampling the pair's jobs."""
    champion = next(r for r in pair.rows if r.kind == "zoo *")
    ts = pair.ts
    return paired_bootstrap(ts.y, pair.priors, champion.predictions, peer.predictions, ts.jobs, censored=ts.censored)[
        metric
    ]


def print_summary(pairs: list[Pair]) -> None:
    """Champion against the best peer on RAE and on RRSE, per pair, each difference with its bootstrap interval."""
    print("\n### Champion against the best peer\n")
    print(
        "| algorithm | platform | champion | RAE % | best peer by RAE | RAE % | difference [95 % interval] "
        "| RRSE % | best peer by RRSE | RRSE % | difference [95 % interval] | beats both |"
    )
    print("| --- | --- | --- | ---: | --- | ---: | ---: | ---: | --- | ---: | ---: | --- |")
    for pair in pairs:
        champion = next(r for r in pair.rows if r.kind == "zoo *")
        peers = [r for r in pair.rows if r.predictions is not None and r.kind != "zoo *"]
        cells, wins = [], True
        for metric in ("rae", "rrse"):
            best = min(peers, key=lambda r: r.metrics[metric])
            d = champion_against(pair, best, metric)
            wins &= champion.metrics[metric] < best.metrics[metric]
            cells.append(
                f"{champion.metrics[metric]:.2f} | {best.name} | {best.metrics[metric]:.2f} | {d.observed:+.2f} [{d.low:+.2f}, {d.high:+.2f}]"
            )
        ts = pair.ts
        print(f"| {ts.algorithm} | {ts.platform} | {champion.name} | {' | '.join(cells)} | {'yes' if wins else 'NO'} |")


def available_peers(names: list[str], max_neurons: int) -> dict[str, tuple[str, Peer]]:
    """The requested peers that can run here (Weka needs java and weka.jar; FANN its headers and gcc)."""
    from benchmarks.fann.driver import fann_available

    peers: dict[str, tuple[str, Peer]] = {}
    for name in names:
        if name in WEKA and WEKA_JAR.exists() and shutil.which("java"):
            peers[name] = ("Weka 3.6", weka(name))
        elif name == "Cascade2" and fann_available():
            peers[name] = ("FANN 2.2", fann(max_neurons))
        else:
            print(f"note: peer {name} cannot run here (missing weka/java or libfann-dev/gcc); skipped", file=sys.stderr)
    return peers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="PREDICTOR_HOME to train into (default: a temporary folder)")
    parser.add_argument("--data", type=Path, nargs="*", help="measurement CSVs (default: data/measurements/*.csv)")
    parser.add_argument("--algorithm", action="append", help="only these algorithms (repeatable)")
    parser.add_argument("--reuse", action="store_true", help="skip ingest and training: use --home's latest sessions")
    parser.add_argument("--peers", nargs="*", default=[*WEKA, "Cascade2"], help="peers to run")
    parser.add_argument("--fann-max-neurons", type=int, default=30)
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=2, help="training processes, and peers run at once")
    args = parser.parse_args()
    if args.reuse and args.home is None:
        parser.error("--reuse needs --home")
    home = args.home or Path(tempfile.mkdtemp(prefix="peers-"))
    settings = TrainingSettings(home=home, cv_folds=args.folds, n_jobs=args.jobs)
    store = MeasurementStore(settings.resolved_store_url)
    store.migrate()
    if not args.reuse:
        catalog = load_catalog(*settings.catalog_paths)
        for path in args.data or sorted((ROOT / "data" / "measurements").glob("*.csv")):
            report = ingest_file(path, store, catalog, rejects_dir=home)
            print(f"ingested {path.name}: {report.stored} runs", file=sys.stderr)
        outcomes = run_training(settings, store, algorithms=args.algorithm)
        print(f"trained {len(outcomes)} pairs into {home}", file=sys.stderr)
    peers = available_peers(args.peers, args.fann_max_neurons)
    pairs = []
    for ts in load_training_sets(store, args.algorithm):
        pairs.append(compare(settings, ts, peers, home / "peers", args.jobs))
        print_pair(pairs[-1])
    print_summary(pairs)


if __name__ == "__main__":
    main()
