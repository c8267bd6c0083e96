"""Registry of zoo members: each name builds a fresh, unfitted scikit-learn regressor.

Runtimes span orders of magnitude, so ``*_log`` members learn log(seconds) and
answer in seconds again (always positive), and ``*_log_smeared`` ones also correct exp of a
log-space answer (a median) towards the mean; a family registered several ways lets
cross-validation choose the target transform per algorithm and platform. Settings are routed with ``set_params``
(nested ones with double underscores), so every member works with scikit-learn's tools. Members
that read particular features (job-history baselines) declare them and apply only where they exist.
Members that learn from censored runs (a lower bound on their time) are registered ``censored=True``:
training calls their ``fit(X, y, censored=mask)``; every other member is fitted on the finished runs only.
Members whose answer is read off a time (a requested or past run time) are registered ``targets=("time",)``:
they estimate run times, not peak memory. Members that learn one run at a time after their fit are registered
``online=True``: they offer ``design``, ``answer_row`` and ``learn_row``, to answer and learn runs one at a time. The simple rules a site already
has (a catalog pair's measured median; a job class's user request and user's last two runs) are registered
``rule=True``: the champion guard lets a learned member serve only where it beats the best of them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

import numpy as np
from lightgbm import LGBMRegressor
from sklearn.base import RegressorMixin
from sklearn.compose import TransformedTargetRegressor
from sklearn.dummy import DummyRegressor
from sklearn.linear_model import LinearRegression, RidgeCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, MinMaxScaler, PolynomialFeatures, StandardScaler
from sklearn.svm import SVR

from models.attribute import BestAttributeIsotonic, SimpleLinearRegression
from models.baselines import HistoryBaseline, JobTypeMean
from models.cascade import CascadeNetRegressor
from models.censored import TobitLogRegression
from models.ensemble import ENSEMBLE
from models.network import EarlyStoppedNetwork
from models.online import AsymmetricOnlineRegressor
from models.search import SubsampledGridSearch
from models.smearing import SmearedLogTarget
from models.sparse import SparseMedianRegression, median_line
from models.transforms import log_seconds, signed_log1p

ZOO: dict[str, Callable[..., RegressorMixin]] = {}


# what a member can learn: a run's wall seconds, its peak resident bytes
TARGETS = frozenset({"time", "memory"})


@dataclass(frozen=True)
class Needs:
    """What a member needs of a training set: features it reads by name, a least number of rows, the targets it can learn;
    whether it learns from censored runs, whether it learns online, and whether it is a site's simple rule.

    ``censored``: its ``fit(X, y, censored=mask)`` takes them as lower bounds; other members get the finished runs only.
    ``online``: it has ``design(X)``, ``answer_row(z)`` and ``learn_row(z, seconds, weight)``. ``rule``: no learning beyond a statistic or a column.
    """

    features: frozenset[str] = frozenset()
    min_rows: int = 0
    censored: bool = False
    targets: frozenset[str] = TARGETS
    online: bool = False
    rule: bool = False


NEEDS: dict[str, Needs] = {}
# a job's requested run time, the column a batch site's rules read
REQUEST_COLUMN = "request.time"


def register(
    name: str,
    *,
    requires: Collection[str] = (),
    min_rows: int = 0,
    censored: bool = False,
    targets: Collection[str] = TARGETS,
    online: bool = False,
    rule: bool = False,
) -> Callable[[Callable[..., RegressorMixin]], Callable[..., RegressorMixin]]:
    """Add a factory to the zoo under ``name`` (decorator), with the features and rows it cannot do without.

    ``censored=True`` declares that its ``fit`` takes a ``censored`` mask and learns from those rows as lower bounds;
    ``targets`` the targets (of :data:`TARGETS`) whose values its answer can be; ``online=True`` that it learns
    run by run (``design``, ``answer_row``, ``learn_row``); ``rule=True`` that it is one of a site's simple rules.
    """

    def add(factory: Callable[..., RegressorMixin]) -> Callable[..., RegressorMixin]:
        if name in ZOO:
            raise ValueError(f"zoo member {name!r} is already registered")
        if unknown := set(targets) - TARGETS:
            raise ValueError(f"zoo member {name!r}: unknown target(s) {', '.join(sorted(unknown))}")
        ZOO[name] = factory
        NEEDS[name] = Needs(frozenset(requires), min_rows, censored, frozenset(targets), online, rule)
        return factory

    return add


def learns_from_censored(name: str) -> bool:
    """Whether member ``name`` was registered to learn from censored runs (its fit takes ``censored=``)."""
    return NEEDS.get(name, Needs()).censored


def learns_online(name: str) -> bool:
    """Whether member ``name`` was registered to learn run by run after its fit (``design``, ``answer_row``,
    ``learn_row``)."""
    return NEEDS.get(name, Needs()).online


def is_rule(name: str, *, job_class: bool | None = None) -> bool:
    """Whether member ``name`` is one of a site's simple rules (registered ``rule=True``); with ``job_class``, one of
    that kind of set's: a batch site's rules read the job's request (the request itself, the user's last two runs
    capped at it), a catalog pair's do not (the measured median, which knows no user)."""
    needs = NEEDS.get(name, Needs())
    if job_class is None or not needs.rule:
        return needs.rule
    return (REQUEST_COLUMN in needs.features) == job_class


