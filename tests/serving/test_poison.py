"""Issue 41 items 1 and 2, end to end against the real API: poison diluted by agreeing runs is flagged by its input,
and a rollback holds until new runs arrive, while the poisoned runs, set aside, are never trained on again."""

from __future__ import annotations

from pathlib import Path

import httpx
from typer.testing import CliRunner

from cli.app import app
from serving.app import create_app
from tests.livesrv import serve_app
from tests.trained import TOKEN, measurements, train_home

AUTH = {"authorization": f"Bearer {TOKEN}"}


def _observed(base: str, rows: list[dict]) -> None:
    for start in range(0, len(rows), 500):
        answer = httpx.post(f"{base}/v1/observations", json=rows[start : start + 500], headers=AUTH, timeout=120)
        assert answer.status_code == 200, answer.text
        assert len(answer.json()["stored"]) == len(rows[start : start + 500])


def _served(base: str, features: dict[str, float]) -> float:
    httpx.post(f"{base}/v1/models/reload", headers=AUTH, timeout=120).raise_for_status()
    body = httpx.post(
        f"{base}/v1/predict", json={"algorithm": "mafft", "features": features, "platforms": ["cpu1"]}, timeout=60
    ).json()
    return next(e["seconds"] for e in body["estimates"] if e["platform"] == "cpu1")


def test_diluted_poison_is_flagged_and_a_rollback_holds_while_its_runs_are_set_aside(tmp_path: Path) -> None:
    home = train_home(tmp_path, ["linear_log"])
    env = {
        "PREDICTOR_HOME": str(home.settings.home),
        "PREDICTOR_CV_FOLDS": "3",
        "PREDICTOR_TRAIN_MODELS": '["linear_log"]',
    }
    runner = CliRunner()
    known = [m for m in measurements(home.inputs) if m.platform == "cpu1"]
    target, others = known[7], known[:7] + known[8:]
    with serve_app(create_app(home.settings, api=home.api)) as base:
        clean = _served(base, target.features)
        assert clean < 10
        poison = [
            {
                "run_id": f"p{i}",
                "algorithm": "mafft",
                "platform": "cpu1",
                "features": target.features,
                "wall_seconds": 3600.0,
            }
            for i in range(600)
        ]
        agreeing = [
            {
                "run_id": f"a{i}",
                "algorithm": "mafft",
                "platform": "cpu1",
                "features": m.features,
                "wall_seconds": m.wall_seconds,
            }
            for i, m in enumerate(others * 17)
        ][:320]
        _observed(base, poison[:300] + agreeing + poison[300:])
        passed = runner.invoke(app, ["worker", "--once"], env=env)
        assert passed.exit_code == 0, passed.output
        history = runner.invoke(app, ["models", "history", "--algorithm", "mafft", "--platform", "cpu1"], env=env)
        assert "flagged" in history.output, history.output
        assert _served(base, target.features) == clean  # the poison is not served

        # an operator overrides the guard by mistake, then rolls back: the next worker pass keeps the rollback
        forced = runner.invoke(app, ["train", "--algorithm", "mafft", "--promote"], env=env)
        assert forced.exit_code == 0, forced.output
        assert _served(base, target.features) > 100 * clean
        rolled = runner.invoke(app, ["models", "rollback", "mafft", "cpu1"], env=env)
        assert rolled.exit_code == 0 and "kept until new runs arrive" in rolled.output, rolled.output
        again = runner.invoke(app, ["worker", "--once"], env=env)
        assert again.exit_code == 0, again.output
        assert _served(base, target.features) == clean  # not refreshed from the same poisoned runs

        # the poisoned runs set aside: training never reads them again, and storing them again stores nothing
        aside = runner.invoke(app, ["runs", "set-aside", "--like", "p0", "--reason", "poisoned (test)"], env=env)
        assert aside.exit_code == 0 and "set aside 600 run(s)" in aside.output, aside.output
        answer = httpx.post(f"{base}/v1/observations", json=poison[:5], headers=AUTH, timeout=60).json()
        assert answer["stored"] == []
        retrained = runner.invoke(app, ["train", "--algorithm", "mafft", "--force"], env=env)
        assert retrained.exit_code == 0, retrained.output
        assert _served(base, target.features) < 10
        missing = runner.invoke(app, ["runs", "set-aside", "--run", "nope", "--reason", "x"], env=env)
        assert missing.exit_code == 2 and "no stored run matches" in missing.output
