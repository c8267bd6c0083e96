"""Issue 39: GET /v1/planning and `predictor models list --url` show each site's newest planning decision per family,
its score on the past windows and its live score since."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict

import httpx
import pytest
from typer.testing import CliRunner

from cli.app import app
from predictor.store import MeasurementStore
from scheduler.planning import PlanningConfig
from serving.app import create_app
from simulator.plan_choice import Choice, LiveScore, Serving
from tests.livesrv import serve_app
from tests.trained import Home

EASY_PLUS_PLUS = PlanningConfig()
SERVICE = PlanningConfig("service", "q0.75", "doubling", "saf")


@pytest.fixture(scope="module")
def planning_api(trained: Home, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, MeasurementStore]]:
    """The trained API over a store of its own, and that store."""
    folder = tmp_path_factory.mktemp("planning")
    settings = trained.settings.model_copy(update={"store_url": f"sqlite:///{folder / 'store.db'}"})
    with serve_app(create_app(settings, api=trained.api)) as url:
        yield url, MeasurementStore(settings.resolved_store_url)


def test_the_route_and_models_list_show_the_newest_decision_its_past_and_live_scores(
    planning_api: tuple[str, MeasurementStore],
) -> None:
    url, store = planning_api
    assert httpx.get(f"{url}/v1/planning").json() == []  # before any decision
    scores = {EASY_PLUS_PLUS: 1.0, SERVICE: 0.8}
    raw = {EASY_PLUS_PLUS: [10.0, 20.0], SERVICE: [8.0, 16.0]}
    promoted = Choice("easy", "avebsld", EASY_PLUS_PLUS, SERVICE, True, "won", scores, 200, 0.0, raw, SERVICE)
    store.add_decision(promoted.decision_row("hpc2n", "replayed hpc2n.swf", seen_until=1000.0))
    kept = Choice("easy", "avebsld", SERVICE, SERVICE, False, "kept it", {SERVICE: 1.0, EASY_PLUS_PLUS: 1.1}, 200)
    live = LiveScore("easy", "avebsld", SERVICE, EASY_PLUS_PLUS, 1000.0, 240, 12.0, 15.0)
    serving = Serving(SERVICE, EASY_PLUS_PLUS, 1000.0)
    store.add_decision(kept.decision_row("hpc2n", "replayed hpc2n.swf", seen_until=5000.0, serving=serving, live=live))
    behind = LiveScore("conservative", "avebsld", SERVICE, EASY_PLUS_PLUS, 70.0, 130, 20.0, 10.0)
    store.add_decision(behind.reverted_row("wagap", "replayed wagap.swf", 0.02, 900.0))
    shown = httpx.get(f"{url}/v1/planning")
    assert shown.status_code == 200
    reverted, newest = shown.json()
    assert (reverted["site"], reverted["family"], reverted["decision"]) == ("wagap", "conservative", "reverted")
    assert reverted["config"] == asdict(EASY_PLUS_PLUS) and reverted["past_score"] is None
    assert reverted["live"]["score"] == pytest.approx(0.5) and reverted["runner_up"] == SERVICE.label("conservative")
    assert (newest["site"], newest["family"], newest["decision"], newest["config"]) == (
        "hpc2n",
        "easy",
        "kept",
        asdict(SERVICE),
    )
    assert newest["label"] == "service, q0.75, doubling, saf" and newest["objective"] == "avebsld"
    assert newest["past_score"] == 1.0 and newest["runner_up"] == "last two, point, tsafrir, sjbf"
    assert newest["live"] == {
        "objective": "avebsld",
        "jobs": 240,
        "since": 1000.0,  # the live window runs from the promotion, carried by the decision that kept it
        "runner_up": "last two, point, tsafrir, sjbf",
        "serving_value": 12.0,
        "runner_up_value": 15.0,
        "score": 0.8,
    }
    listed = CliRunner().invoke(app, ["models", "list", "--url", url])
    assert listed.exit_code == 0, listed.output
    rows = [[c.strip() for c in line.strip("│ ").split("│")] for line in listed.output.splitlines() if "hpc2n" in line]
    assert ["hpc2n", "easy", str(newest["id"]), "kept", "service, q0.75, doubling, saf", "avebsld", "1.000"] in [
        r[:7] for r in rows
    ]
    assert rows[-1][8:] == ["0.800 on 240 jobs", "last two, point, tsafrir, sjbf"]
