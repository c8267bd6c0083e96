"""Champions from the MLflow registry, through a local disk cache that keeps them servable when the registry is not.

A pair has a time champion and may have a peak-memory one (:class:`~predictor.domain.Target`), each its own
registered model; every method takes the target, time by default.
Each champion version is downloaded once into ``<cache>/<registered name>/<version>-<key>/model`` (the MLflow
model folder as it is), with ``champion.json`` beside it (version tags, registration time, fit time);
``<cache>/<registered name>/current.json`` names the version last served and its folder. The ``key`` is a digest of
the version's training run and registration time (:attr:`ChampionVersion.key`): a registry restored from a backup
numbers its next versions again from the backup's, so a version number alone can name another model than the one
cached under it. When the registry cannot be reached, :meth:`ChampionSource.cached` loads those instead. Every registry call goes through a client of
the source's own URI (:func:`predictor.registry.registry_client`): polling never changes MLflow's global URIs.
"""

from __future__ import annotations

import hashlib
import json
import math
import pickle
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from predictor.addresses import redact_addresses, shown_address
from predictor.atomic import write_bytes_atomically, write_json_atomically
from predictor.domain import Target
from predictor.envelope import TrainingEnvelope
from predictor.registry import (
    CHAMPION_ALIAS,
    ENVELOPE_ARTIFACT,
    Champion,
    check_database,
    registered_name,
    registry_client,
)
from predictor.thirdparty import registry_aliases

# cached versions kept per registered model; older ones are pruned
KEEP_VERSIONS = 3
# <version>-<key>, or <version> as cached before keys
_CACHED_FOLDER = re.compile(r"(\d+)(?:-[0-9a-f]+)?")
# a loaded model's pickle is read by these versions only
_PICKLED_WITH = (
    "numpy",
    "scikit-learn",
    "lightgbm",
    "torch",
    "mlflow",
)
# the registry does not know the registered model at all
_NO_MODEL = "RESOURCE_DOES_NOT_EXIST"
# the model is registered, without a champion alias
_NO_ALIAS = "INVALID_PARAMETER_VALUE"
Pair = tuple[str, str]


class RegistryUnavailable(RuntimeError):
    """The model registry could not be asked (down, unreachable, misconfigured)."""


@dataclass(frozen=True)
class ChampionVersion:
    """What the ``champion`` alias of one (algorithm, platform)'s model of ``target`` points at, before loading it."""

    algorithm: str
    platform: str
    name: str
    version: str
    tags: dict[str, str]
    run_id: str | None
    registered_at: datetime | None
    target: Target = Target.TIME

    @property
    def key(self) -> str:
        """What tells this model version from another registered under the same number (after a restore): a digest of
        its training run and its registration time, which a version registered later cannot share."""
        registered = self.registered_at.isoformat() if self.registered_at else ""
        return hashlib.sha256(f"{self.run_id}|{registered}".encode()).hexdigest()[:12]

    @property
    def folder(self) -> str:
        """The name of its folder in the cache: ``<version>-<key>``."""
        return f"{self.version}-{self.key}"


@dataclass(frozen=True)
class LoadedChampion:
    """A loaded champion with its registry facts and where it was loaded from (``registry`` or ``cache``)."""

    champion: Champion
    registered_at: datetime | None
    fit_seconds: float | None
    origin: str
    examples: np.ndarray | None
    # its ChampionVersion.key (None: cached before versions had keys)
    key: str | None = None


@dataclass(frozen=True)
class AliasLookup:
    """Where the ``champion`` aliases point, and the pairs whose registered model the registry does not know at all.

    A model the registry has never heard of, although this service served it, means an emptied or replaced
    registry (MLflow creates an empty one where its database file went missing), not a withdrawn champion.
    """

    found: dict[Pair, ChampionVersion]
    unknown: list[Pair]


