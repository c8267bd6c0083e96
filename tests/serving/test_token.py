"""Writes work out of the box: the first ``predictor serve`` generates the token (0600, printed once), later starts reuse it."""

from __future__ import annotations

import stat
from pathlib import Path

import httpx
import pytest

from predictor.apitoken import token_path
from predictor.settings import PROJECT_ROOT, Settings
from serving.client import PredictorClient
from serving.settings import ApiSettings
from tests.livesrv import serve_cli


def _reload(base: str, token: str | None) -> int:
    """Status of the admin route ``POST /v1/models/reload`` with ``token`` (or none)."""
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return httpx.post(f"{base}/v1/models/reload", headers=headers, timeout=30).status_code


def test_first_start_generates_and_prints_the_token_later_starts_reuse_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("PREDICTOR_API_TOKEN", raising=False)
    home = tmp_path / "home"
    env = {"PREDICTOR_HOME": str(home)}
    first, second = tmp_path / "first.log", tmp_path / "second.log"

    with serve_cli(env, PROJECT_ROOT, output=first) as base:
        token = token_path(home).read_text().strip()
        assert _reload(base, token) == 200
        assert _reload(base, None) == 401 and _reload(base, token + "x") == 401
    assert stat.S_IMODE(token_path(home).stat().st_mode) == 0o600
    printed = first.read_text()
    assert printed.count(token) == 1 and str(token_path(home)) in printed and "Authorization: Bearer" in printed

    with serve_cli(env, PROJECT_ROOT, output=second) as base:
        port = int(base.rsplit(":", 1)[1])
        with PredictorClient.for_settings(
            ApiSettings.of(Settings(home=home), port=port)
        ) as client:  # the client reads the token too
            assert client.reload()["champions"] == 0
    assert token_path(home).read_text().strip() == token
    assert token not in second.read_text() and "generated" not in second.read_text()


def test_an_explicit_token_wins_over_the_generated_one(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    token_path(home).write_text("generated-one\n")
    log = tmp_path / "serve.log"
    with serve_cli(
        {"PREDICTOR_HOME": str(home), "PREDICTOR_API_TOKEN": "explicit-one"}, PROJECT_ROOT, output=log
    ) as base:
        assert _reload(base, "explicit-one") == 200 and _reload(base, "generated-one") == 401
    assert "generated" not in log.read_text()
