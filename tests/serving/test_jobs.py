"""serving/jobs.py: a request's algorithm is looked up in the catalog once, however the job is asked about (issue 40:
``/v1/predict`` looked it up four times, in serving/jobs.py and three places of predictor/oracle.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from predictor.settings import Settings
from serving.app import create_app
from serving.settings import ApiSettings
from tests.livesrv import serve_app

JOB = {"algorithm": "clustalo", "features": {"input.sequences": 20.0}, "platforms": ["cpu1"]}


class CountingDict(dict[str, Any]):
    """A dict that counts the keys read through it, the ways the catalog's entries are read."""

    def __init__(self, entries: dict[str, Any]) -> None:
        super().__init__(entries)
        self.reads: Counter[str] = Counter()

    def __getitem__(self, key: str) -> Any:
        self.reads[key] += 1
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.reads[key] += 1
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self.reads[str(key)] += 1
        return super().__contains__(key)


@pytest.fixture
def counted(tmp_path: Path) -> Iterator[tuple[str, CountingDict]]:
    """An API without champions whose catalog counts each read of an algorithm's definition."""
    settings = Settings(home=tmp_path / "home", data_roots=[tmp_path], store_url=f"sqlite:///{tmp_path / 'runs.db'}")
    app: FastAPI = create_app(settings, api=ApiSettings(token="t", reload_interval_s=0))
    with serve_app(app) as url:
        catalog = app.state.service.catalog
        assert app.state.service.oracle.catalog is catalog
        algorithms = CountingDict(catalog.algorithms)
        object.__setattr__(catalog, "algorithms", algorithms)  # the catalog is frozen: this test alone swaps the dict
        yield url, algorithms


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("/v1/predict", JOB),
        ("/v1/predict/batch", {"jobs": [JOB]}),
        ("/v1/predict/matrix", {"algorithm": "clustalo", "columns": ["input.sequences"], "rows": [[20.0], [40.0]]}),
    ],
)
def test_one_catalog_lookup_per_request(counted: tuple[str, CountingDict], route: str, body: dict[str, Any]) -> None:
    base, algorithms = counted
    answer = httpx.post(f"{base}{route}", json=body, timeout=30)
    assert answer.status_code == 200, answer.text
    assert algorithms.reads == Counter({"clustalo": 1})


def test_an_unknown_algorithm_is_a_404_after_one_lookup(counted: tuple[str, CountingDict]) -> None:
    base, algorithms = counted
    answer = httpx.post(f"{base}/v1/predict", json={**JOB, "algorithm": "nope"}, timeout=30)
    assert answer.status_code == 404 and "unknown algorithm 'nope'" in answer.json()["detail"]
    assert algorithms.reads == Counter({"nope": 1})
