"""The champion cache's second load: from the pickle the first load wrote, without MLflow's skops path (issue 30, item 11)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import mlflow.sklearn
import numpy as np
import pytest
from sklearn.linear_model import LinearRegression

from predictor.champion_source import ChampionSource
from predictor.domain import Target
from predictor.registry import registered_name

PAIR = ("mafft", "cpu1")
LOAD_AGAIN = """
import sys
from pathlib import Path
from predictor.champion_source import ChampionSource
loaded = ChampionSource("sqlite:///unused.db", Path(sys.argv[1])).cached([("mafft", "cpu1")])[("mafft", "cpu1")]
print(float(loaded.champion.model.predict([[2.0, 3.0]])[0]), "skops" in sys.modules, "mlflow" in sys.modules)
"""


def _cached_folder(cache: Path, target: Target = Target.TIME, version: str = "1", scale: float = 1.0) -> Path:
    """One champion version of ``target`` in the cache as a download leaves it: the MLflow model folder and its facts."""
    name = registered_name(*PAIR, target)
    folder = cache / name / version
    model = LinearRegression().fit(np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]), scale * np.array([1.0, 2.0, 3.0]))
    mlflow.sklearn.save_model(model, str(folder / "model"), serialization_format="skops", skops_trusted_types=[])
    facts = {
        "algorithm": PAIR[0],
        "platform": PAIR[1],
        "target": target.value,
        "name": name,
        "version": version,
        "tags": {"features": json.dumps(["a", "b"])},
        "registered_at": None,
        "fit_seconds": None,
    }
    (folder / "champion.json").write_text(json.dumps(facts))
    (folder.parent / "current.json").write_text(json.dumps({"version": version}))
    return folder


def test_a_champion_loaded_once_loads_again_without_mlflow(tmp_path: Path) -> None:
    folder = _cached_folder(tmp_path / "cache")
    first = ChampionSource("sqlite:///unused.db", tmp_path / "cache").cached([PAIR])[PAIR]
    assert first.champion.flavor == "sklearn" and len(list(folder.glob("loaded-*.pickle"))) == 1
    expected = float(first.champion.model.predict(np.array([[2.0, 3.0]]))[0])
    again = subprocess.run(
        [sys.executable, "-c", LOAD_AGAIN, str(tmp_path / "cache")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    prediction, skops, mlflow_loaded = again.stdout.split()
    assert float(prediction) == expected and (skops, mlflow_loaded) == ("False", "False")


def test_an_unreadable_pickle_is_loaded_from_the_mlflow_folder_and_replaced(tmp_path: Path) -> None:
    folder = _cached_folder(tmp_path / "cache")
    ChampionSource("sqlite:///unused.db", tmp_path / "cache").cached([PAIR])
    (pickled,) = folder.glob("loaded-*.pickle")
    pickled.write_bytes(b"not a pickle")
    loaded = ChampionSource("sqlite:///unused.db", tmp_path / "cache").cached([PAIR])[PAIR]
    assert loaded.champion.model.predict(np.array([[1.0, 1.0]]))[0] == 3.0 and pickled.read_bytes() != b"not a pickle"


def test_time_and_memory_champions_of_a_pair_are_cached_apart(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _cached_folder(cache)
    source = ChampionSource("sqlite:///unused.db", cache)
    assert source.cached([PAIR], Target.MEMORY) == {} and source.cached_version(PAIR, Target.MEMORY) is None
    _cached_folder(cache, Target.MEMORY, version="4", scale=1e6)
    memory = source.cached([PAIR], Target.MEMORY)[PAIR].champion
    time = source.cached([PAIR])[PAIR].champion
    assert (memory.name, memory.version, time.name, time.version) == (
        "memory-mafft-cpu1",
        "4",
        "runtime-mafft-cpu1",
        "1",
    )
    one = np.array([[1.0, 1.0]])
    assert memory.model.predict(one)[0] == pytest.approx(3e6) and time.model.predict(one)[0] == pytest.approx(3.0)
    source.forget(PAIR, Target.MEMORY)
    assert source.cached([PAIR], Target.MEMORY) == {} and source.cached_version(PAIR) == "1", (
        "forgetting memory keeps time"
    )
