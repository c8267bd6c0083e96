"""What the simulated scheduler is told: the truth, fitted models, noisy truth, users' requests, or nothing.

``--estimates`` values: ``oracle`` (true times), ``model[:zoo-member]`` (a zoo model
per algorithm and platform fitted on the workload's history, the same
:class:`predictor.registry.Champion` objects the service's runtime oracle calls),
``noisy:SIGMA`` (true times x a lognormal factor), ``none`` (no estimates),
``requested`` (the time the user asked for, where the workload has one), and
``service[:OPTIONS]`` (the product itself: champions chosen by the real training pipeline,
retrained as jobs end; :mod:`scheduler.learning`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import pandas as pd

from predictor.domain import Measurement
from predictor.registry import Champion
from scheduler.oracles import BlindOracle, NoisyOracle, Oracle, TableOracle, job_key
from scheduler.policy import split_spec
from scheduler.workload import JobSpec, Workload

DEFAULT_MODEL = "linear_log"


def truth(workload: Workload) -> TableOracle:
    """The true run time of every job on every platform that can run it."""
    return TableOracle({job_key(j.algorithm, j.params): j.true_times for j in workload.jobs}, "oracle")


def requested(workload: Workload) -> TableOracle:
    """The user's requested time (``params['requested_time']``) on every platform; unknown where absent or not positive."""
    table = {}
    for j in workload.jobs:
        asked = j.params.get("requested_time")
        value = float(asked) if asked is not None and float(asked) > 0 else None
        table[job_key(j.algorithm, j.params)] = {p: value for p in j.true_times}
    return TableOracle(table, "requested")


def fit_champions(history: Sequence[Measurement], model: str = DEFAULT_MODEL, seed: int = 0) -> dict[tuple[str, str], Champion]:
    """One fitted zoo ``model`` per (algorithm, platform) of ``history``, wrapped as champions."""
    from models.zoo import make_model

    groups: dict[tuple[str, str], list[Measurement]] = defaultdict(list)
    for m in history:
        if m.succeeded:
            groups[(m.algorithm, m.platform)].append(m)
    out = {}
    for (algorithm, platform), runs in sorted(groups.items()):
        names = sorted({name for r in runs for name in r.features})
        frame = pd.DataFrame([[r.features.get(n, np.nan) for n in names] for r in runs], columns=names)
        fitted = make_model(model, seed=seed).fit(frame, np.array([r.wall_seconds for r in runs]))
        out[(algorithm, platform)] = Champion(
            algorithm=algorithm, platform=platform, name=f"sim-{model}-{algorithm}-{platform}", version="fitted",
            flavor="sklearn", feature_names=names, model=fitted,
        )  # fmt: skip
    return out


def predicted(jobs: Sequence[JobSpec], champions: dict[tuple[str, str], Champion], label: str) -> TableOracle:
    """Each job's estimate from the champion of its (algorithm, platform), predicted in one batch per pair.

    Gives the numbers :class:`predictor.oracle.RuntimeOracle` gives for the same champions and features, and
    leaves a platform without a champion unknown.
    """
    table: dict[str, dict[str, float | None]] = {job_key(j.algorithm, j.params): dict.fromkeys(j.true_times) for j in jobs}
    by_pair: dict[tuple[str, str], list[JobSpec]] = defaultdict(list)
    for j in jobs:
        for platform in j.true_times:
            by_pair[(j.algorithm, platform)].append(j)
    for pair, members in by_pair.items():
        champion = champions.get(pair)
        if champion is None:
            continue
        rows = [[float((j.features or {}).get(n, np.nan)) for n in champion.feature_names] for j in members]
        values = np.maximum(champion.model.predict(pd.DataFrame(rows, columns=champion.feature_names)), 0.0)
        for j, value in zip(members, values.tolist()):
            table[job_key(j.algorithm, j.params)][pair[1]] = value
    return TableOracle(table, label)


def oracle_for(workload: Workload, spec: str, seed: int = 0) -> Oracle:
    """The oracle named by an ``--estimates`` value (see the module docstring)."""
    name, _, arg = spec.partition(":")
    if name == "oracle":
        return truth(workload)
    if name == "none":
        return BlindOracle(truth(workload))
    if name == "requested":
        return requested(workload)
    if name == "noisy":
        try:
            sigma = float(arg or 0.5)
        except ValueError:
            raise ValueError(f"noisy:SIGMA needs a number, got {arg!r}") from None
        return NoisyOracle(truth(workload), sigma, seed)
    if name == "model":
        if not workload.history:
            raise ValueError(f"workload {workload.name} has no history to fit a model on")
        member = arg or DEFAULT_MODEL
        return predicted(workload.jobs, fit_champions(workload.history, member, seed), f"model:{member}")
    if name == "service":
        return learning_oracle(workload, spec, seed)
    raise ValueError(f"unknown estimates {spec!r}: use oracle, model[:MEMBER], service[:OPTIONS], noisy:SIGMA, none or requested")


def learning_oracle(workload: Workload, spec: str, seed: int = 0) -> Oracle:
    """``service[:models=a+b,folds=5,min_new_runs=20,min_new_fraction=0.5,drift_every=10]``: the product, learning online."""
    from predictor.settings import Settings
    from scheduler.learning import LearningOptions, LearningOracle

    if not workload.history:
        raise ValueError(f"workload {workload.name} has no history for the service to start from")
    _, options = split_spec(spec)
    known = set(LearningOptions.__dataclass_fields__)
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(unknown)} of {spec!r}; known: {', '.join(sorted(known))}")
    if "models" in options:
        options["models"] = tuple(str(options["models"]).split("+"))
    return LearningOracle(workload, Settings(seed=seed), LearningOptions(**options))
