"""The runtime oracle: job -> features -> champion per platform -> estimates with intervals and a walltime limit.

The API, the CLI, the scheduler and the simulator all ask this one object. Jobs are estimated in batches:
features are gathered per job, then each champion is called once on the matrix of every row it serves.
Beside each time champion a pair may have a peak-memory champion (:class:`~predictor.domain.Target`); its
answer, interval (at the same coverage) and limit (bytes, at the memory limit's own quantile) fill the estimate's
``memory*`` fields, which stay None for a pair without one. What is served is replaced whole by :meth:`RuntimeOracle.swap`; a call reads it
once, so calls in flight finish on the champions they started with.
"""

from __future__ import annotations

import inspect
import math
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import ConfigDict, TypeAdapter

from features import get_extractor
from predictor.catalog import Algorithm, Catalog
from predictor.domain import Estimate, EstimateColumns, Target
from predictor.envelope import Check
from predictor.fastpath import Rows, compile_rows, probe_rows
from predictor.intervals import quantile_at
from predictor.jobfeatures import (
    check_known_parameters,
    file_parameters,
    job_features,
    known_derived_features,
    parameter_features,
)
from predictor.reach import columns_within_reach, within_reach
from predictor.registry import Champion
from predictor.served import cap_at_request, served_points

if TYPE_CHECKING:
    from predictor.settings import Settings

Pair = tuple[str, str]
MEMORY_FIELDS = {"seconds": "memory", "lower": "memory_lower", "upper": "memory_upper", "limit": "memory_limit"}
"""Where a memory champion's answers go: its scored ``seconds`` (in its unit, bytes) are the estimate's ``memory``, ..."""
MemoryAnswer = tuple[dict[str, Any], list[str] | None]
"""A memory champion's answer for one row: the estimate's ``memory*`` fields, and the features beyond its trained range
when the row lies outside its envelope (None inside)."""
ProfileTable = Mapping[Pair, tuple[float, int]]
BUDGET_OPTION = "time_budget_s"
NO_CHAMPION = "no champion model for this algorithm and platform"
NOT_FINITE = "the model's estimate is not a finite number for these features"
# distinct parameter sets remembered; cleared whole when full
PARAM_CACHE_SIZE = 4096


@dataclass(frozen=True)
class ResolvedJob:
    """A job ready to estimate: its algorithm, the platforms asked about, and its features."""

    algorithm: str
    platforms: tuple[str, ...]
    features: dict[str, float]


@dataclass(frozen=True)
class JobQuery:
    """One job as an oracle is asked about it: ``params`` ({} when none were given), the ``platforms`` to restrict the
    answer to (None: every eligible one), and ``features`` that replace reading its input files (None: read them)."""

    algorithm: str
    params: dict[str, Any]
    platforms: list[str] | None = None
    features: dict[str, float] | None = None

    def allows(self, platform: str) -> bool:
        """Whether the answer may hold ``platform``."""
        return self.platforms is None or platform in self.platforms

    def among(self, answers: Mapping[str, Estimate]) -> dict[str, Estimate]:
        """``answers`` restricted to the platforms asked about (in the order of ``answers``)."""
        return {p: e for p, e in answers.items() if self.allows(p)}


class Oracle(ABC):
    """Estimated wall seconds of one job on each eligible platform: what the API, the scheduler and the simulator ask.

    :class:`RuntimeOracle` serves the champions; a simulation plugs in others (:mod:`scheduler.run_times`). Each
    answers :meth:`answer`; :meth:`estimate` is the one way callers ask.
    """

    def estimate(
        self,
        algorithm: str,
        params: dict[str, Any] | None = None,
        platforms: list[str] | None = None,
        features: dict[str, float] | None = None,
    ) -> dict[str, Estimate]:
        """Platform -> the job's estimate, on each platform it can run on (among ``platforms`` when given)."""
        return self.answer(JobQuery(algorithm, params or {}, platforms, features))

    @abstractmethod
    def answer(self, job: JobQuery) -> dict[str, Estimate]:
        """What :meth:`estimate` answers for ``job``."""