def available_models() -> list[str]:
    """Names of every zoo member, in registration order."""
    return list(ZOO)


def applicable(name: str, feature_names: Collection[str], n_rows: int, target: str = "time") -> bool:
    """Whether member ``name`` can learn ``target`` (of :data:`TARGETS`) from ``n_rows`` rows with ``feature_names``."""
    needs = NEEDS.get(name, Needs())
    return needs.features <= set(feature_names) and n_rows >= needs.min_rows and target in needs.targets


def target_transform(name: str) -> str:
    """How member ``name`` treats seconds, by its name: ``log`` (``*_log``), ``log smeared`` (``*_log_smeared``), ``raw``.

    The selected ensemble averages members of either kind: ``mixed``.
    """
    if name == ENSEMBLE:
        return "mixed"
    if name.endswith("_log_smeared"):
        return "log smeared"
    return "log" if name.endswith("_log") else "raw"


def make_model(name: str, *, seed: int | None = None, **params: Any) -> RegressorMixin:
    """A fresh member ``name`` with ``params`` set and every ``random_state`` set to ``seed``."""
    try:
        factory = ZOO[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(ZOO)}") from None
    model = factory()
    if seed is not None:
        model.set_params(**{k: seed for k in model.get_params(deep=True) if k.split("__")[-1] == "random_state"})
    return model.set_params(**params)


def _signed_log() -> FunctionTransformer:
    """Feature transform by :func:`signed_log1p`, validating input (numeric, dense, finite) first."""
    return FunctionTransformer(signed_log1p, validate=True)


def _log_target(regressor: RegressorMixin) -> TransformedTargetRegressor:
    """Wrap ``regressor`` to learn log(seconds) and predict exp of its answer, so estimates stay positive."""
    return TransformedTargetRegressor(regressor=regressor, func=log_seconds, inverse_func=np.exp, check_inverse=False)


def _standardised_target(regressor: RegressorMixin, *, log: bool) -> TransformedTargetRegressor:
    """Wrap ``regressor`` to learn standardised seconds (or log seconds), so its tolerances are in units of spread."""
    steps = [("log", FunctionTransformer(log_seconds, inverse_func=np.exp, check_inverse=False))] if log else []
    return TransformedTargetRegressor(regressor=regressor, transformer=Pipeline([*steps, ("scale", StandardScaler())]))


def _standardised(regressor: RegressorMixin) -> Pipeline:
    """``regressor`` on standardised raw features (a linear model's coefficients then compare across features)."""
    return Pipeline([("scale", StandardScaler()), ("regress", regressor)])


def _scaled(name: str, regressor: RegressorMixin) -> Pipeline:
    """``regressor`` on signed-log, then standardised features (sizes span orders of magnitude)."""
    return Pipeline([("log", _signed_log()), ("scale", StandardScaler()), (name, regressor)])


def _mlp(*, log: bool) -> TransformedTargetRegressor:
    """Two one-hidden-layer perceptrons of 16 units (seeds), each L-BFGS early-stopped on its own held-out fifth, averaged.

    Raw seconds are learnt from raw features mapped onto [-1, 1] (as Weka's MultilayerPerceptron
    normalises them), log seconds from signed-log features: on the bundled runs each pairing beat
    the other on 13 of the 14 pairs (README, "Model zoo").
    """
    network = EarlyStoppedNetwork((16,), n_members=2, random_state=0)
    features = _scaled("mlp", network) if log else Pipeline([("scale", MinMaxScaler((-1, 1))), ("mlp", network)])
    return _standardised_target(features, log=log)


SVR_GRID = {"C": [1.0, 10.0, 100.0], "gamma": [0.03, 0.1, 0.3], "epsilon": [0.02, 0.1]}


