"""The walltime guard on a real Slurm: a timed-out job requeued with a larger limit, at most N times, half-done finished."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from predictor.catalog import load_catalog
from predictor.oracle import build_oracle
from predictor.settings import BUNDLED_DATA
from predictor.slurm.control import Slurm
from predictor.slurm.follow import Follower
from predictor.slurm.guard import GuardDecision, WalltimeGuard, oracle_limits
from predictor.slurm.rules import Rules
from predictor.store import MeasurementStore
from tests.livesrv import eventually
from tests.serving.conftest import Home, train_home
from tests.slurmserver import SlurmCluster

RULES = Rules(partitions={"debug": "cpu1"})


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    """Champions for mafft on cpu1 and cpu2 (with residual quantiles, so limits at any quantile are served)."""
    return train_home(tmp_path_factory.mktemp("guard"), ["linear_log"])


@pytest.fixture
def guard_parts(home: Home, slurm_cluster: SlurmCluster, tmp_path: Path) -> Iterator[tuple[Follower, WalltimeGuard, MeasurementStore]]:
    catalog = load_catalog(BUNDLED_DATA / "catalog.yaml")
    store = MeasurementStore(f"sqlite:///{tmp_path / 'store.db'}")
    store.migrate()
    slurm = Slurm(str(slurm_cluster.conf))
    guard = WalltimeGuard(
        slurm, oracle_limits(build_oracle(catalog, home.settings, {})), tmp_path / "guard.jsonl", cluster=slurm_cluster.name, max_requeues=1
    )
    follower = Follower(
        slurm_cluster.jobcomp, tmp_path / "cursor.json", store, catalog, RULES, cluster=slurm_cluster.name, comments=slurm.comments, guard=guard
    )
    follower.poll()  # read past what earlier tests left in the log
    yield follower, guard, store
    store.dispose()


def _time_out(cluster: SlurmCluster, job: str) -> None:
    """Make a running job time out now (its limit to 0; slurmctld's 30 s check ends it)."""
    cluster.wait_state(job, ("RUNNING",))
    cluster.run("scontrol", "update", f"JobId={job}", "TimeLimit=0")
    assert eventually(lambda: cluster.state(job) == "TIMEOUT", 90)


def _job(cluster: SlurmCluster, home: Home) -> str:
    tag = f"predictor: algorithm=mafft input={home.inputs / 'f12.fa'}"
    return cluster.submit("--job-name=guarded", "--time=1", "--comment", tag, "--wrap", "sleep 600")


def test_a_timed_out_job_is_requeued_once_with_a_larger_limit(
    guard_parts: tuple[Follower, WalltimeGuard, MeasurementStore], slurm_cluster: SlurmCluster, home: Home
) -> None:
    follower, guard, store = guard_parts
    job = _job(slurm_cluster, home)
    _time_out(slurm_cluster, job)
    follower.poll()
    decisions = [d for d in guard.history() if d.job_id == job]
    assert [d.action for d in decisions] == ["requeue", "requeued"]
    assert decisions[0].quantile == 0.99 and decisions[0].old_limit_s == 0.0 and decisions[0].new_limit_s == 60.0
    shown = slurm_cluster.show(job)
    assert shown["Restarts"] == "1" and shown["TimeLimit"] == "00:01:00"  # the larger limit, from the 0.99 quantile
    assert slurm_cluster.wait_state(job, ("RUNNING",), 60) == "RUNNING"  # released at once, not after Slurm's 2 min
    timed_out = [m for m in store.measurements(successful_only=False) if m.context["slurm_job"] == job]
    assert len(timed_out) == 1 and timed_out[0].censored
    _time_out(slurm_cluster, job)  # its second run times out too: the guard gives one requeue only
    follower.poll()
    last = [d for d in guard.history() if d.job_id == job][-1]
    assert last.action == "declined" and "at most 1" in last.reason
    assert slurm_cluster.state(job) == "TIMEOUT"
    assert len([m for m in store.measurements(successful_only=False) if m.context["slurm_job"] == job]) == 2


def test_a_requeue_left_half_done_is_finished_by_the_next_guard(
    guard_parts: tuple[Follower, WalltimeGuard, MeasurementStore], slurm_cluster: SlurmCluster, home: Home, tmp_path: Path
) -> None:
    follower, guard, _ = guard_parts
    job = _job(slurm_cluster, home)
    _time_out(slurm_cluster, job)
    # the state a guard killed right after `scontrol requeuehold` leaves: its decision on disk, the job held
    started = GuardDecision(f"slurm-{slurm_cluster.name}-{job}-x", job, "requeue", "killed half way", 0.0, 120.0, 0.99, "now")
    guard.decisions.write_text(json.dumps(started.__dict__) + "\n")
    slurm_cluster.run("scontrol", "requeuehold", job)
    assert slurm_cluster.wait_state(job, ("PENDING",), 30) == "PENDING"
    follower.poll()  # a new pass of the restarted guard
    assert [d.action for d in guard.history() if d.job_id == job][-1] == "requeued"
    assert slurm_cluster.show(job)["TimeLimit"] == "00:02:00"
    assert slurm_cluster.wait_state(job, ("RUNNING",), 60) == "RUNNING"
    slurm_cluster.run("scancel", job)
