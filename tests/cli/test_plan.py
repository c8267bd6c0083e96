"""`predictor plan choose` on a site's accounting: the decision is recorded, listed by `models history`, and the next
choice starts from it."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.app import app
from predictor.store import MeasurementStore
from simulator.plan_choice import Choice, last_submit
from tests.simulator.test_plan_choice import EASY_PLUS_PLUS, REQUESTS, drifting_log, write_log


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PREDICTOR_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PREDICTOR_STORE_URL", f"sqlite:///{tmp_path / 'store.db'}")
    return tmp_path


def test_a_choice_is_recorded_and_the_next_one_starts_from_it(home: Path) -> None:
    log = write_log(home / "site.swf", seed=4, jobs=300)
    runner = CliRunner()
    first = runner.invoke(app, ["plan", "choose", str(log), "--window", "0.5", "--windows", "2", "--margin", "0"])
    assert first.exit_code == 0, first.output
    assert "(serving)" in first.output and ("promoted: " in first.output or "kept: " in first.output)
    store = MeasurementStore(f"sqlite:///{home / 'store.db'}")
    (row,) = store.decisions("site", "planning:easy")
    assert (
        row["decision"] in ("promoted", "kept")
        and row["n_rows"] > 0
        and set(row["details"]["config"]) == {"source", "number", "correction", "order"}
    )
    # what the next pass scores it live with: its runner-up and how far into the log it had seen
    assert row["details"]["runner_up"] != row["details"]["config"] and row["details"]["live"] is None
    assert row["details"]["live_since"] == row["details"]["seen_until"] == last_submit(log)
    history = runner.invoke(app, ["models", "history", "--algorithm", "site"])
    assert history.exit_code == 0 and "planning:easy" in history.output
    # the second choice, with a margin nothing can beat, keeps what the first one chose
    second = runner.invoke(app, ["plan", "choose", str(log), "--window", "0.5", "--windows", "2", "--margin", "0.99"])
    assert second.exit_code == 0, second.output
    assert "live: 0 jobs since" in second.output and "not scored yet" in second.output
    newest = store.decisions("site", "planning:easy", limit=1)[0]
    assert newest["decision"] == "kept" and newest["details"]["config"] == row["details"]["config"]


def test_a_bad_log_is_one_error_line(home: Path) -> None:
    bad = home / "bad.swf"
    bad.write_text("not a log\n")
    (home / "bad.swf.machines").write_text("0 pool 4 2 1.0 1000\n")
    result = CliRunner().invoke(app, ["plan", "choose", str(bad)])
    assert result.exit_code != 0 and "Traceback" not in result.output


def test_a_choice_the_jobs_after_it_made_lose_is_reverted_to_its_runner_up(home: Path) -> None:
    """Issue 39: EASY++ kept on the log's past, its runner-up the requests; the users change, and on the 150 jobs after
    the decision the requests plan better by more than the margin: the next pass reverts to them, recorded."""
    log, since = drifting_log(home / "site.swf")
    store = MeasurementStore(f"sqlite:///{home / 'store.db'}")
    store.migrate()
    scores = {EASY_PLUS_PLUS: 1.0, REQUESTS: 1.1}
    kept = Choice("easy", "avebsld", EASY_PLUS_PLUS, EASY_PLUS_PLUS, False, "kept", scores, 90, 0.0, {}, EASY_PLUS_PLUS)
    store.add_decision(kept.decision_row("site", "replayed site.swf", seen_until=since))
    runner = CliRunner()
    waiting = runner.invoke(app, ["plan", "choose", str(log), "--live-jobs", "1000", "--no-record", "--windows", "1"])
    assert "live: 150 jobs since last two, point, tsafrir, sjbf began to serve, fewer than 1000" in waiting.output
    result = runner.invoke(app, ["plan", "choose", str(log)])
    assert result.exit_code == 0, result.output
    assert "reverted: requests, point, tsafrir, sjbf (live avebsld " in result.output
    newest = store.decisions("site", "planning:easy", limit=1)[0]
    assert newest["decision"] == "reverted" and newest["n_rows"] == 150
    assert newest["details"]["config"] == asdict(REQUESTS) and newest["details"]["live"]["score"] < 0.98
    assert newest["details"]["live_since"] == last_submit(log)  # the reverted configuration's live window starts now
    # `models list` shows it below the champions (none here): the configuration, and the live score that reverted it
    shown = runner.invoke(app, ["models", "list"])
    assert shown.exit_code == 0, shown.output
    (line,) = [row for row in shown.output.splitlines() if "reverted" in row]
    cells = [c.strip() for c in line.strip("│ ").split("│")]
    score = newest["details"]["live"]["score"]
    assert cells[:6] == ["site", "easy", str(newest["id"]), "reverted", "requests, point, tsafrir, sjbf", "avebsld"]
    assert cells[6:] == ["-", "-", f"{score:.3f} on 150 jobs", "last two, point, tsafrir, sjbf"]
