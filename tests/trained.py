"""The session's trained home and the API served over it, shared by every folder (tests/conftest.py imports the
fixtures, so each pytest worker trains it once even when tests/serving and tests/cli both use it); and the functions
that build trained homes: champions trained on real FASTA features, served by uvicorn on 127.0.0.1.

The root conftest imports this module in every pytest process, so the functions import the API, training and the
registry (MLflow, scikit-learn: about 3 s) when they run, not here."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from data.datagen import write_family_fasta
from predictor.catalog import load_catalog
from predictor.domain import Measurement, Source, Target
from predictor.jobfeatures import job_features
from predictor.settings import BUNDLED_DATA, Settings
from predictor.store import MeasurementStore
from serving.settings import ApiSettings
from training.settings import TrainingSettings

TOKEN = "test-token-5f1c"
QUANTILES = {"0.01": -0.5, "0.05": -0.3, "0.25": -0.1, "0.5": 0.0, "0.75": 0.1, "0.95": 0.3, "0.99": 0.6}
MIB = 1024**2


def peak_bytes(features: dict[str, float]) -> float:
    """The peak memory of a generated MAFFT run in the memory tests' law: 30 MiB plus 2 KiB per residue."""
    return 30 * MIB + 2048 * features["input.residues"]


def api_settings(**changes: object) -> ApiSettings:
    """The API's settings the tests serve with: their token, the champions loaded once (no polling)."""
    return ApiSettings(**{"token": TOKEN, "reload_interval_s": 0, **changes})  # type: ignore[arg-type]


@dataclass(frozen=True)
class Home:
    """A trained service home: its settings, the API's (token set) and the folder of input files under the data root."""

    settings: TrainingSettings
    inputs: Path
    api: ApiSettings = field(default_factory=api_settings)


def measurements(inputs: Path, memory_on: tuple[str, ...] = (), suffix: str = "") -> list[Measurement]:
    """Runs of MAFFT on generated families under a known cost law (n^2 x length), cpu2 0.6x cpu1; on the platforms
    ``memory_on``, with a peak memory within 10 % of :func:`peak_bytes`. ``suffix`` ends each run id."""
    catalog = load_catalog(BUNDLED_DATA / "catalog.yaml")
    out = []
    for i, (n, length) in enumerate((n, m) for n in (4, 8, 16, 32, 48) for m in (50, 100, 200, 400)):
        path = write_family_fasta(
            inputs / f"f{i}.fa", n_sequences=n, length=length, mutation_rate=0.2, alphabet="protein", seed=i
        )
        params = {"input": str(path)}
        features = job_features(catalog.algorithm("mafft"), params)
        for platform, speed in (("cpu1", 1.0), ("cpu2", 0.6)):
            rss = round(peak_bytes(features) * (1 + 0.1 * math.sin(i)) / 1024) if platform in memory_on else None
            out.append(
                Measurement(
                    run_id=f"{platform}-{i}{suffix}",
                    algorithm="mafft",
                    platform=platform,
                    params=params,
                    features=features,
                    wall_seconds=speed * (0.05 + 2e-6 * n * n * length),
                    max_rss_kb=rss,
                    source=Source.PROBE,
                )
            )
    return out


def ensure_quantiles(settings: Settings) -> None:
    """Give each champion residual quantiles if training did not record them, so intervals are served."""
    from predictor.registry import CHAMPION_ALIAS, registered_name, registry_client

    client = registry_client(settings.resolved_tracking_uri)
    for platform in ("cpu1", "cpu2"):
        version = client.get_model_version_by_alias(registered_name("mafft", platform), CHAMPION_ALIAS)
        if "residual_log_quantiles" not in version.tags:
            client.set_model_version_tag(version.name, version.version, "residual_log_quantiles", json.dumps(QUANTILES))


def train_memory(home: Home, models: list[str], runs: list[Measurement] | None = None) -> None:
    """Store ``runs`` (if given) and train the home's peak-memory champions with ``models`` (training's own path, forced
    past the guard): a ``memory-mafft-<platform>`` version per pair whose runs measured their memory."""
    from training.pipeline import run_training

    store = MeasurementStore(home.settings.resolved_store_url)
    if runs:
        store.add(runs)
    run_training(home.settings, store, models=models, force=True, target=Target.MEMORY)
    store.dispose()


def train_home(root: Path, models: list[str], memory_on: tuple[str, ...] = ()) -> Home:
    """A fresh home under ``root`` with the measurements stored (peak memory on ``memory_on``) and ``models`` trained into
    run-time champions."""
    from training.pipeline import run_training

    inputs = root / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    settings = TrainingSettings(home=root / "home", data_roots=[inputs], cv_folds=3)
    store = MeasurementStore(settings.resolved_store_url)
    store.migrate()
    store.add(measurements(inputs, memory_on))
    run_training(settings, store, models=models)
    store.dispose()
    ensure_quantiles(settings)
    return Home(settings, inputs)


@pytest.fixture(scope="session")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Home:
    """One trained home for the read-only API and CLI tests (linear_log champions with intervals)."""
    home = train_home(tmp_path_factory.mktemp("served"), ["linear_log"])
    (home.inputs / "junk.fa").write_bytes(b"\x00\x01\x02 not fasta")
    (home.inputs / "escape.fa").symlink_to(BUNDLED_DATA / "catalog.yaml")
    return home


@pytest.fixture(scope="session")
def base(trained: Home) -> Iterator[str]:
    """The API over ``trained``, on 127.0.0.1, for the whole session."""
    from serving.app import create_app
    from tests.livesrv import serve_app

    with serve_app(create_app(trained.settings, api=trained.api)) as url:
        yield url
