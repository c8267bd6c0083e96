"""Every private API of another library this project uses, in this one module, with the versions each was checked on.

A private name (a leading underscore) may change in any release. Each is reached only through a function
here that answers None when the name is gone, so callers take their public path; :func:`problems` tries
every one on the versions installed, and ``tests/predictor/test_thirdparty.py`` fails when one does not
work or a library lies outside the range it was checked on. ``pyproject.toml`` pins each library to that range.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Protocol

import numpy as np

Rows = Callable[[np.ndarray], np.ndarray]


class LinearRegressor(Protocol):
    """A fitted scikit-learn linear regressor (its private ``LinearModel``): ``predict(X)`` is ``X @ coef_ + intercept_``."""

    coef_: np.ndarray
    intercept_: float | np.ndarray

    def predict(self, X: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class PrivateApi:
    """One private name of another library: where it lives, why it is used, the versions it was checked on."""

    name: str
    distribution: str
    lowest: str  # the oldest release it was checked on
    # the first release it was not checked on
    below: str
    purpose: str

    def checked_on(self, installed: str) -> bool:
        """Whether ``installed`` (a version string) lies in the range this API was checked on."""
        return _release(self.lowest) <= _release(installed) < _release(self.below)


LINEAR_MODEL = PrivateApi(
    "sklearn.linear_model._base.LinearModel",
    "scikit-learn",
    "1.6",
    "1.10",
    "recognise the linear regressors (predict is X @ coef_ + intercept_) for the numpy fast path",
)
INNER_PREDICTOR = PrivateApi(
    "lightgbm.basic._InnerPredictor.from_booster",
    "lightgbm",
    "4.4",
    "4.8",
    "build LightGBM's predictor once per champion instead of on every call (a third of a single row's time)",
)
MLFLOW_URIS = PrivateApi(
    "mlflow.tracking._tracking_service.utils._tracking_uri and mlflow.tracking._model_registry.utils._registry_uri",
    "mlflow",
    "3.17",
    "3.18",
    "restore MLflow's process-wide URIs exactly (unset stays unset) after a fluent call that takes no URI (mlflow_uris)",
)
MLFLOW_REGISTRY_TABLES = PrivateApi(
    "MLflow's model registry tables: registered_models, model_versions, model_version_tags, registered_model_aliases",
    "mlflow",
    "3.17",
    "3.18",
    "read where the champion aliases point without importing MLflow and opening its store (registry_aliases): most "
    "of a local `predictor predict`'s registry time",
)
PRIVATE_APIS = (LINEAR_MODEL, INNER_PREDICTOR, MLFLOW_URIS, MLFLOW_REGISTRY_TABLES)
# the schemes of a registry MLflow keeps in a database
_DATABASES = ("sqlite", "postgresql", "mysql")
# MLflow's workspace when none is configured (mlflow.utils.workspace_utils)
_DEFAULT_WORKSPACE = "default"
_MLFLOW_URI_VARIABLES = ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI")
_MLFLOW_URIS_LOCK = threading.RLock()


def linear_model_base() -> type[LinearRegressor] | None:
    """scikit-learn's private base class of its linear regressors, or None when it is gone."""
    try:
        from sklearn.linear_model._base import LinearModel
    except ImportError:
        return None
    return LinearModel


def booster_rows(booster: Any, num_threads: int = 1) -> Rows | None:
    """Predictions of a LightGBM booster on a float matrix through a predictor built once; None when that API is gone."""
    try:
        from lightgbm.basic import _InnerPredictor

        predictor = _InnerPredictor.from_booster(booster, pred_parameter={"num_threads": num_threads})
    except (ImportError, AttributeError, TypeError):
        return None
    return lambda X: np.asarray(predictor.predict(X), dtype=float).reshape(-1)


def mlflow_set_uris() -> tuple[str | None, str | None] | None:
    """The tracking and registry URIs set in this process (None where unset), or None when MLflow keeps them elsewhere now."""
    try:
        from mlflow.tracking._model_registry import utils as registry
        from mlflow.tracking._tracking_service import utils as tracking

        return tracking._tracking_uri, registry._registry_uri
    except (ImportError, AttributeError):
        return None


