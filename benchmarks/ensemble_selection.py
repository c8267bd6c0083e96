"""Does the greedy ensemble help once selection itself is cross-validated? (issue 30, item 16)

    python benchmarks/ensemble_selection.py
    git worktree add /tmp/base <commit> && PYTHONPATH=/tmp/base python benchmarks/ensemble_selection.py   # an older revision

Nested cross-validation on the bundled runs (``data/measurements/realtools.csv``, platform ``cpu1``): per
program, 5 outer folds grouped by job; in each, training's own steps run on the other folds alone (a fold
plan of 5, every member cross-validated, the ensemble built by :func:`training.ensemble.cross_validated_ensemble`,
the champion picked by :func:`training.champions.best_candidate` on RAE), the winner is refitted on those
folds (the ensemble as its members' refits, blended with its weights) and answers the outer fold. Printed:
the pooled outer-fold RAE (%) of three selections on the same folds: ``always``, the ensemble always a
candidate (training before issue 30's item 16); ``leads``, a candidate only when
:func:`training.ensemble.leads` finds its nested lead over the best member beyond chance (training now,
confidence 0.9, the guard's default); ``never``; and how many of the 5 outer folds the ensemble won under each rule. Members are the cheap ones of the zoo (:data:`MEMBERS`: no networks, no SVR, no cascade)
to keep it to minutes on two cores. ``training`` is imported from ``PYTHONPATH`` when set.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from models.ensemble import ENSEMBLE
from predictor.settings import BUNDLED_DATA
from training.champions import best_candidate
from training.crossval import CVResult, cross_validate, refit
from training.dataset import TrainingSet, training_set_from_frame
from training.ensemble import blend, cross_validated_ensemble, leads
from training.folds import FoldPlan
from training.metrics import compute_metrics
from training.tracking import Candidate

MEMBERS = (
    "mean",
    "linear",
    "linear_log",
    "lad_log",
    "quadratic_log",
    "simple_linear_log",
    "isotonic_log",
    "lightgbm",
    "lightgbm_log",
    "lightgbm_log_smeared",
)
CONFIDENCE = 0.9  # PREDICTOR_GUARD_CONFIDENCE's default, which training passes to leads()
RULES = ("always", "leads", "never")


def subset(ts: TrainingSet, rows: np.ndarray) -> TrainingSet:
    """The runs of ``ts`` at ``rows`` (a mask), as a training set of their own."""
    return TrainingSet(
        ts.algorithm,
        ts.platform,
        ts.X[rows].reset_index(drop=True),
        ts.y[rows],
        ts.feature_names,
        [r for r, keep in zip(ts.run_ids, rows, strict=True) if keep],
        ts.censored[rows],
    )


def inner_selection(
    inner: TrainingSet, members: list[str], seed: int
) -> tuple[dict[str, CVResult], dict[str, int], bool]:
    """What training judges on ``inner``: every member's cross-validation and the ensemble's, its weights, whether it leads."""
    plan = FoldPlan.create(inner.run_ids, 5, seed, groups=inner.jobs)
    results = {name: cross_validate(name, inner, plan, seed=seed) for name in members}
    ensemble, weights = cross_validated_ensemble(list(results.values()), inner, plan, "rae")
    ahead = leads(ensemble, list(results.values()), inner, "rae", CONFIDENCE)
    results[ENSEMBLE] = ensemble
    return results, dict(weights), ahead


def winner(results: dict[str, CVResult], names: list[str]) -> str:
    """The candidate :func:`best_candidate` picks among ``names``."""
    return best_candidate([Candidate(n, "", results[n].metrics) for n in names], "rae").model_name


def nested(ts: TrainingSet, members: list[str], seed: int) -> dict[str, object]:
    """Pooled outer-fold RAE of the winner under each of :data:`RULES`, and the outer folds the ensemble won under each."""
    outer = FoldPlan.create(ts.run_ids, 5, seed, groups=ts.jobs)
    served = {rule: np.empty_like(ts.y) for rule in RULES}
    won = dict.fromkeys(RULES, 0)
    priors = np.empty_like(ts.y)
    for fold in range(outer.n_folds):
        test = outer.folds == fold
        inner = subset(ts, ~test)
        results, weights, ahead = inner_selection(inner, members, seed)
        candidates = {
            "always": [*members, ENSEMBLE],
            "leads": [*members, ENSEMBLE] if ahead else members,
            "never": members,
        }
        picks = {rule: winner(results, names) for rule, names in candidates.items()}
        refits = {name: refit(name, inner, seed=seed) for name in {*picks.values(), *weights} - {ENSEMBLE}}
        answers = {
            name: np.maximum(np.asarray(model.predict(ts.X[test]), dtype="float64"), 0.0)
            for name, model in refits.items()
        }
        answers[ENSEMBLE] = blend(answers, weights)  # type: ignore[arg-type]
        for rule, pick in picks.items():
            served[rule][test] = answers[pick]
            won[rule] += pick == ENSEMBLE
        priors[test] = inner.y.mean()
    rae = {rule: compute_metrics(ts.y, served[rule], priors)["rae"] for rule in RULES}
    return {"program": ts.algorithm, "runs": len(ts), "rae": rae, "won": won, "folds": outer.n_folds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", default="cpu1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--members", default=",".join(MEMBERS), help="comma-separated zoo members")
    parser.add_argument("--algorithms", default=None, help="comma-separated programs (default: every bundled one)")
    args = parser.parse_args()
    frame = pd.read_csv(BUNDLED_DATA / "measurements" / "realtools.csv", low_memory=False)
    frame = frame[frame["platform"] == args.platform]
    if args.algorithms:
        frame = frame[frame["algorithm"].isin(args.algorithms.split(","))]
    frame = frame.drop(columns=[c for c in frame.columns if c.startswith("param.")]).rename(
        columns=lambda c: c.removeprefix("feature.")
    )
    members = args.members.split(",")
    print(
        f"{'program':<12} {'runs':>5} "
        + " ".join(f"{'RAE ' + rule:>11}" for rule in RULES)
        + "  ensemble won (always, leads)"
    )
    for algorithm, runs in frame.groupby("algorithm", sort=True):
        r = nested(training_set_from_frame(runs, str(algorithm), args.platform), members, args.seed)
        rae, won = r["rae"], r["won"]
        print(
            f"{r['program']:<12} {r['runs']:>5} "
            + " ".join(f"{rae[rule]:>11.1f}" for rule in RULES)  # type: ignore[index]
            + f"  {won['always']}/{r['folds']}, {won['leads']}/{r['folds']}",
            flush=True,
        )  # type: ignore[index]


if __name__ == "__main__":
    main()
