"""`predictor train`, `report` and `models ...` as a user meets them: one error line, whole tables, rows as stored."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from cli.app import app
from predictor.domain import Measurement
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


def store_power_law_runs(store: MeasurementStore, n: int = 60, seed: int = 2) -> None:
    """``n`` mafft runs on cpu1 whose time is a power law of the input's residues: a linear_log member fits them well."""
    rng = np.random.default_rng(seed)
    size = rng.uniform(10, 1000, n)
    seconds = 0.01 * size**1.2 * rng.lognormal(0, 0.05, n)
    store.add(
        Measurement(run_id=f"run-{i:04d}", algorithm="mafft", platform="cpu1", features={"input.residues": float(x)}, wall_seconds=float(t))
        for i, (x, t) in enumerate(zip(size, seconds, strict=True))
    )


@pytest.fixture
def trained(tmp_path: Path) -> Iterator[tuple[dict[str, str], MeasurementStore]]:
    """A home whose mafft/cpu1 champion (linear_log, version 1) was trained on 60 stored runs; its env and store."""
    env = {"PREDICTOR_HOME": str(tmp_path / "home"), "PREDICTOR_CV_FOLDS": "3", "PREDICTOR_N_JOBS": "1"}
    store = MeasurementStore(f"sqlite:///{tmp_path / 'home' / 'store.db'}")
    store.migrate()
    store_power_law_runs(store)
    first = CliRunner().invoke(app, ["train", "--model", "linear_log"], env=env)
    assert first.exit_code == 0 and "mafft/cpu1 promoted" in first.output, first.output
    yield env, store
    store.dispose()


def test_train_force_retrains_under_the_guard_and_promote_overrides_it(trained: tuple[dict[str, str], MeasurementStore]) -> None:
    env, store = trained
    runner = CliRunner()
    same = runner.invoke(app, ["train", "--model", "linear_log"], env=env)
    assert "mafft/cpu1 unchanged" in same.output and "(--force retrains)" in same.output, same.output
    forced = runner.invoke(app, ["train", "--model", "mean", "--force"], env=env)
    assert forced.exit_code == 0, forced.output
    assert "mafft/cpu1 kept: mean does not beat linear_log" in forced.output and "overridden" not in forced.output, forced.output
    promoted = runner.invoke(app, ["train", "--model", "mean", "--promote"], env=env)
    assert promoted.exit_code == 0 and "mafft/cpu1 forced" in promoted.output and "guard was overridden" in promoted.output
    assert [(r["decision"], r["trigger"]) for r in store.decisions()] == [
        ("forced", "predictor train --promote"), ("kept", "predictor train --force"), ("promoted", "predictor train"),
    ]  # fmt: skip


def test_train_refuses_an_unknown_model_or_algorithm_in_one_line(runner: CliRunner) -> None:
    for args, says in [
        (["--model", "nope", "--dry-run"], "error: unknown model 'nope'; known: mean, linear"),
        (["--algorithm", "nope"], "error: unknown algorithm 'nope'; known: blastn"),
        (["--algorithm", "mafft"], "error: no runs of mafft are stored; `predictor ingest`, `profile` or `sweep` store some first"),
    ]:
        result = runner.invoke(app, ["train", *args])
        assert result.exit_code == 2 and result.stderr.startswith(says) and result.stderr.count("\n") == 1, (args, result.output)


def test_report_of_a_platform_the_latest_session_left_out_says_so(trained: tuple[dict[str, str], MeasurementStore]) -> None:
    env, _ = trained
    runner = CliRunner()
    result = runner.invoke(app, ["report", "--algorithm", "mafft", "--platform", "cpu2"], env=env)
    assert result.exit_code == 2 and result.stderr.startswith("error: mafft's latest training session trained nothing on cpu2"), result.output
    unknown = runner.invoke(app, ["report", "--algorithm", "mafft", "--platform", "cpu9"], env=env)
    assert unknown.exit_code == 2 and unknown.stderr.startswith("error: unknown platform 'cpu9'"), unknown.output


def test_rollback_moves_the_champion_back_and_is_recorded(trained: tuple[dict[str, str], MeasurementStore]) -> None:
    env, store = trained
    runner = CliRunner()
    first = runner.invoke(app, ["models", "rollback", "mafft", "cpu1"], env=env)
    assert first.exit_code == 2 and first.stderr.startswith("error: version 1 is the first champion of mafft on cpu1"), first.output
    promoted = runner.invoke(app, ["train", "--model", "mean", "--promote"], env=env)
    assert promoted.exit_code == 0 and "mafft/cpu1 forced" in promoted.output, promoted.output
    missing = runner.invoke(app, ["models", "rollback", "mafft", "cpu1", "--to", "7"], env=env)
    assert missing.exit_code == 2 and missing.stderr.startswith("error: runtime-mafft-cpu1 has no version 7; registered: 1, 2")
    back = runner.invoke(app, ["models", "rollback", "mafft", "cpu1"], env=env)
    assert back.exit_code == 0 and "mafft/cpu1: rolled back by hand from version 2 to version 1" in back.output, back.output
    listed = runner.invoke(app, ["models", "list"], env=env)
    assert "│ mafft     │ cpu1     │       1 │ linear_log │" in listed.stdout, listed.output
    newest = store.decisions(limit=1)[0]
    assert (newest["decision"], newest["trigger"], newest["serving_version"]) == ("rolled back", "predictor models rollback", "1")
    again = runner.invoke(app, ["train", "--model", "linear_log"], env=env)
    assert "mafft/cpu1 unchanged" not in again.output, again.output  # judged again against the restored version
