"""Fixtures of the API tests alone; the trained home and the API over it (``trained``, ``base``) are in
tests/trained.py, shared with tests/cli."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from tests.trained import TOKEN


@pytest.fixture
def auth() -> dict[str, str]:
    return {"authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def features_of(base: str) -> Callable[[str], dict[str, float]]:
    """The features the service extracts from one of the generated inputs."""

    def features(name: str) -> dict[str, float]:
        body = httpx.post(
            f"{base}/v1/predict", json={"algorithm": "mafft", "params": {"input": name}, "platforms": ["cpu1"]}
        ).json()
        return body["estimates"][0]["features"]

    return features
