"""The API's settings: the same ``PREDICTOR_API_*`` names as before they were grouped, and the token read from the home."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from predictor.apitoken import ensure_token
from predictor.settings import Settings
from serving.settings import ApiSettings


def test_the_api_settings_read_the_generated_token_and_the_environment_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PREDICTOR_API_TOKEN", raising=False)
    settings = Settings(home=tmp_path)
    assert ApiSettings.of(settings).token is None
    token, _ = ensure_token(tmp_path)
    assert (read := ApiSettings.of(settings).token) is not None and read.get_secret_value() == token
    assert ApiSettings().token is None, "only ApiSettings.of reads the home"
    monkeypatch.setenv("PREDICTOR_API_TOKEN", "from-the-environment")
    assert (read := ApiSettings.of(settings).token) is not None and read.get_secret_value() == "from-the-environment"


def test_the_api_settings_keep_their_environment_names_and_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREDICTOR_API_PORT", "8123")
    monkeypatch.setenv("PREDICTOR_API_HOST", "0.0.0.0")  # noqa: S104 (a setting's value, nothing binds it here)
    monkeypatch.setenv("PREDICTOR_API_MAX_BATCH", "7")
    api = ApiSettings()
    assert (api.port, api.host, api.max_batch, api.url) == (8123, "0.0.0.0", 7, "http://0.0.0.0:8123")  # noqa: S104
    monkeypatch.setenv("PREDICTOR_API_WORKERS", "0")
    with pytest.raises(ValidationError, match="workers"):
        ApiSettings()
