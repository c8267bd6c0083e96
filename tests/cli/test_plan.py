"""`predictor plan choose` on a site's accounting: the decision is recorded, listed by `models history`, and the next
choice starts from it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.app import app
from predictor.store import MeasurementStore
from tests.simulator.test_plan_choice import write_log


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
    history = runner.invoke(app, ["models", "history", "--algorithm", "site"])
    assert history.exit_code == 0 and "planning:easy" in history.output
    # the second choice, with a margin nothing can beat, keeps what the first one chose
    second = runner.invoke(app, ["plan", "choose", str(log), "--window", "0.5", "--windows", "2", "--margin", "0.99"])
    assert second.exit_code == 0, second.output
    newest = store.decisions("site", "planning:easy", limit=1)[0]
    assert newest["decision"] == "kept" and newest["details"]["config"] == row["details"]["config"]


def test_a_bad_log_is_one_error_line(home: Path) -> None:
    bad = home / "bad.swf"
    bad.write_text("not a log\n")
    (home / "bad.swf.machines").write_text("0 pool 4 2 1.0 1000\n")
    result = CliRunner().invoke(app, ["plan", "choose", str(bad)])
    assert result.exit_code != 0 and "Traceback" not in result.output
