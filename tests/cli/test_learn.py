"""`predictor train`, `report` and `models ...` as a user meets them: one error line, whole tables, rows as stored."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from cli.app import app
from predictor.store import MeasurementStore


def decision(**changes: Any) -> dict[str, Any]:
    """A ``model_decisions`` row as training writes it."""
    return {
        "decided_at": datetime(2026, 11, 25, 14, 1, 52, tzinfo=UTC), "algorithm": "mafft", "platform": "cpu1",
        "decision": "promoted", "trigger": "predictor train", "challenger": "ensemble(svr_log x1, mlp x1)", "incumbent": None,
        "version": "1", "serving_version": "1", "n_rows": 144, "reason": "no champion served before", "details": {},
    } | changes  # fmt: skip


@pytest.fixture
def history(store: MeasurementStore, store_url: str, monkeypatch: pytest.MonkeyPatch) -> MeasurementStore:
    """The store the CLI reads (PREDICTOR_STORE_URL), holding one sound decision."""
    monkeypatch.setenv("PREDICTOR_STORE_URL", store_url)
    store.add_decision(decision())
    return store


def test_history_shows_stored_terminal_escapes_escaped_and_takes_any_limit(runner: CliRunner, history: MeasurementStore) -> None:
    history.add_decision(decision(platform="cpu2", reason="evil \x1b[2J\x1b]0;pwned\x07 [red]markup[/red]", trigger="t\x1b[31m"))
    result = runner.invoke(app, ["models", "history", "--limit", "99999999999999999999"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "\x1b" not in out and "\x07" not in out
    assert "evil \\x1b[2J\\x1b]0;pwned\\x07 [red]markup[/red]" in out and "t\\x1b[31m" in out
    assert "│ 2 │" in out and "│ 1 │" in out  # the # column is not squeezed away at 80 columns
    assert "…" not in out


def test_history_shows_an_unreadable_row_marked_beside_the_sound_ones(runner: CliRunner, history: MeasurementStore, store_url: str) -> None:
    if not store_url.startswith("sqlite"):
        pytest.skip("PostgreSQL's json and timestamptz columns refuse such a row when it is written")
    history.add_decision(decision(platform="cpu2"))
    with history.engine.begin() as conn:
        conn.execute(text("UPDATE model_decisions SET details = '{not json', decided_at = 'yesterday-ish' WHERE id = 2"))
    result = runner.invoke(app, ["models", "history"])
    assert result.exit_code == 0, result.output
    assert "│ 2! │ yesterday-ish" in result.stdout and "│ 1  │ 2026-11-25 14:01:52" in result.stdout
    assert "#2 mafft/cpu2: no champion served before [unreadable: decided_at (ValueError), details (JSONDecodeError)]" in result.stdout
    assert "Traceback" not in result.output
