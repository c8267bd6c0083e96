"""Shared fixtures of the API tests: champions trained on real FASTA features, served by uvicorn on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import mlflow
import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression

from predictor.catalog import load_catalog
from predictor.datagen import write_family_fasta
from predictor.domain import Measurement, Source, Target
from predictor.jobfeatures import job_features
from predictor.envelope import TrainingEnvelope
from predictor.registry import CHAMPION_ALIAS, ENVELOPE_ARTIFACT, registered_name, registry_client
from predictor.settings import BUNDLED_DATA, Settings
from predictor.store import MeasurementStore
from serving import create_app
from tests.livesrv import serve_app
from training.pipeline import run_training

TOKEN = "test-token-5f1c"
QUANTILES = {"0.01": -0.5, "0.05": -0.3, "0.25": -0.1, "0.5": 0.0, "0.75": 0.1, "0.95": 0.3, "0.99": 0.6}
MIB = 1024**2


def peak_bytes(features: dict[str, float], scale: float = 1.0) -> float:
    """The peak memory of a generated MAFFT run in the memory tests' law: 30 MiB plus 2 KiB per residue, times ``scale``."""
    return scale * (30 * MIB + 2048 * features["input.residues"])


@dataclass(frozen=True)
class Home:
    """A trained service home: its settings (token set) and the folder of input files under the data root."""

    settings: Settings
    inputs: Path


def measurements(inputs: Path) -> list[Measurement]:
    """Runs of MAFFT on generated families under a known cost law (n^2 x length), cpu2 0.6x cpu1."""
    catalog = load_catalog(BUNDLED_DATA / "catalog.yaml")
    out = []
    for i, (n, length) in enumerate((n, m) for n in (4, 8, 16, 32, 48) for m in (50, 100, 200, 400)):
        path = write_family_fasta(inputs / f"f{i}.fa", n_sequences=n, length=length, mutation_rate=0.2, alphabet="protein", seed=i)
        params = {"input": str(path)}
        features = job_features(catalog.algorithm("mafft"), params)
        for platform, speed in (("cpu1", 1.0), ("cpu2", 0.6)):
            out.append(
                Measurement(
                    run_id=f"{platform}-{i}", algorithm="mafft", platform=platform, params=params, features=features,
                    wall_seconds=speed * (0.05 + 2e-6 * n * n * length), source=Source.PROBE,
                )
            )  # fmt: skip
    return out


def ensure_quantiles(settings: Settings) -> None:
    """Give each champion residual quantiles if training did not record them, so intervals are served."""
    client = registry_client(settings.resolved_tracking_uri)
    for platform in ("cpu1", "cpu2"):
        version = client.get_model_version_by_alias(registered_name("mafft", platform), CHAMPION_ALIAS)
        if "residual_log_quantiles" not in version.tags:
            client.set_model_version_tag(version.name, version.version, "residual_log_quantiles", json.dumps(QUANTILES))


def register_memory_champions(home: Home, platforms: tuple[str, ...] = ("cpu1", "cpu2"), scale: float = 1.0) -> dict[str, str]:
    """Register a peak-memory champion for MAFFT on each of ``platforms`` in the home's real MLflow registry, as training
    registers one (a fitted model logged in a run, a version of ``memory-mafft-<platform>`` with its features and residual
    quantiles, the ``champion`` alias moved to it): a linear model of :func:`peak_bytes` (times ``scale``) on the time
    champion's features. Returns each platform's new version."""
    settings = home.settings
    uri = settings.resolved_tracking_uri
    client = registry_client(uri)
    previous = mlflow.get_tracking_uri(), mlflow.get_registry_uri()
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    try:
        experiment = client.get_experiment_by_name("memory-fixture")
        experiment_id = experiment.experiment_id if experiment else client.create_experiment(
            "memory-fixture", artifact_location=(settings.resolved_artifact_root / "memory-fixture").as_uri()
        )  # fmt: skip
        runs = measurements(home.inputs)
        versions = {}
        for platform in platforms:
            names = json.loads(client.get_model_version_by_alias(registered_name("mafft", platform), CHAMPION_ALIAS).tags["features"])
            X = pd.DataFrame([[m.features[n] for n in names] for m in runs if m.platform == platform], columns=names)
            y = [peak_bytes(m.features, scale) for m in runs if m.platform == platform]
            model = LinearRegression().fit(X, y)
            with mlflow.start_run(experiment_id=experiment_id) as run:
                info = mlflow.sklearn.log_model(model, name="model", input_example=X.head(3), serialization_format="skops",
                                                skops_trusted_types=[])  # fmt: skip
                client.log_text(run.info.run_id, TrainingEnvelope.fit(X, np.asarray(y)).to_json(), ENVELOPE_ARTIFACT)
            name = registered_name("mafft", platform, Target.MEMORY)
            tags = {"target": "memory", "features": json.dumps(names), "model_kind": "linear", "residual_log_quantiles": json.dumps(QUANTILES)}
            version = mlflow.register_model(info.model_uri, name, tags=tags)
            client.set_registered_model_alias(name, CHAMPION_ALIAS, version.version)
            versions[platform] = str(version.version)
        return versions
    finally:
        mlflow.set_tracking_uri(previous[0])
        mlflow.set_registry_uri(previous[1])


def train_home(root: Path, models: list[str]) -> Home:
    """A fresh home under ``root`` with the measurements stored and ``models`` trained into champions."""
    inputs = root / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    settings = Settings(home=root / "home", data_roots=[inputs], cv_folds=3, api_token=TOKEN, api_reload_interval_s=0)
    store = MeasurementStore(settings.resolved_store_url)
    store.migrate()
    store.add(measurements(inputs))
    run_training(settings, store, models=models)
    store.dispose()
    ensure_quantiles(settings)
    return Home(settings, inputs)


@pytest.fixture(scope="session")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Home:
    """One trained home for the read-only API tests (linear_log champions with intervals)."""
    home = train_home(tmp_path_factory.mktemp("served"), ["linear_log"])
    (home.inputs / "junk.fa").write_bytes(b"\x00\x01\x02 not fasta")
    (home.inputs / "escape.fa").symlink_to(BUNDLED_DATA / "catalog.yaml")
    return home


@pytest.fixture(scope="session")
def base(trained: Home) -> Iterator[str]:
    """The API over ``trained``, on 127.0.0.1, for the whole session."""
    with serve_app(create_app(trained.settings)) as url:
        yield url


@pytest.fixture
def auth() -> dict[str, str]:
    return {"authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def features_of(base: str) -> Callable[[str], dict[str, float]]:
    """The features the service extracts from one of the generated inputs."""

    def features(name: str) -> dict[str, float]:
        body = httpx.post(f"{base}/v1/predict", json={"algorithm": "mafft", "params": {"input": name}, "platforms": ["cpu1"]}).json()
        return body["estimates"][0]["features"]

    return features