@contextmanager
def mlflow_uris(uri: str) -> Iterator[None]:
    """MLflow's process-wide tracking and registry URIs at ``uri`` for one block, then as they were (and their variables).

    For the fluent calls that take no URI (``mlflow.start_run``, ``mlflow.<flavor>.log_model``, ``mlflow.register_model``);
    one block at a time in a process. Without the private names, what MLflow resolved before is set again after.
    """
    import mlflow

    with _MLFLOW_URIS_LOCK:
        saved = mlflow_set_uris() or (mlflow.get_tracking_uri(), mlflow.get_registry_uri())
        variables = {name: os.environ.get(name) for name in _MLFLOW_URI_VARIABLES}
        mlflow.set_tracking_uri(uri)
        mlflow.set_registry_uri(uri)
        try:
            yield
        finally:
            mlflow.set_tracking_uri(saved[0])  # type: ignore[arg-type]  # None unsets it, as before
            mlflow.set_registry_uri(saved[1])  # type: ignore[arg-type]
            for name, value in variables.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


@dataclass(frozen=True)
class AliasedVersion:
    """The version an alias points at, as the registry's tables hold it."""

    version: str
    run_id: str | None
    created_ms: int | None
    tags: dict[str, str]


@dataclass(frozen=True)
class RegistryAliases:
    """Where an alias of each asked registered model points (``aliased``), and which of them the registry knows."""

    aliased: dict[str, AliasedVersion]
    known: set[str]


def registry_aliases(uri: str, names: Sequence[str], alias: str) -> RegistryAliases | None:
    """Where ``alias`` of each registered model of ``names`` points, read from the tables of a registry MLflow keeps in a
    database, without importing MLflow; None when the registry is not such a database, its file does not exist yet, or
    its tables are not laid out as this was checked on: the caller then asks MLflow (which also creates a missing file).
    """
    import sqlalchemy
    from sqlalchemy.pool import NullPool

    url = sqlalchemy.engine.make_url(uri)
    if url.get_backend_name() not in _DATABASES:
        return None
    if url.get_backend_name() == "sqlite" and not (url.database and os.path.exists(url.database)):
        return None
    wanted = {"names": list(names), "alias": alias, "workspace": _DEFAULT_WORKSPACE}
    expanding: sqlalchemy.BindParameter[str] = sqlalchemy.bindparam("names", expanding=True)
    engine = sqlalchemy.create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            known = connection.execute(
                sqlalchemy.text(
                    "SELECT name FROM registered_models WHERE workspace = :workspace AND name IN :names"
                ).bindparams(expanding),
                wanted,
            )
            versions = connection.execute(
                sqlalchemy.text(
                    "SELECT a.name, v.version, v.run_id, v.creation_time FROM registered_model_aliases a "
                    "JOIN model_versions v ON v.workspace = a.workspace AND v.name = a.name AND v.version = a.version "
                    "WHERE a.workspace = :workspace AND a.alias = :alias AND a.name IN :names"
                ).bindparams(expanding),
                wanted,
            )
            found = {name: (str(version), run_id, created) for name, version, run_id, created in versions}
            known_names = {name for (name,) in known}
            tags: dict[str, dict[str, str]] = {name: {} for name in found}
            for name, version, key, value in connection.execute(
                sqlalchemy.text(
                    "SELECT t.name, t.version, t.key, t.value FROM model_version_tags t JOIN registered_model_aliases a "
                    "ON a.workspace = t.workspace AND a.name = t.name AND a.version = t.version "
                    "WHERE t.workspace = :workspace AND a.alias = :alias AND t.name IN :names"
                ).bindparams(expanding),
                wanted,
            ):
                if name in found and found[name][0] == str(version):
                    tags[name][key] = value
    except sqlalchemy.exc.SQLAlchemyError:
        return None
    finally:
        engine.dispose()
    aliased = {
        name: AliasedVersion(version, run_id, created, tags[name]) for name, (version, run_id, created) in found.items()
    }
    return RegistryAliases(aliased, known_names)


def problems() -> list[str]:
    """What does not hold on the libraries installed: each private API tried on a tiny fitted model, each version checked."""
    found = []
    for api in PRIVATE_APIS:
        try:
            installed = version(api.distribution)
        except PackageNotFoundError:
            found.append(f"{api.name}: {api.distribution} is not installed")
            continue
        if not api.checked_on(installed):
            found.append(
                f"{api.name}: {api.distribution} {installed} is outside the checked {api.lowest} <= v < {api.below}"
            )
    found += _linear_model_problems() + _inner_predictor_problems() + _mlflow_uris_problems()
    return found + _registry_tables_problems()