def _svr(*, log: bool) -> Pipeline:
    """RBF epsilon-SVR on scaled features and target, C, gamma and epsilon chosen by 3-fold inner CV on at most 300 rows.

    The search sits innermost, on features and target already transformed (and scored by MAE
    there: of standardised log seconds, so relative error, for ``svr_log``), so its 54 inner fits
    are bare SVR fits; searching over the whole pipeline cost four times as much for the same choices.
    """
    search = SubsampledGridSearch(SVR(kernel="rbf"), SVR_GRID, max_rows=300)
    return _scaled("svr", _standardised_target(search, log=log))


def _lightgbm() -> LGBMRegressor:
    """Gradient-boosted trees sized for datasets of about a hundred rows, on one thread."""
    return LGBMRegressor(
        n_estimators=200,
        learning_rate=0.05,
        num_leaves=15,
        min_child_samples=5,
        n_jobs=1,
        verbose=-1,
        random_state=0,
    )


@register("mean")
def mean() -> DummyRegressor:
    """Baseline: the training mean, whatever the features (what RAE compares against)."""
    return DummyRegressor(strategy="mean")


@register("linear")
def linear() -> Pipeline:
    """Ordinary least squares on standardised features."""
    return _standardised(LinearRegression())


@register("linear_log")
def linear_log() -> TransformedTargetRegressor:
    """Least squares in log-log space: a power law seconds ~ prod(feature^k)."""
    return _log_target(_scaled("regress", LinearRegression()))


@register("lightgbm")
def lightgbm() -> LGBMRegressor:
    """LightGBM on raw seconds."""
    return _lightgbm()


@register("lightgbm_log")
def lightgbm_log() -> TransformedTargetRegressor:
    """LightGBM on log(seconds); trees need no feature transform."""
    return _log_target(_lightgbm())


@register("lad")
def lad() -> Pipeline:
    """Least absolute deviations on standardised features: a linear model that a few slow outlier runs do not drag.

    It is what Weka's SMOreg fits with its linear kernel and tiny epsilon, minus the penalty (Brandstätter-Müller
    et al. (2011), *Improving job scheduling on a heterogeneous cluster by predicting job execution times using
    heuristics*, Table 2).
    """
    return _standardised(median_line())


@register("lad_log")
def lad_log() -> TransformedTargetRegressor:
    """Least absolute deviations in log-log space: the median power law."""
    return _log_target(_scaled("regress", median_line()))


@register("sparse_lad_log")
def sparse_lad_log() -> TransformedTargetRegressor:
    """The median power law on the features a BIC-chosen lasso keeps: most inputs that vary by chance are left out of it."""
    return _log_target(_scaled("regress", SparseMedianRegression()))


@register("quadratic_log")
def quadratic_log() -> TransformedTargetRegressor:
    """A second-order response surface in log-log space: log seconds quadratic in the signed-log features.

    Squares and pairwise products let one feature change another's exponent (MAFFT's strategy
    its cost in sequences, an HMM's length its cost per residue), which a plain power law cannot;
    a ridge penalty, chosen among 13 by efficient leave-one-out, keeps the many terms in check.
    """
    terms = Pipeline(
        [
            ("log", _signed_log()),
            ("scale", StandardScaler()),
            ("terms", PolynomialFeatures(2, include_bias=False)),
            ("rescale", StandardScaler()),
            ("regress", RidgeCV(alphas=np.logspace(-3, 3, 13))),
        ]
    )
    return _log_target(terms)


@register("profile_mean")
def profile_mean() -> JobTypeMean:
    """Baseline: the profile table's mean per job type (Kontothanassis & Goddeau (2004), *A case study of profile
    driven scheduling for a heterogeneous cluster of workstations*)."""
    return JobTypeMean()


@register("median", rule=True)
def median() -> DummyRegressor:
    """Rule: the median of the measured runs, what the service serves for a pair before any model (its profile table)."""
    return DummyRegressor(strategy="median")


@register(
    "last_two_mean", requires=("history.last2_mean", "history.last1", "request.time"), targets=("time",), rule=True
)
def last_two_mean() -> HistoryBaseline:
    """Rule for job-history data: the user's last two run times averaged, capped at the request (Tsafrir, Etsion &
    Feitelson (2007), *Backfilling using system-generated predictions rather than user runtime estimates*)."""
    return HistoryBaseline()


