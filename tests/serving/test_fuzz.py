"""Schemathesis over the OpenAPI document against the live app on 127.0.0.1, with and without the token: no input may earn a 5xx.

The same run as ``benchmarks/fuzz_api.py`` (the schema's examples, the coverage phase's boundary values of
every field, and Hypothesis' positive and negative data), with a few fuzzing examples per operation so the
suite stays quick; every answer must also have a documented status, content type and response schema.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.fuzz_api import fuzz, summary
from serving.app import create_app
from tests.livesrv import serve_app
from tests.trained import TOKEN, Home

EXAMPLES = 10


@pytest.fixture(scope="module")
def fuzzed(trained: Home, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The trained champions behind an app with a store of its own, so fuzzed observations touch no other test."""
    store = Path(tmp_path_factory.mktemp("fuzz")) / "store.db"
    with serve_app(
        create_app(trained.settings.model_copy(update={"store_url": f"sqlite:///{store}"}), api=trained.api)
    ) as url:
        yield url


@pytest.mark.parametrize("token", [TOKEN, None], ids=["token", "anonymous"])
def test_no_input_earns_a_server_error(fuzzed, token, tmp_path):
    """Every operation the live document lists (new routes included)."""
    reports = fuzz(fuzzed, EXAMPLES, token, tmp_path)
    assert len(reports) >= 17 and all(r.requests for r in reports.values()), sorted(reports)
    problems = [p for r in reports.values() for p in (*r.server_errors, *r.failures)]
    assert not problems, summary({"run": reports})