def bound_registry_requests(timeout_s: float) -> None:
    """Make every MLflow HTTP request give up after ``timeout_s`` (rounded up to whole seconds) without retrying.

    MLflow reads these limits from the environment only, so they hold for the whole process; its defaults
    (120 s, 7 retries with backoff) keep a call to a registry that accepts and never answers waiting for minutes.
    """
    from mlflow.environment_variables import (
        MLFLOW_HTTP_REQUEST_MAX_RETRIES,
        MLFLOW_HTTP_REQUEST_TIMEOUT,
    )

    MLFLOW_HTTP_REQUEST_TIMEOUT.set(str(max(1, math.ceil(timeout_s))))
    MLFLOW_HTTP_REQUEST_MAX_RETRIES.set("0")


class ChampionSource:
    """Looks up champion aliases and loads champion versions, caching each on local disk."""

    def __init__(self, tracking_uri: str, cache_dir: Path, connect_timeout_s: float = 10.0) -> None:
        self.tracking_uri = tracking_uri
        self.cache_dir = cache_dir
        # a database registry that does not connect within it is unavailable
        self.connect_timeout_s = connect_timeout_s

    def versions(self, pairs: list[Pair], target: Target = Target.TIME) -> dict[Pair, ChampionVersion]:
        """The version each pair's alias points at (pairs without one are left out); RegistryUnavailable if unreachable."""
        return self.lookup(pairs, target).found

    def lookup(self, pairs: list[Pair], target: Target = Target.TIME) -> AliasLookup:
        """Where each pair's alias of ``target`` points, and which pairs have no registered model of it at all;
        RegistryUnavailable if unreachable. A registry in a database is read directly (:func:`registry_aliases`, no
        MLflow import: a local predict's start), any other through MLflow."""
        found, unknown = {}, []
        try:
            check_database(self.tracking_uri, self.connect_timeout_s)
            read = registry_aliases(
                self.tracking_uri, [registered_name(a, p, target) for a, p in pairs], CHAMPION_ALIAS
            )
        except Exception as exc:
            raise RegistryUnavailable(
                f"model registry {shown_address(self.tracking_uri)} unavailable: {first_line(exc)}"
            ) from exc
        if read is not None:
            for algorithm, platform in pairs:
                name = registered_name(algorithm, platform, target)
                if (at := read.aliased.get(name)) is not None:
                    found[(algorithm, platform)] = ChampionVersion(
                        algorithm, platform, name, at.version, at.tags, at.run_id, _from_millis(at.created_ms), target
                    )
                elif name not in read.known:
                    unknown.append((algorithm, platform))
            return AliasLookup(found, unknown)
        from mlflow.exceptions import MlflowException

        try:
            client = registry_client(self.tracking_uri)
            for algorithm, platform in pairs:
                name = registered_name(algorithm, platform, target)
                try:
                    v = client.get_model_version_by_alias(name, CHAMPION_ALIAS)
                except MlflowException as exc:
                    if exc.error_code == _NO_MODEL:
                        unknown.append((algorithm, platform))
                        continue
                    if exc.error_code == _NO_ALIAS:
                        continue
                    raise
                found[(algorithm, platform)] = ChampionVersion(
                    algorithm,
                    platform,
                    name,
                    str(v.version),
                    dict(v.tags),
                    v.run_id,
                    _from_millis(v.creation_timestamp),
                    target,
                )
        except Exception as exc:
            raise RegistryUnavailable(
                f"model registry {shown_address(self.tracking_uri)} unavailable: {first_line(exc)}"
            ) from exc
        return AliasLookup(found, unknown)

    def load_current(self, pairs: list[Pair], target: Target = Target.TIME) -> dict[Pair, LoadedChampion]:
        """Load the version each pair's alias of ``target`` points at (pairs without one are left out); RegistryUnavailable
        if unreachable."""
        return {pair: self.load(version) for pair, version in self.versions(pairs, target).items()}

    def load(self, version: ChampionVersion) -> LoadedChampion:
        """Download ``version`` into the cache (once per version and key), mark it current and load it."""
        folder = self.cache_dir / version.name / version.folder
        if not (folder / "champion.json").exists():
            self._download(version, folder)
        loaded = _load_folder(folder, origin="registry")
        current = {"version": version.version, "folder": version.folder}
        write_json_atomically(self.cache_dir / version.name / "current.json", current)
        self._prune(version.name, keep=version.folder)
        return loaded

    def cached(self, pairs: list[Pair], target: Target = Target.TIME) -> dict[Pair, LoadedChampion]:
        """The champions of ``target`` last served for ``pairs``, from the cache alone (pairs never cached are left out)."""
        found = {}
        for pair in pairs:
            current = self._current(pair, target)
            if current is not None:
                folder = self.cache_dir / registered_name(*pair, target) / current[1]
                found[pair] = _load_folder(folder, origin="cache")
        return found

    def cached_version(self, pair: Pair, target: Target = Target.TIME) -> str | None:
        """The version of ``target`` last served for ``pair``, as the cache names it (None when it never was, or the marker
        is unreadable)."""
        current = self._current(pair, target)
        return None if current is None else current[0]

    def _current(self, pair: Pair, target: Target) -> tuple[str, str] | None:
        """(version, folder) of ``target`` last served for ``pair``; a marker written before folders had keys names the
        version's own folder."""
        current = self.cache_dir / registered_name(*pair, target) / "current.json"
        try:
            marker = json.loads(current.read_text())
            version = str(marker["version"])
            folder = str(marker.get("folder", version))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        return (version, folder) if folder and "/" not in folder and folder not in (".", "..") else None

    def forget(self, pair: Pair, target: Target = Target.TIME) -> None:
        """No longer name a version of ``target`` last served for ``pair`` (its champion was withdrawn); the cached folders
        stay."""
        (self.cache_dir / registered_name(*pair, target) / "current.json").unlink(missing_ok=True)

    def _download(self, version: ChampionVersion, folder: Path) -> None:
        """Copy the MLflow model folder and write its facts, atomically: a half-written folder is never used."""
        import mlflow

        # Where the version's files are, asked of this registry: MLflow resolves a ``models:/`` URI against its global one.
        location = registry_client(self.tracking_uri).get_model_version_download_uri(version.name, version.version)
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{version.version}-", dir=folder.parent))
        try:
            downloaded = mlflow.artifacts.download_artifacts(
                artifact_uri=location, dst_path=str(staging / "download"), tracking_uri=self.tracking_uri
            )
            Path(downloaded).rename(staging / "model")
            shutil.rmtree(staging / "download", ignore_errors=True)
            facts = {
                "algorithm": version.algorithm,
                "platform": version.platform,
                "target": version.target.value,
                "name": version.name,
                "version": version.version,
                "key": version.key,
                "run_id": version.run_id,
                "tags": version.tags,
                "registered_at": version.registered_at.isoformat() if version.registered_at else None,
                "fit_seconds": _fit_seconds(self.tracking_uri, version.run_id),
            }
            _download_envelope(self.tracking_uri, version.run_id, staging)
            write_json_atomically(staging / "champion.json", facts)
            try:
                staging.rename(folder)
            # another process cached the same version first
            except OSError:
                if not (folder / "champion.json").exists():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _prune(self, name: str, keep: str) -> None:
        """Remove all but the newest cached versions of ``name`` (never the folder ``keep``): by version number, then
        by when they were cached (a restored registry's later model under the same number is the newer)."""
        folders = []
        for path in (self.cache_dir / name).iterdir():
            number = _CACHED_FOLDER.fullmatch(path.name)
            if number is not None and path.is_dir():
                folders.append((int(number[1]), path.stat().st_mtime, path))
        for _, _, old in sorted(folders)[:-KEEP_VERSIONS]:
            if old.name != keep:
                shutil.rmtree(old, ignore_errors=True)