def _linear_model_problems() -> list[str]:
    """Whether LinearModel is still the base of the public linear regressors and predicts X @ coef_ + intercept_."""
    from sklearn.linear_model import LinearRegression, QuantileRegressor, RidgeCV

    base = linear_model_base()
    if base is None:
        return [f"{LINEAR_MODEL.name}: cannot be imported"]
    X, y = _tiny_problem()
    wrong = []
    for model in (LinearRegression(), RidgeCV(), QuantileRegressor(alpha=0.0)):
        model.fit(X, y)
        if not isinstance(model, base) or not np.allclose(X @ model.coef_ + model.intercept_, model.predict(X)):
            wrong.append(f"{LINEAR_MODEL.name}: {type(model).__name__} is not a linear model of that form any more")
    return wrong


def _inner_predictor_problems() -> list[str]:
    """Whether the booster's predictor can be built and answers as ``Booster.predict`` does."""
    from lightgbm import LGBMRegressor

    X, y = _tiny_problem()
    booster = LGBMRegressor(n_estimators=5, min_child_samples=2, n_jobs=1, verbose=-1).fit(X, y).booster_
    rows = booster_rows(booster)
    if rows is None:
        return [f"{INNER_PREDICTOR.name}: cannot be imported or called"]
    if not np.allclose(rows(X), booster.predict(X, num_threads=1)):
        return [f"{INNER_PREDICTOR.name}: answers differ from Booster.predict"]
    return []


def _mlflow_uris_problems() -> list[str]:
    """Whether the private URIs can be read, are what MLflow answers inside :func:`mlflow_uris`, and come back after."""
    import mlflow

    before, variables = mlflow_set_uris(), {name: os.environ.get(name) for name in _MLFLOW_URI_VARIABLES}
    if before is None:
        return [f"{MLFLOW_URIS.name}: cannot be read"]
    # never opened: setting a URI connects to nothing
    uri = "sqlite:////nonexistent/thirdparty-check.db"
    with mlflow_uris(uri):
        inside = mlflow_set_uris(), (mlflow.get_tracking_uri(), mlflow.get_registry_uri())
    after = mlflow_set_uris(), {name: os.environ.get(name) for name in _MLFLOW_URI_VARIABLES}
    if inside != ((uri, uri), (uri, uri)):
        return [f"{MLFLOW_URIS.name}: MLflow does not answer the URIs set"]
    if after != (before, variables):
        return [f"{MLFLOW_URIS.name}: the process-wide URIs are not restored"]
    return []


def _registry_tables_problems() -> list[str]:
    """Whether :func:`registry_aliases` reads what MLflow answers, on a registry MLflow makes here: a model with the
    alias on its second version (tagged), one registered without it, one not registered."""
    import tempfile

    import mlflow

    with tempfile.TemporaryDirectory() as folder:
        uri = f"sqlite:///{folder}/registry.db"
        client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
        for name in ("aliased", "plain"):
            client.create_registered_model(name)
            for n in (1, 2):
                client.create_model_version(name, source=f"{folder}/{name}/{n}", tags={"n": str(n), "kind": name})
        client.set_registered_model_alias("aliased", "champion", "2")
        read = registry_aliases(uri, ["aliased", "plain", "absent"], "champion")
        if read is None:
            return [f"{MLFLOW_REGISTRY_TABLES.name}: cannot be read"]
        expected = client.get_model_version_by_alias("aliased", "champion")
        said = read.aliased.get("aliased")
        same = said is not None and (said.version, said.run_id, said.created_ms, said.tags) == (
            str(expected.version),
            expected.run_id,
            expected.creation_timestamp,
            dict(expected.tags),
        )
        if not same or set(read.aliased) != {"aliased"} or read.known != {"aliased", "plain"}:
            return [f"{MLFLOW_REGISTRY_TABLES.name}: answers differ from MlflowClient's ({read})"]
    return []


def _tiny_problem() -> tuple[np.ndarray, np.ndarray]:
    """Twenty seeded rows of two features and a linear target."""
    X = np.random.default_rng(0).uniform(0, 10, size=(20, 2))
    return X, 3.0 * X[:, 0] - X[:, 1] + 2.0


def _release(text: str) -> tuple[int, ...]:
    """The numeric release at the start of a version string: ``1.9.1`` -> (1, 9, 1), ``2.13.0+cpu`` -> (2, 13, 0)."""
    found = re.match(r"\d+(?:\.\d+)*", text)
    return tuple(int(part) for part in found.group().split(".")) if found else ()