@register("requested_time", requires=("request.time",), targets=("time",), rule=True)
def requested_time() -> HistoryBaseline:
    """Rule for job-history data: the run time the user requested."""
    return HistoryBaseline(columns=("request.time",), cap_column=None)


@register("simple_linear")
def simple_linear() -> SimpleLinearRegression:
    """Weka's SimpleLinearRegression on raw seconds (Brandstätter-Müller et al. 2011, Table 2)."""
    return SimpleLinearRegression()


@register("simple_linear_log")
def simple_linear_log() -> TransformedTargetRegressor:
    """SimpleLinearRegression in log-log space: a power law of the single best attribute."""
    return _log_target(Pipeline([("log", _signed_log()), ("regress", SimpleLinearRegression())]))


@register("isotonic")
def isotonic() -> BestAttributeIsotonic:
    """Weka's IsotonicRegression on raw seconds (Brandstätter-Müller et al. 2011, Table 2)."""
    return BestAttributeIsotonic()


@register("isotonic_log")
def isotonic_log() -> TransformedTargetRegressor:
    """IsotonicRegression on log(seconds): the attribute is chosen by squared error of logs."""
    return _log_target(BestAttributeIsotonic())


@register("svr")
def svr() -> Pipeline:
    """epsilon-SVR on raw seconds (the tuned LibSVM of Brandstätter-Müller et al. 2011, Figs 4-5)."""
    return _svr(log=False)


@register("svr_log")
def svr_log() -> Pipeline:
    """epsilon-SVR on log(seconds), tuned on errors of log seconds."""
    return _svr(log=True)


@register("mlp", min_rows=20)
def mlp() -> TransformedTargetRegressor:
    """Fixed-size network on raw seconds (the MultilayerPerceptron of Brandstätter-Müller et al. 2011, Table 2's
    winner, Figs 2-3)."""
    return _mlp(log=False)


@register("mlp_log", min_rows=20)
def mlp_log() -> TransformedTargetRegressor:
    """Fixed-size network on log(seconds)."""
    return _mlp(log=True)


@register("cascade")
def cascade() -> CascadeNetRegressor:
    """Cascade2-grown network on raw seconds (the FANN network of Brandstätter-Müller et al. 2011), sized by
    held-out error."""
    return CascadeNetRegressor()


@register("cascade_log")
def cascade_log() -> TransformedTargetRegressor:
    """The Cascade2-grown network on log(seconds)."""
    return _log_target(CascadeNetRegressor())


@register("linear_log_smeared")
def linear_log_smeared() -> SmearedLogTarget:
    """The log-log power law answering the mean run time (Duan's smearing)."""
    return SmearedLogTarget(_scaled("regress", LinearRegression()))


@register("lightgbm_log_smeared")
def lightgbm_log_smeared() -> SmearedLogTarget:
    """LightGBM on log(seconds) answering the mean run time."""
    return SmearedLogTarget(_lightgbm())


@register("tobit_log", censored=True)
def tobit_log() -> TobitLogRegression:
    """The log-log power law fitted to finished runs and, as lower bounds, censored ones (Tobit, log-normal AFT)."""
    return TobitLogRegression()


@register("online_log", online=True)
def online_log() -> AsymmetricOnlineRegressor:
    """The online linear model on log(seconds), one constant-time update per finished job, under-estimates penalised
    squared and over-estimates linearly (Gaussier et al. 2015's loss family; :mod:`models.online`)."""
    return AsymmetricOnlineRegressor()


@register("online_area_log", requires=("request.procs", "request.time"), online=True)
def online_area_log() -> AsymmetricOnlineRegressor:
    """:func:`online_log` with each job weighted by 1 + log(1 + processors x requested time), as SC'15 weights jobs."""
    return AsymmetricOnlineRegressor(area_columns=("request.procs", "request.time"))


@register("online_median_log", online=True)
def online_median_log() -> AsymmetricOnlineRegressor:
    """The online linear model on log(seconds) with both sides of the loss linear: the median of log run time."""
    return AsymmetricOnlineRegressor(under="absolute", over="absolute")


@register("sc15", requires=("request.procs", "request.time"), targets=("time",), online=True)
def sc15() -> AsymmetricOnlineRegressor:
    """The SC'15-style member (Gaussier, Glesser, Reis & Trystram 2015, *Improving backfilling by using machine learning
    to predict running times*): seconds learned directly, under-estimates squared and over-estimates linear, each job
    weighted by its area."""
    return AsymmetricOnlineRegressor(area_columns=("request.procs", "request.time"), log=False)