def _load_folder(folder: Path, origin: str) -> LoadedChampion:
    """Load a cached champion folder: from the pickle of its loaded model when an earlier load wrote one, else with
    the MLflow flavor it was saved in (sklearn, else the generic pyfunc), writing that pickle for the next load."""
    facts = json.loads((folder / "champion.json").read_text())
    tags = facts["tags"]
    feature_names = json.loads(tags.get("features", "[]"))
    flavor, model, examples = _loaded_model(folder, feature_names)
    champion = Champion(
        algorithm=facts["algorithm"],
        platform=facts["platform"],
        name=facts["name"],
        version=facts["version"],
        flavor=flavor,
        feature_names=feature_names,
        model=model,
        tags=tags,
    )
    envelope_file = folder / ENVELOPE_ARTIFACT
    if envelope_file.exists():
        champion = replace(champion, envelope=TrainingEnvelope.from_json(envelope_file.read_text()))
    registered_at = datetime.fromisoformat(facts["registered_at"]) if facts["registered_at"] else None
    return LoadedChampion(champion, registered_at, facts["fit_seconds"], origin, examples, facts.get("key"))


def _loaded_model(folder: Path, feature_names: list[str]) -> tuple[str, Any, np.ndarray | None]:
    """The flavor, model and input examples (rows in ``feature_names``' order) of a cached folder.

    MLflow's sklearn flavor loads through skops, whose import walks every scikit-learn estimator (and torch with
    them): seconds for each process that loads a champion, the CLI's local ``predict`` among them. So the first load
    of a folder pickles what it loaded, named by the versions of the libraries that pickled it; later loads with the
    same versions read that alone. The pickle is this host's own file, written in the private cache, never downloaded.
    """
    loaded = folder / _pickle_name()
    try:
        flavor, model, examples = pickle.loads(loaded.read_bytes())
        return flavor, model, examples
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        # no pickle yet, or one an older library version cannot read: load from the MLflow folder again
        pass
    import mlflow
    from mlflow.models import Model

    model_dir = folder / "model"
    meta = Model.load(str(model_dir))
    flavor = "sklearn" if "sklearn" in meta.flavors else "python_function"
    model = (
        mlflow.sklearn.load_model(str(model_dir)) if flavor == "sklearn" else mlflow.pyfunc.load_model(str(model_dir))
    )
    examples = _examples(meta, model_dir, feature_names)
    try:
        write_bytes_atomically(loaded, pickle.dumps((flavor, model, examples), protocol=pickle.HIGHEST_PROTOCOL))
        # pickled by other library versions: never read again
        for stale in folder.glob("loaded-*.pickle"):
            if stale != loaded:
                stale.unlink(missing_ok=True)
    except (pickle.PicklingError, TypeError, AttributeError, OSError):
        # a model that does not pickle (or a read-only cache) is loaded from MLflow's folder every time
        pass
    return flavor, model, examples


