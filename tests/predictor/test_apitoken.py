"""The generated API token: created once with owner-only permissions (read back by the API's settings:
tests/serving/test_settings.py)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from predictor.apitoken import ensure_token, read_token, token_path


def test_a_fresh_home_gets_an_owner_only_token_once(tmp_path: Path):
    home = tmp_path / "home"
    assert read_token(home) is None
    token, created = ensure_token(home)
    assert created and len(token) >= 40
    assert stat.S_IMODE(token_path(home).stat().st_mode) == 0o600
    assert ensure_token(home) == (token, False) and read_token(home) == token


def test_an_empty_token_file_is_refused_not_used(tmp_path: Path):
    token_path(tmp_path).write_text("\n")
    assert read_token(tmp_path) is None
    with pytest.raises(ValueError, match="api-token is empty: delete it"):
        ensure_token(tmp_path)
