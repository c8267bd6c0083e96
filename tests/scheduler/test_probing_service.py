"""Idle-time probes in the service: the API's scheduler over a store orders probes on idle machines within the budget,
cancels one in the very step a real job takes its machine, and the probe's real run lands in the store as ``probe``."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import httpx
import pytest
import yaml
from sqlalchemy import inspect, select

from data.acquisition import RULES
from data.probe import profile_probe_command
from predictor.catalog import load_catalog
from predictor.domain import Estimate
from predictor.oracle import JobQuery, Oracle
from predictor.settings import PROJECT_ROOT, Settings
from predictor.store import MeasurementStore
from predictor.store.scheduler_tables import sched_events, sched_probes
from scheduler.probe_plan import idle_prober
from scheduler.probing import OVERDUE_S
from scheduler.service import SchedulerService
from scheduler.settings import ProbeRule, ProbeSettings
from scheduler.store import SchedulerStore
from serving.app import create_app
from tests.livesrv import eventually, serve_app
from tests.required import required_tools
from tests.scheduler.served import AUTH, FEATURES, seed_profile, served_api
from tests.scheduler.test_service import Clock

pytestmark = pytest.mark.tools
CAP_S = 600.0  # the probe's cap: a mafft run of a few sequences takes a second
BUDGET_S = 1.5 * CAP_S  # room for one probe's cap at a time; after one that used less than 300 s, for the next
PLAN = {
    "seed": 7,
    "repeats": 1,
    "timeout_s": 60,
    "inputs": {
        "fam": {
            "generator": "family",
            "alphabet": "protein",
            "grid": {"n_sequences": [4, 8, 12, 16], "length": [40], "mutation_rate": [0.2]},
        }
    },
    "jobs": [{"algorithm": "mafft", "platforms": ["cpu2"], "files": {"input": "fam"}}],
}


def _settings(root: Path, **probe: float) -> tuple[Settings, ProbeSettings]:
    plan = root / "plan.yaml"
    plan.write_text(yaml.safe_dump(PLAN))
    return Settings(home=root / "home", data_roots=[root]), ProbeSettings(plan=plan, workdir=root / "inputs", **probe)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Settings]]:
    required_tools("mafft")
    settings, probing = _settings(tmp_path, budget_s=BUDGET_S, cap_s=CAP_S)
    seed_profile(settings)
    with serve_app(create_app(settings, api=served_api(), probing=probing)) as url:
        yield url, settings


def _post(base: str, path: str, body: object) -> httpx.Response:
    answer = httpx.post(f"{base}{path}", json=body, headers=AUTH, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer


def _orders(base: str, after: int) -> list[dict]:
    answer = httpx.get(f"{base}/v1/orders", params={"after": after}, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()["orders"]


def _orders_once_applied(base: str, store: MeasurementStore, event: int, after: int) -> list[dict]:
    """The orders after ``after`` once the scheduler has applied inbox event ``event`` (each read of the orders applies
    the events waiting, and the service's poller does every second): a wait bounded on that condition, not a sleep."""

    def applied() -> bool:
        _orders(base, after)
        with store.engine.connect() as conn:
            done = select(sched_events.c.processed_at).where(sched_events.c.seq == event)
            return conn.execute(done).scalar_one() is not None

    assert eventually(applied, timeout=120), f"inbox event {event} was not applied within 120 s"
    return _orders(base, after)


def _execute(settings: Settings, order: dict) -> None:
    """What an executor does with a PROBE order: run the profile wrapper's command (as the Slurm bridge's script does)."""
    probe = order["probe"]
    command = profile_probe_command(
        load_catalog(*settings.catalog_paths),
        probe["run_id"],
        probe["algorithm"],
        probe["platform"],
        probe["params"],
        probe["cap_s"],
    )
    env = {**os.environ, "PREDICTOR_HOME": str(settings.home), "PYTHONPATH": str(PROJECT_ROOT)}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_idle_machine_probes_within_budget_and_a_real_job_cancels_the_probe_in_its_own_step(served):
    base, settings = served
    store = MeasurementStore(settings.resolved_store_url)
    inbox = SchedulerStore(store.engine)
    first = _post(base, "/v1/machines/m1/events", {"event": "gained", "platform": "cpu2"}).json()["orders"]
    assert [(o["kind"], o["machine"]) for o in first] == [("probe", "m1")]
    second = _post(base, "/v1/machines/m2/events", {"event": "gained", "platform": "cpu2"}).json()["orders"]
    assert second == [], "the hour's budget holds one probe's cap at a time"
    (ordered,) = _orders(base, 0)
    probe = ordered["probe"]
    assert probe["algorithm"] == "mafft" and probe["platform"] == "cpu2" and probe["cap_s"] == CAP_S
    assert (
        probe["run_id"] == ordered["job"]
        and probe["run_id"].startswith("probe-")
        and Path(probe["params"]["input"]).is_file()
    )

    _execute(settings, ordered)  # the real program, through the profile wrapper, stored by it
    measured = store.measurement(probe["run_id"])
    assert measured is not None and measured.source.value == "probe" and measured.succeeded and not measured.censored
    assert probe["run_id"] in set(store.frame("mafft", "cpu2")["run_id"]), "the retrain worker reads it"
    ended = inbox.add_event("probe_ended", machine="m1", job=ordered["job"], payload={"attempt": ordered["attempt"]})

    after_end = _orders_once_applied(
        base, store, ended, ordered["seq"]
    )  # its unused cap is back: the next probe starts
    with store.engine.connect() as conn:
        held = select(sched_probes.c.ended - sched_probes.c.started).where(sched_probes.c.probe == ordered["job"])
        used = conn.execute(held).scalar_one()
    assert used + CAP_S <= BUDGET_S, f"the first probe held its machine {used:.0f} s: no budget is left for another"
    assert [(o["kind"], o["machine"]) for o in after_end] == [("probe", "m1")]
    follow = after_end[0]
    assert follow["job"] != ordered["job"], "a measured candidate is not probed again"

    _post(
        base,
        "/v1/jobs",
        [
            {"id": "j1", "algorithm": "mafft", "features": FEATURES},
            {"id": "j2", "algorithm": "mafft", "features": FEATURES},
        ],
    )
    taken = _orders(base, follow["seq"])
    assert sorted(o["machine"] for o in taken if o["kind"] == "start") == ["m1", "m2"]
    assert [(o["job"], o["machine"]) for o in taken if o["kind"] == "cancel_probe"] == [(follow["job"], "m1")]
    cancel = next(o for o in taken if o["kind"] == "cancel_probe")
    start_on_m1 = next(o for o in taken if o["kind"] == "start" and o["machine"] == "m1")
    assert cancel["issued_at"] == start_on_m1["issued_at"] and cancel["seq"] < start_on_m1["seq"], (
        "same step, the machine freed first"
    )
    assert cancel["attempt"] == follow["attempt"] and not [o for o in taken if o["kind"] == "probe"]

    late = inbox.add_event("probe_ended", machine="m1", job=follow["job"], payload={"attempt": follow["attempt"]})
    assert _orders_once_applied(base, store, late, taken[-1]["seq"]) == []  # an end after the cancel changes nothing
    outcomes = {e["seq"]: e for e in inbox.events_about(job=follow["job"])}
    assert late in outcomes
    with store.engine.connect() as conn:
        rows = dict(conn.exec_driver_sql("SELECT token, outcome FROM sched_probes").all())
    assert rows == {ordered["attempt"]: "done", follow["attempt"]: "cancelled"}
    store.dispose()


class FixedSeconds(Oracle):
    """Every job takes 2 s on cpu2 (the scheduler's estimates; probes do not depend on them)."""

    def answer(self, job: JobQuery) -> dict[str, Estimate]:
        return {"cpu2": Estimate(platform="cpu2", seconds=2.0)}


def test_a_probe_killed_at_its_cap_is_capped_and_a_restarted_service_keeps_its_probes(tmp_path: Path, store_url: str):
    required_tools("mafft")
    cap = 1e-3  # MAFFT cannot finish in a millisecond: the profile wrapper kills it
    settings, probing = _settings(tmp_path, budget_s=2.5 * cap, cap_s=cap)
    store = MeasurementStore(store_url)
    store.migrate()
    catalog = load_catalog(*settings.catalog_paths)
    clock = Clock()

    def start() -> SchedulerService:
        return SchedulerService(
            store, FixedSeconds(), catalog, clock=clock, prober=idle_prober(settings, probing, store, catalog)
        )

    first = start()
    orders = first.machine_event("m1", "gained", platform="cpu2") + first.machine_event("m2", "gained", platform="cpu2")
    assert [(o.kind.value, o.machine) for o in orders] == [("probe", "m1"), ("probe", "m2")]
    assert first.machine_event("m3", "gained", platform="cpu2") == [], "two caps fill the budget"

    again = start()  # a restart: the running probes and the budget they hold are read back
    assert again.prober is not None and {m: r.token for m, r in again.prober.running.items()} == {
        "m1": orders[0].attempt,
        "m2": orders[1].attempt,
    }
    assert again.start_probes() == []

    (order,) = [o for o in again.orders() if o["kind"] == "probe" and o["machine_id"] == "m1"]
    probe = order["probe"]
    command = profile_probe_command(
        catalog, probe["probe"], probe["algorithm"], probe["platform"], probe["params"], probe["cap_s"]
    )
    env = {
        **os.environ,
        "PREDICTOR_STORE_URL": store_url,
        "PREDICTOR_HOME": str(settings.home),
        "PYTHONPATH": str(PROJECT_ROOT),
    }
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
    measured = store.measurement(probe["probe"])
    assert done.returncode != 0 and measured is not None and measured.censored and measured.source.value == "probe", (
        done.stdout
    )
    clock.now += cap
    cursor = again.orders()[-1]["seq"]
    again.db.add_event("probe_ended", machine="m1", job=order["job_id"], payload={"attempt": order["attempt"]})
    assert again.sync() == 1
    assert [(r.machine, r.outcome) for r in again.prober.records] == [("m1", "capped")]
    assert [o["kind"] for o in again.orders(cursor)] == [], "the probe's time counts: no room for another cap this hour"
    store.dispose()


def test_a_probe_never_reported_ended_is_closed_after_its_cap_and_killed(tmp_path: Path, store: MeasurementStore):
    required_tools("mafft")
    settings, probing = _settings(tmp_path, budget_s=3600.0, cap_s=10.0)
    catalog = load_catalog(*settings.catalog_paths)
    clock = Clock()
    service = SchedulerService(
        store, FixedSeconds(), catalog, clock=clock, prober=idle_prober(settings, probing, store, catalog)
    )
    (first,) = service.machine_event("m1", "gained", platform="cpu2")
    clock.now += 10.0 + OVERDUE_S  # at its cap plus the grace: not yet lost
    assert service.start_probes() == []
    clock.now += 1.0
    cancel, again = service.start_probes()
    assert (cancel.kind.value, cancel.attempt, cancel.reason) == ("cancel_probe", first.attempt, "overdue: lost")
    assert again.kind.value == "probe" and again.machine == "m1" and again.job != first.job, (
        "not retried on the machine that lost it"
    )
    assert service.prober is not None and [r.outcome for r in service.prober.records] == ["failed"]


def test_the_settings_know_every_acquisition_rule() -> None:
    assert set(get_args(ProbeRule)) == set(RULES)


def test_a_migrated_store_has_the_probes_columns(store: MeasurementStore) -> None:
    assert {c["name"] for c in inspect(store.engine).get_columns("sched_probes")} == {
        c.name for c in sched_probes.columns
    }