@lru_cache(maxsize=1)
def _pickle_name() -> str:
    """``loaded-<digest>.pickle``, the digest of Python's and the model libraries' versions."""
    versions = [sys.version, *(_version(name) for name in _PICKLED_WITH)]
    return f"loaded-{hashlib.sha256(repr(versions).encode()).hexdigest()[:16]}.pickle"


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "absent"


def _examples(meta: Any, model_dir: Path, feature_names: list[str]) -> np.ndarray | None:
    """The input example logged with the model, as rows in the champion's feature order (None if unusable)."""
    try:
        example = meta.load_input_example(str(model_dir))
        return example[feature_names].to_numpy(dtype=float)
    except Exception:  # noqa: BLE001 - an example is a nicety for checking fast paths, never required
        return None


def _download_envelope(tracking_uri: str, run_id: str | None, folder: Path) -> None:
    """Copy the version's training envelope beside its model; versions registered before envelopes have none."""
    import mlflow
    from mlflow.exceptions import MlflowException

    if run_id is None:
        return
    try:
        mlflow.artifacts.download_artifacts(
            run_id=run_id, artifact_path=ENVELOPE_ARTIFACT, dst_path=str(folder), tracking_uri=tracking_uri
        )
    except (OSError, MlflowException):
        return


def _fit_seconds(tracking_uri: str, run_id: str | None) -> float | None:
    """Seconds the champion's final fit took, from its training run (None when not recorded)."""
    if run_id is None:
        return None
    try:
        return registry_client(tracking_uri).get_run(run_id).data.metrics.get("refit_seconds")
    except Exception:  # noqa: BLE001 - the fit time is informative only
        return None


def _from_millis(millis: int | None) -> datetime | None:
    return datetime.fromtimestamp(millis / 1000, tz=UTC) if millis else None


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type when empty), bounded and without passwords, for status pages."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return redact_addresses(text)[:300]
