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
        "decided_at": datetime(2026, 11, 25, 14, 1, 52, tzinfo=UTC),
        "algorithm": "mafft",
        "platform": "cpu1",
        "decision": "promoted",
        "trigger": "predictor train",
        "challenger": "ensemble(svr_log x1, mlp x1)",
        "incumbent": None,
        "version": "1",
        "serving_version": "1",
        "n_rows": 144,
        "reason": "no champion served before",
        "details": {},
    } | changes


@pytest.fixture
def history(store: MeasurementStore, store_url: str, monkeypatch: pytest.MonkeyPatch) -> MeasurementStore:
    """The store the CLI reads (PREDICTOR_STORE_URL), holding one sound decision."""
    monkeypatch.setenv("PREDICTOR_STORE_URL", store_url)
    store.add_decision(decision())
    return store


def test_history_shows_stored_terminal_escapes_escaped_and_takes_any_limit(
    runner: CliRunner, history: MeasurementStore
) -> None:
    history.add_decision(
        decision(platform="cpu2", reason="evil \x1b[2J\x1b]0;pwned\x07 [red]markup[/red]", trigger="t\x1b[31m")
    )
    result = runner.invoke(app, ["models", "history", "--limit", "99999999999999999999"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "\x1b" not in out and "\x07" not in out
    assert "evil \\x1b[2J\\x1b]0;pwned\\x07 [red]markup[/red]" in out and "t\\x1b[31m" in out
    assert "│ 2 │" in out and "│ 1 │" in out  # the # column is not squeezed away at 80 columns
    assert "…" not in out


def test_history_shows_an_unreadable_row_marked_beside_the_sound_ones(
    runner: CliRunner, history: MeasurementStore, store_url: str
) -> None:
    if not store_url.startswith("sqlite"):
        pytest.skip("PostgreSQL's json and timestamptz columns refuse such a row when it is written")
    history.add_decision(decision(platform="cpu2"))
    with history.engine.begin() as conn:
        conn.execute(
            text("UPDATE model_decisions SET details = '{not json', decided_at = 'yesterday-ish' WHERE id = 2")
        )
    result = runner.invoke(app, ["models", "history"])
    assert result.exit_code == 0, result.output
    assert "│ 2! │ yesterday-ish" in result.stdout and "│ 1  │ 2026-11-25 14:01:52" in result.stdout
    assert (
        "#2 mafft/cpu2 time: no champion served before [unreadable: decided_at (ValueError), details (JSONDecodeError)]"
        in result.stdout
    )
    assert "Traceback" not in result.output


def store_power_law_runs(store: MeasurementStore, n: int = 60, seed: int = 2) -> None:
    """``n`` mafft runs on cpu1 whose time is a power law of the input's residues (a linear_log member fits them well), and
    whose peak memory is 10 MB plus 100 KB a residue."""
    rng = np.random.default_rng(seed)
    size = rng.uniform(10, 1000, n)
    seconds = 0.01 * size**1.2 * rng.lognormal(0, 0.05, n)
    store.add(
        Measurement(
            run_id=f"run-{i:04d}",
            algorithm="mafft",
            platform="cpu1",
            features={"input.residues": float(x)},
            wall_seconds=float(t),
            max_rss_kb=int(10_000 + 100 * x),
        )
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


def test_train_force_retrains_under_the_guard_and_promote_overrides_it(
    trained: tuple[dict[str, str], MeasurementStore],
) -> None:
    env, store = trained
    runner = CliRunner()
    same = runner.invoke(app, ["train", "--model", "linear_log"], env=env)
    assert "mafft/cpu1 unchanged" in same.output and "(--force retrains)" in same.output, same.output
    forced = runner.invoke(app, ["train", "--model", "mean", "--force"], env=env)
    assert forced.exit_code == 0, forced.output
    assert (
        "mafft/cpu1 kept: mean beats the rule median" in forced.output
        and "; mean does not beat linear_log" in forced.output
        and "overridden" not in forced.output
    ), forced.output
    promoted = runner.invoke(app, ["train", "--model", "mean", "--promote"], env=env)
    assert (
        promoted.exit_code == 0 and "mafft/cpu1 forced" in promoted.output and "guard was overridden" in promoted.output
    )
    assert [(r["decision"], r["trigger"]) for r in store.decisions()] == [
        ("forced", "predictor train --promote"),
        ("kept", "predictor train --force"),
        ("promoted", "predictor train"),
    ]


def test_train_refuses_an_unknown_model_or_algorithm_in_one_line(runner: CliRunner) -> None:
    for args, says in [
        (["--model", "nope", "--dry-run"], "error: unknown model 'nope'; known: mean, linear"),
        (["--algorithm", "nope"], "error: unknown algorithm 'nope'; known: blastn"),
        (
            ["--algorithm", "mafft"],
            "error: no runs of mafft are stored; `predictor ingest`, `profile` or `sweep` store some first",
        ),
    ]:
        result = runner.invoke(app, ["train", *args])
        assert result.exit_code == 2 and result.stderr.startswith(says) and result.stderr.count("\n") == 1, (
            args,
            result.output,
        )


def test_report_of_a_platform_the_latest_session_left_out_says_so(
    trained: tuple[dict[str, str], MeasurementStore],
) -> None:
    env, _ = trained
    runner = CliRunner()
    result = runner.invoke(app, ["report", "--algorithm", "mafft", "--platform", "cpu2"], env=env)
    assert result.exit_code == 2 and result.stderr.startswith(
        "error: mafft's latest training session trained nothing on cpu2"
    ), result.output
    unknown = runner.invoke(app, ["report", "--algorithm", "mafft", "--platform", "cpu9"], env=env)
    assert unknown.exit_code == 2 and unknown.stderr.startswith("error: unknown platform 'cpu9'"), unknown.output


def test_rollback_moves_the_champion_back_and_is_recorded(trained: tuple[dict[str, str], MeasurementStore]) -> None:
    env, store = trained
    runner = CliRunner()
    first = runner.invoke(app, ["models", "rollback", "mafft", "cpu1"], env=env)
    assert first.exit_code == 2 and first.stderr.startswith(
        "error: version 1 is the first champion of mafft on cpu1"
    ), first.output
    promoted = runner.invoke(app, ["train", "--model", "mean", "--promote"], env=env)
    assert promoted.exit_code == 0 and "mafft/cpu1 forced" in promoted.output, promoted.output
    missing = runner.invoke(app, ["models", "rollback", "mafft", "cpu1", "--to", "7"], env=env)
    assert missing.exit_code == 2 and missing.stderr.startswith(
        "error: runtime-mafft-cpu1 has no version 7; registered: 1, 2"
    )
    back = runner.invoke(app, ["models", "rollback", "mafft", "cpu1"], env=env)
    assert back.exit_code == 0 and "mafft/cpu1: rolled back by hand from version 2 to version 1" in back.output, (
        back.output
    )
    listed = runner.invoke(app, ["models", "list"], env=env)
    assert "│ mafft     │ cpu1     │       1 │ linear_log │" in listed.stdout, listed.output
    newest = store.decisions(limit=1)[0]
    assert (newest["decision"], newest["trigger"], newest["serving_version"]) == (
        "rolled back",
        "predictor models rollback",
        "1",
    )
    again = runner.invoke(app, ["train", "--model", "linear_log"], env=env)
    assert "mafft/cpu1 unchanged" not in again.output, again.output  # judged again against the restored version


def test_train_target_memory_gets_a_champion_of_its_own_and_every_listing_says_the_target(
    trained: tuple[dict[str, str], MeasurementStore],
) -> None:
    env, store = trained
    runner = CliRunner()
    memory = runner.invoke(app, ["train", "--target", "memory", "--model", "linear"], env=env)
    assert memory.exit_code == 0 and "mafft/cpu1 memory promoted: no champion served before" in memory.output, (
        memory.output
    )
    assert "Champions (peak memory)" in memory.stdout and "│ mafft     │ cpu1     │ memory │ linear " in memory.stdout
    assert [(r["target"], r["trigger"]) for r in store.decisions()] == [
        ("memory", "predictor train --target memory"),
        ("time", "predictor train"),
    ]
    listed = runner.invoke(app, ["models", "list"], env=env)
    rows = [
        [c.strip() for c in line.strip("│").split("│")]
        for line in listed.stdout.splitlines()
        if line.startswith("│ mafft")
    ]
    assert [(r[0], r[1], r[2], r[3], r[-1]) for r in rows] == [
        ("mafft", "cpu1", "1", "linear_log", "time"),
        ("mafft", "cpu1", "1", "linear", "memory"),
    ]
    history = runner.invoke(app, ["models", "history"], env=env)
    assert history.exit_code == 0 and "│ memory │ promoted │ predictor train --target memory" in history.stdout, (
        history.output
    )
    assert "#2 mafft/cpu1 memory: no champion served before" in history.stdout
    only = runner.invoke(app, ["models", "history", "--target", "time"], env=env)
    assert "│ time   │ promoted │ predictor train " in only.stdout and "memory" not in only.stdout, only.output
    report = runner.invoke(app, ["report", "--algorithm", "mafft"], env=env)
    assert report.exit_code == 0, report.output
    assert "of run time (seconds)" in report.stdout and "of peak memory (bytes)" in report.stdout
    assert (
        "mafft on cpu1 (peak memory)" in report.stdout
        and "* linear " in report.stdout
        and "memory, raw" in report.stdout
    )
    assert "time, log" in report.stdout
    rollback = runner.invoke(app, ["models", "rollback", "mafft", "cpu1", "--target", "memory"], env=env)
    assert rollback.exit_code == 2 and rollback.stderr.startswith(
        "error: version 1 is the first memory champion of mafft on cpu1"
    )


def test_train_refuses_an_unknown_target_and_memory_without_measured_runs_in_one_line(
    runner: CliRunner, tmp_path: Path
) -> None:
    bad = runner.invoke(app, ["train", "--target", "disk"])
    assert (
        bad.exit_code == 2
        and bad.stderr.startswith("error: Invalid value for '--target'")
        and bad.stderr.count("\n") == 1
    ), bad.output
    env = {"PREDICTOR_HOME": str(tmp_path / "home"), "PREDICTOR_CV_FOLDS": "3", "PREDICTOR_N_JOBS": "1"}
    store = MeasurementStore(f"sqlite:///{tmp_path / 'home' / 'store.db'}")
    store.migrate()
    store.add(
        Measurement(
            run_id=f"r{i}",
            algorithm="mafft",
            platform="cpu1",
            features={"input.residues": float(i)},
            wall_seconds=1.0 + i,
        )
        for i in range(10)
    )
    store.dispose()
    none = CliRunner().invoke(app, ["train", "--target", "memory"], env=env)
    assert none.exit_code == 2 and none.stderr.startswith(
        "error: no runs with a peak memory (max_rss_kb) to train on"
    ), none.output


def test_a_terminal_escape_in_a_name_is_shown_not_sent(runner: CliRunner) -> None:
    """Issue 41: `models rollback` of an algorithm named with an escape character says so in one error line with the
    character written as \\x1b, never the raw escape (which would recolour or rewrite the terminal)."""
    result = runner.invoke(app, ["models", "rollback", "\x1b[2J\x1b[31mmafft", "cpu1"])
    assert result.exit_code == 2
    assert "\x1b" not in result.output
    (line,) = [line for line in result.output.splitlines() if line.startswith("error:")]  # MLflow logs its setup
    assert line.startswith("error: no champion of \\x1b[2J\\x1b[31mmafft on cpu1")


def test_models_list_on_a_fresh_home_says_there_are_none(runner):
    result = runner.invoke(app, ["models", "list"])
    assert result.exit_code == 0, result.output
    assert "no champions registered" in result.stderr