class ScoredColumns(EstimateColumns):
    """The columns of estimates and what the oracle scored them on: per row the features beyond their trained range,
    and the feature rows the champion was called on (``used``, its columns ``feature_names``; None for a fallback)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    out_of_domain: list[list[str]] | None = None
    feature_names: tuple[str, ...] = ()
    used: np.ndarray | None = None


@dataclass(frozen=True)
class ServedModel:
    """A champion ready to answer: its compiled row function (``fast`` or ``generic`` path) and residual quantiles."""

    champion: Champion
    rows: Rows
    path: str
    quantiles: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class Served:
    """What the oracle serves at one moment: time champions, memory champions and the profile table, replaced whole."""

    models: Mapping[Pair, ServedModel]
    memory: Mapping[Pair, ServedModel]
    profile: ProfileTable


def serve_model(champion: Champion, examples: np.ndarray | None = None) -> ServedModel:
    """Compile ``champion`` for numpy rows (checked on probes) and read its residual quantiles."""
    rows, path = compile_rows(champion.model, champion.feature_names, probe_rows(len(champion.feature_names), examples))
    try:
        quantiles = tuple(sorted(champion.residual_quantiles.items()))
    # a malformed tag means no interval, never a failed load
    except (ValueError, TypeError, AttributeError):
        quantiles = ()
    return ServedModel(champion, rows, path, quantiles)


class RuntimeOracle(Oracle):
    """Estimates a job's wall seconds (and peak memory) on each eligible platform, with an interval and a limit.

    ``profile_table`` maps (algorithm, platform) to (median seconds, count) and answers, marked as fallback,
    where no model exists (the profile table of Kontothanassis & Goddeau (2004), *A case study of profile driven
    scheduling for a heterogeneous cluster of workstations*). ``coverage`` is the nominal coverage of intervals (both
    targets), ``limit_quantile`` the quantile of the walltime limit and ``memory_limit_quantile`` that of the memory
    limit (None: the walltime limit's), each overridable per call. ``memory_champions`` are the pairs' peak-memory
    champions, where there are some.
    """

    def __init__(
        self,
        catalog: Catalog,
        champions: Mapping[Pair, Champion],
        profile_table: ProfileTable | None = None,
        *,
        coverage: float,
        limit_quantile: float,
        memory_limit_quantile: float | None = None,
        memory_champions: Mapping[Pair, Champion] | None = None,
    ) -> None:
        self.catalog = catalog
        self.coverage = coverage
        self.limit_quantile = limit_quantile
        self.memory_limit_quantile = limit_quantile if memory_limit_quantile is None else memory_limit_quantile
        self._served = Served(MappingProxyType({}), MappingProxyType({}), MappingProxyType(dict(profile_table or {})))
        self._budgeted: dict[str, bool] = {}
        self._memory_ceiling = {name: p.memory_bytes for name, p in catalog.platforms.items()}  # predictor.reach
        self._param_cache: dict[tuple[str, frozenset[tuple[str, type, Any]]], dict[str, float]] = {}
        self.swap(
            {key: serve_model(c) for key, c in champions.items()},
            memory={key: serve_model(c) for key, c in (memory_champions or {}).items()},
        )

    @property
    def models(self) -> Mapping[Pair, ServedModel]:
        """The served time models now (a read-only snapshot)."""
        return self._served.models

    @property
    def memory_models(self) -> Mapping[Pair, ServedModel]:
        """The served peak-memory models now (a read-only snapshot; pairs without one are absent)."""
        return self._served.memory

    @property
    def champions(self) -> dict[Pair, Champion]:
        """The time champion serving each (algorithm, platform) now."""
        return {key: m.champion for key, m in self._served.models.items()}

    @property
    def profile_table(self) -> ProfileTable:
        return self._served.profile

    def swap(
        self,
        models: Mapping[Pair, ServedModel],
        profile_table: ProfileTable | None = None,
        *,
        memory: Mapping[Pair, ServedModel] | None = None,
    ) -> None:
        """Serve time ``models`` (and ``profile_table`` and ``memory`` models, when given: else the current ones) from
        now on, in one assignment; calls in flight keep the old ones."""
        served = self._served
        self._served = Served(
            MappingProxyType(dict(models)),
            served.memory if memory is None else MappingProxyType(dict(memory)),
            served.profile if profile_table is None else MappingProxyType(dict(profile_table)),
        )

    def eligible_platforms(self, algorithm: Algorithm, platforms: Sequence[str] | None = None) -> list[str]:
        """Platforms with an implementation of ``algorithm``, restricted to ``platforms`` if given (KeyError if unknown)."""
        implemented = algorithm.platforms
        if platforms is None:
            return implemented
        for name in platforms:
            self.catalog.platform(name)
        return [p for p in dict.fromkeys(platforms) if p in implemented]

    def features(self, algorithm: Algorithm, params: dict[str, Any], budget_s: float | None = None) -> dict[str, float]:
        """Features of a job, extracted as the catalog declares; file reading bounded by ``budget_s`` where supported."""
        options = {BUDGET_OPTION: budget_s} if budget_s is not None and self._supports_budget(algorithm) else {}
        return job_features(algorithm, params, **options)

    def prepare(
        self,
        algorithm: str | Algorithm,
        params: dict[str, Any] | None = None,
        platforms: Sequence[str] | None = None,
        features: Mapping[str, float] | None = None,
        *,
        budget_s: float | None = None,
    ) -> ResolvedJob:
        """Check a job and gather its features; given ``features`` replace file reading (parameters still count).
        ``algorithm``: its name, or its catalog definition already looked up (the API's, once a request)."""
        definition = self._definition(algorithm)
        params = params or {}
        eligible = tuple(self.eligible_platforms(definition, platforms))
        if features is None:
            found = self.features(definition, params, budget_s)
        else:
            found = self._with_given(definition, params, features)
        return ResolvedJob(definition.name, eligible, found)

    def answer(self, job: JobQuery) -> dict[str, Estimate]:
        """Estimate one job on each eligible platform; given ``features`` skip reading its input files."""
        return self.estimate_jobs([self.prepare(job.algorithm, job.params, job.platforms, job.features)])[0]

    def estimate_jobs(
        self,
        jobs: Sequence[ResolvedJob],
        *,
        coverage: float | None = None,
        limit_quantile: float | None = None,
        memory_limit_quantile: float | None = None,
    ) -> list[dict[str, Estimate]]:
        """Estimates for many jobs, one model call per champion: the rows of every job it serves at once."""
        served = self._served  # one snapshot for the whole call
        models, profile = served.models, served.profile
        coverage = self.coverage if coverage is None else coverage
        limit_quantile = self.limit_quantile if limit_quantile is None else limit_quantile
        memory_quantile = self.memory_limit_quantile if memory_limit_quantile is None else memory_limit_quantile
        memory = _memory_answers(served.memory, jobs, coverage, memory_quantile)
        results: list[dict[str, Estimate]] = [{} for _ in jobs]
        groups: dict[Pair, list[int]] = {}
        for index, job in enumerate(jobs):
            for platform in job.platforms:
                model = models.get((job.algorithm, platform))
                missing = [] if model is None else [n for n in model.champion.feature_names if n not in job.features]
                if model is None or missing:
                    reason = f"features missing for the model: {', '.join(missing)}" if missing else NO_CHAMPION
                    fallback = _fallback(profile, job.algorithm, platform, reason)
                    results[index][platform] = _with_memory_estimate(fallback, memory.get((index, platform)))
                else:
                    groups.setdefault((job.algorithm, platform), []).append(index)
        for (algorithm, platform), indices in groups.items():
            extra = [memory.get((i, platform)) for i in indices]
            answers = _predict(
                models[(algorithm, platform)], [jobs[i].features for i in indices], coverage, limit_quantile, extra
            )
            for index, answer, more in zip(indices, answers, extra, strict=True):
                results[index][platform] = answer or _with_memory_estimate(
                    _fallback(profile, algorithm, platform, NOT_FINITE), more
                )
        ceiling = self._memory_ceiling
        # Each job's estimates in the order of its platforms (the fallbacks above were filled in first).
        return [
            {p: within_reach(r[p], ceiling[p]) for p in job.platforms} for job, r in zip(jobs, results, strict=True)
        ]

    def estimate_matrix(
        self,
        algorithm: str | Algorithm,
        columns: Sequence[str],
        rows: Sequence[Sequence[float]] | np.ndarray,
        platforms: Sequence[str] | None = None,
        params: dict[str, Any] | None = None,
        *,
        coverage: float | None = None,
        limit_quantile: float | None = None,
        memory_limit_quantile: float | None = None,
    ) -> list[ScoredColumns]:
        """Estimates for rows of precomputed features named by ``columns`` (``params`` shared by all rows): one model call
        per platform. ``algorithm``: its name, or its catalog definition already looked up (the API's, once a request)."""
        definition = self._definition(algorithm)
        algorithm = definition.name
        eligible = self.eligible_platforms(definition, platforms)
        X = np.asarray(rows, dtype=float).reshape(-1, len(columns))
        known = {name: X[:, i] for i, name in enumerate(columns)}
        for name, value in self._parameter_features(definition, params or {}).items():
            known.setdefault(name, np.full(len(X), value))
        known.update(known_derived_features(definition, known))
        served = self._served
        models, profile = served.models, served.profile
        coverage = self.coverage if coverage is None else coverage
        limit_quantile = self.limit_quantile if limit_quantile is None else limit_quantile
        memory_quantile = self.memory_limit_quantile if memory_limit_quantile is None else memory_limit_quantile
        out = []
        for platform in eligible:
            model = models.get((algorithm, platform))
            missing = [] if model is None else [n for n in model.champion.feature_names if n not in known]
            if model is None or missing:
                reason = f"features missing for the model: {', '.join(missing)}" if missing else NO_CHAMPION
                column = _fallback_columns(profile, algorithm, platform, len(X), reason)
            else:
                column = _model_columns(model, platform, _matrix(model, known, len(X)), coverage, limit_quantile)
            memory = served.memory.get((algorithm, platform))
            if memory is not None and all(n in known for n in memory.champion.feature_names):
                column = _with_memory_columns(column, memory, _matrix(memory, known, len(X)), coverage, memory_quantile)
            out.append(columns_within_reach(column, self._memory_ceiling[platform]))
        return out

    def fallback(self, algorithm: str, platform: str, reason: str) -> Estimate:
        """The profile table's answer for the pair, marked as fallback with ``reason`` (none when nothing was measured)."""
        return _fallback(self._served.profile, algorithm, platform, reason)

    def _definition(self, algorithm: str | Algorithm) -> Algorithm:
        """The catalog's definition of ``algorithm``, looked up by name unless given (KeyError if unknown)."""
        return algorithm if isinstance(algorithm, Algorithm) else self.catalog.algorithm(algorithm)

    def _with_given(self, algorithm: Algorithm, params: dict[str, Any], given: Mapping[str, float]) -> dict[str, float]:
        """Parameter features, then derived ones where their operands are known, then the given features on top."""
        found = {**self._parameter_features(algorithm, params), **{k: float(v) for k, v in given.items()}}
        return {**found, **known_derived_features(algorithm, found)}

    def _parameter_features(self, algorithm: Algorithm, params: dict[str, Any]) -> dict[str, float]:
        """Features of plain parameters, remembered per distinct value set (jobs of a batch share most of them)."""
        try:
            key = (algorithm.name, frozenset((k, type(v), v) for k, v in params.items()))  # typed: True is not 1
            hash(key)
        # unhashable values: compute, and let the checks say what is wrong
        except TypeError:
            key = None
        if key is not None and key in self._param_cache:
            return self._param_cache[key]
        check_known_parameters(algorithm, params)
        found = parameter_features(algorithm, params)
        if key is not None:
            if len(self._param_cache) >= PARAM_CACHE_SIZE:
                self._param_cache.clear()
            self._param_cache[key] = found
        return found

    def _supports_budget(self, algorithm: Algorithm) -> bool:
        """Whether every extractor of ``algorithm`` takes a time budget (cached per algorithm)."""
        if algorithm.name not in self._budgeted:
            self._budgeted[algorithm.name] = all(
                BUDGET_OPTION in inspect.signature(type(get_extractor(name))).parameters
                for name in file_parameters(algorithm).values()
            )
        return self._budgeted[algorithm.name]


def _matrix(model: ServedModel, known: Mapping[str, np.ndarray], n: int) -> np.ndarray:
    """The (n, k) rows of ``model``'s features, in its order, from feature columns."""
    names = model.champion.feature_names
    return np.array([known[name] for name in names], dtype=float).T.reshape(n, len(names))


def _model_columns(
    model: ServedModel, platform: str, matrix: np.ndarray, coverage: float, limit_quantile: float
) -> ScoredColumns:
    """A time champion's answers for the rows of ``matrix``, as columns."""
    champion = model.champion
    answers, finite, check = _scored(model, matrix, coverage, limit_quantile)
    cap_at_request(answers, champion.feature_names, matrix)
    lists = {key: _finite_list(column, finite) for key, column in answers.items()}
    interval = len(answers) > 1
    outside = check.outside.tolist() if check is not None else [False] * len(matrix)
    beyond = check.out_of_range if check is not None else [[] for _ in range(len(matrix))]
    return ScoredColumns(
        platform=platform,
        model_name=champion.name,
        model_version=champion.version,
        flavor=champion.flavor,
        member=champion.member,
        rule=champion.rule,
        extrapolating=outside,
        out_of_domain=beyond,
        feature_names=tuple(champion.feature_names),
        used=matrix,
        seconds=lists["seconds"],
        lower=lists.get("lower"),
        upper=lists.get("upper"),
        limit=lists.get("limit"),
        coverage=coverage if interval else None,
        limit_quantile=limit_quantile if interval else None,
    )


def _with_memory_columns(
    column: ScoredColumns, model: ServedModel, matrix: np.ndarray, coverage: float, limit_quantile: float
) -> ScoredColumns:
    """``column`` with the memory champion's answers for the same rows; a row outside its envelope extrapolates too."""
    answers, finite, check = _scored(model, matrix, coverage, limit_quantile)
    memory = {MEMORY_FIELDS[key]: _finite_list(values, finite) for key, values in answers.items()}
    changes: dict[str, Any] = {**memory, **_memory_fixed(model, len(answers) > 1, limit_quantile)}
    if check is not None and check.outside.any():
        n = len(matrix)
        before = column.extrapolating or [False] * n
        beyond = column.out_of_domain or [[] for _ in range(n)]
        changes["extrapolating"] = [a or bool(b) for a, b in zip(before, check.outside.tolist(), strict=True)]
        changes["out_of_domain"] = [_union(a, b) for a, b in zip(beyond, check.out_of_range, strict=True)]
    return column.model_copy(update=changes)


def _memory_answers(
    memory: Mapping[Pair, ServedModel], jobs: Sequence[ResolvedJob], coverage: float, limit_quantile: float
) -> dict[tuple[int, str], MemoryAnswer]:
    """The memory answer of each (job index, platform) whose pair has a memory champion with the features it needs and a
    finite answer: one model call per memory champion."""
    out: dict[tuple[int, str], MemoryAnswer] = {}
    if not memory:
        return out
    groups: dict[Pair, list[int]] = {}
    for index, job in enumerate(jobs):
        for platform in job.platforms:
            model = memory.get((job.algorithm, platform))
            if model is not None and all(n in job.features for n in model.champion.feature_names):
                groups.setdefault((job.algorithm, platform), []).append(index)
    for (algorithm, platform), indices in groups.items():
        model = memory[(algorithm, platform)]
        X = _feature_rows(model.champion.feature_names, [jobs[i].features for i in indices])
        answers, finite, check = _scored(model, X, coverage, limit_quantile)
        keys = [MEMORY_FIELDS[key] for key in answers]
        fixed = _memory_fixed(model, len(answers) > 1, limit_quantile)
        values = zip(*(a.tolist() for a in answers.values()), strict=True)
        for row, (index, answer, ok) in enumerate(zip(indices, values, finite, strict=True)):
            if ok:
                outside = check.out_of_range[row] if check is not None and check.outside[row] else None
                out[(index, platform)] = ({**fixed, **dict(zip(keys, answer, strict=True))}, outside)
    return out


def _memory_fixed(model: ServedModel, limited: bool, limit_quantile: float) -> dict[str, Any]:
    """The memory fields alike in every row a memory champion answers: its name and version, and the quantile of its
    limit when it gave one (``limited``)."""
    fixed: dict[str, Any] = {"memory_model_name": model.champion.name, "memory_model_version": model.champion.version}
    return fixed | {"memory_limit_quantile": limit_quantile} if limited else fixed


def _with_memory_record(record: dict[str, Any], answer: MemoryAnswer | None) -> dict[str, Any]:
    """An estimate's ``record`` with the memory ``answer`` in it (unchanged without one); a row outside the memory
    champion's envelope extrapolates, and a model's answer then says why (a fallback keeps its reason)."""
    if answer is None:
        return record
    fields, outside = answer
    record.update(fields)
    if outside is not None:
        beyond = _union(record.get("out_of_domain") or [], outside)
        record.update(extrapolating=True, out_of_domain=beyond)
        if record.get("reason") is None or (record.get("seconds") is not None and not record.get("fallback")):
            record["reason"] = outside_reason(beyond)
    return record


def _with_memory_estimate(estimate: Estimate, answer: MemoryAnswer | None) -> Estimate:
    """``estimate`` (a fallback) with the memory ``answer`` in it."""
    if answer is None:
        return estimate
    known = {
        "seconds": estimate.seconds,
        "fallback": estimate.fallback,
        "reason": estimate.reason,
        "out_of_domain": estimate.out_of_domain,
    }
    return estimate.model_copy(update=_with_memory_record(known, answer))


def _feature_rows(names: Sequence[str], rows: Sequence[Mapping[str, float]]) -> np.ndarray:
    """The (n, k) matrix of ``rows``' features ``names``, in that order."""
    return np.array([[row[n] for n in names] for row in rows], dtype=float).reshape(len(rows), len(names))


def _finite_list(values: np.ndarray, finite: list[bool]) -> list[float | None]:
    """``values`` as a list, None where a row's answer is not finite."""
    return [v if ok else None for v, ok in zip(values.tolist(), finite, strict=True)]


def _union(first: list[str], second: list[str]) -> list[str]:
    """The names of both lists, each once, in order of first appearance."""
    return list(dict.fromkeys([*first, *second]))


def _scored(
    model: ServedModel, X: np.ndarray, coverage: float, limit_quantile: float
) -> tuple[dict[str, np.ndarray], list[bool], Check | None]:
    """One model call on ``X``: seconds (and lower, upper, limit when the champion has quantiles), which rows are finite,
    and where the rows lie relative to the champion's training envelope.

    Answers keep ``0 < lower <= seconds <= upper <= limit``: seconds are floored at the pair's fastest
    finished run; rows outside the envelope are answered by its monotone power law, with the law's own
    errors beyond a held-out range (its ``law_quantiles``; the champion's when it has none) widened by
    how far out they lie (:mod:`predictor.envelope`). No end lies more than :data:`MAX_LIMIT_RATIO` times
    from ``seconds``.
    """
    envelope = model.champion.envelope
    # the log-ratio quantiles of rows outside the envelope, when there are some
    law: dict[float, float] = {}
    with np.errstate(all="ignore"):
        seconds, check = served_points(model.rows(X), X, envelope)
        if envelope is not None and check is not None and check.outside.any():
            law = envelope.law_quantiles or dict(model.quantiles)
        answers = {"seconds": seconds}
        if model.quantiles:
            # broadcast over the rows
            factors = np.array(_log_factors(model.quantiles, coverage, limit_quantile))[:, None]
            if check is not None and law:
                beyond = np.array(_log_factors(tuple(sorted(law.items())), coverage, limit_quantile))[
                    :, None
                ] * np.sqrt(1.0 + check.excess)
                factors = np.where(check.outside, beyond, factors)
            low, high, lim = np.exp(np.clip(factors, -MAX_LOG_RATIO, MAX_LOG_RATIO))
            answers["lower"] = np.clip(seconds * low, MIN_LOWER, seconds)
            answers["upper"] = np.maximum(seconds * high, seconds)
            answers["limit"] = np.maximum(seconds * lim, answers["upper"])
    finite = np.logical_and.reduce([np.isfinite(a) for a in answers.values()]).tolist()
    return answers, finite, check


def _predict(
    model: ServedModel,
    rows: list[dict[str, float]],
    coverage: float,
    limit_quantile: float,
    memory: Sequence[MemoryAnswer | None] | None = None,
) -> list[Estimate | None]:
    """One model call for ``rows`` (with each row's ``memory`` answer, when given); None where an answer is not finite."""
    champion = model.champion
    names = champion.feature_names
    X = _feature_rows(names, rows)
    answers, finite, check = _scored(model, X, coverage, limit_quantile)
    cap_at_request(answers, names, X)
    fixed: dict[str, Any] = {
        "platform": champion.platform,
        "model_name": champion.name,
        "model_version": champion.version,
        "flavor": champion.flavor,
        "member": champion.member,
        "rule": champion.rule,
    }
    if len(answers) > 1:
        fixed.update(coverage=coverage, limit_quantile=limit_quantile)
    keys = tuple(answers)
    records = []
    for i, (answer, row, ok) in enumerate(
        zip(zip(*(a.tolist() for a in answers.values()), strict=True), X.tolist(), finite, strict=True)
    ):
        if not ok:
            continue
        record = {**fixed, **dict(zip(keys, answer, strict=True)), "features": dict(zip(names, row, strict=True))}
        if check is not None and check.outside[i]:
            record.update(
                extrapolating=True, out_of_domain=check.out_of_range[i], reason=outside_reason(check.out_of_range[i])
            )
        records.append(_with_memory_record(record, memory[i]) if memory is not None else record)
    built = iter(_ESTIMATES.validate_python(records))  # one validation call for the lot
    return [next(built) if ok else None for ok in finite]


def outside_reason(features: list[str]) -> str:
    """Why an answer came from the envelope's power law."""
    where = f"beyond the trained range of {', '.join(features)}" if features else "far from every trained job"
    return f"outside the training data ({where}): monotone power-law estimate, interval widened"


# seconds: the least lower end of an interval (a positive number however wide the interval)
MIN_LOWER = 1e-6
# no limit above 100 times its estimate (nor a lower end below a hundredth): a documented cap
MAX_LIMIT_RATIO = 100.0
MAX_LOG_RATIO = float(np.log(MAX_LIMIT_RATIO))
_ESTIMATES = TypeAdapter(list[Estimate])


@lru_cache(maxsize=256)
def _log_factors(
    quantiles: tuple[tuple[float, float], ...], coverage: float, limit_quantile: float
) -> tuple[float, float, float]:
    """Log multipliers of an estimate for its interval's lower and upper ends and its walltime limit."""
    recorded = dict(quantiles)
    lower, upper = (1 - coverage) / 2, (1 + coverage) / 2
    return quantile_at(recorded, lower), quantile_at(recorded, upper), quantile_at(recorded, limit_quantile)


def _fallback(profile: ProfileTable, algorithm: str, platform: str, reason: str) -> Estimate:
    """The profile table's median for the pair, marked as fallback with ``reason``; no estimate when nothing was
    measured or its time is not finite (a table given from elsewhere: no estimate, never one that cannot be sent)."""
    entry = profile.get((algorithm, platform))
    if entry is None:
        return Estimate(platform=platform, reason=f"{reason}; no measurements to fall back on")
    median, count = entry
    if not math.isfinite(median):
        return Estimate(platform=platform, reason=f"{reason}; the measured runs give no usable time ({median:g} s)")
    return Estimate(
        platform=platform,
        seconds=median,
        fallback=True,
        model_name="profile-table",
        reason=f"{reason}; median of {count} measured runs",
    )


def _fallback_columns(profile: ProfileTable, algorithm: str, platform: str, n: int, reason: str) -> ScoredColumns:
    """The profile table's answer for every one of ``n`` rows (or none), as columns."""
    single = _fallback(profile, algorithm, platform, reason)
    return ScoredColumns(
        platform=platform,
        seconds=[single.seconds] * n,
        model_name=single.model_name,
        fallback=single.fallback,
        reason=single.reason,
    )


def build_oracle(
    catalog: Catalog, settings: Settings, profile_table: ProfileTable, algorithms: Collection[str] | None = None
) -> RuntimeOracle:
    """An oracle over every time and memory champion of the catalog's (algorithm, platform) pairs, or of ``algorithms``'
    pairs alone (a command that answers for one job need not load the rest): from the registry, else the disk cache."""
    from predictor.champion_source import ChampionSource, RegistryUnavailable

    source = ChampionSource(settings.resolved_tracking_uri, settings.resolved_model_cache)
    pairs = [
        (a, p)
        for a, algo in catalog.algorithms.items()
        if algorithms is None or a in algorithms
        for p in algo.platforms
    ]
    try:
        loaded = {target: source.load_current(pairs, target) for target in Target}
    except RegistryUnavailable:
        loaded = {target: source.cached(pairs, target) for target in Target}
    served = {
        target: {key: serve_model(c.champion, c.examples) for key, c in found.items()}
        for target, found in loaded.items()
    }
    oracle = RuntimeOracle(
        catalog,
        {},
        profile_table,
        coverage=settings.interval_coverage,
        limit_quantile=settings.limit_quantile,
        memory_limit_quantile=settings.memory_limit_quantile,
    )
    oracle.swap(served[Target.TIME], memory=served[Target.MEMORY])
    return oracle
