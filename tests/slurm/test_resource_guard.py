"""The resource guard on a real Slurm: a timed-out job gets more time only, one killed for memory more memory only, at
most N times each; a requeue left half done is finished."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from predictor.catalog import load_catalog
from predictor.domain import Estimate, Measurement
from predictor.memsize import MIB
from predictor.oracle import build_oracle
from predictor.settings import BUNDLED_DATA
from predictor.store import MeasurementStore
from slurm.accounting import SlurmJob, read_jobcomp
from slurm.control import Slurm
from slurm.follow import Follower
from slurm.ingest import run_id_of
from slurm.resource_guard import GuardDecision, ResourceGuard, oracle_uppers
from slurm.rules import JobMapping, Rules
from tests.livesrv import eventually
from tests.slurm.conftest import readable
from tests.slurmserver import NODE_MEMORY_MB, SlurmCluster
from tests.trained import Home, train_home

RULES = Rules(partitions={"debug": "cpu1"})
Parts = tuple[Follower, ResourceGuard, MeasurementStore]
ALLOCATE = (
    "sleep 2; python3 -c 'import time; b = bytearray({mb} * 2**20); b[::4096] = b\"1\" * len(b[::4096]); time.sleep(3)'"
)
"""A job that runs two seconds, then holds ``mb`` MiB, touched, for three."""


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    """Champions for mafft on cpu1 and cpu2 (with residual quantiles, so limits at any quantile are served)."""
    return train_home(tmp_path_factory.mktemp("guard"), ["linear_log"])


def _parts(cluster: SlurmCluster, home: Home, tmp_path: Path) -> Iterator[Parts]:
    catalog = load_catalog(BUNDLED_DATA / "catalog.yaml")
    store = MeasurementStore(f"sqlite:///{tmp_path / 'store.db'}")
    store.migrate()
    slurm = Slurm(str(cluster.conf))
    guard = ResourceGuard(
        slurm,
        oracle_uppers(build_oracle(catalog, home.settings, {})),
        tmp_path / "guard.jsonl",
        cluster=cluster.name,
        max_requeues=1,
    )
    yield _follower(cluster, tmp_path, store, guard, home.inputs), guard, store
    store.dispose()


def _follower(
    cluster: SlurmCluster, tmp_path: Path, store: MeasurementStore, guard: ResourceGuard, inputs: Path
) -> Follower:
    """A follower with ``guard`` that reads on past what earlier tests left in the log (their jobs are not its guard's)."""
    catalog = load_catalog(BUNDLED_DATA / "catalog.yaml")
    slurm = Slurm(str(cluster.conf))
    parts = (cluster.jobcomp, tmp_path / "cursor.json", store, catalog, RULES)
    Follower(*parts, cluster=cluster.name, slurmctld=slurm.held).poll()
    return Follower(*parts, cluster=cluster.name, slurmctld=slurm.held, guard=guard, inputs=readable(inputs))


@pytest.fixture
def guard_parts(home: Home, slurm_cluster: SlurmCluster, tmp_path: Path) -> Iterator[Parts]:
    yield from _parts(slurm_cluster, home, tmp_path)


@pytest.fixture
def memory_parts(home: Home, slurm_memory_cluster: SlurmCluster, tmp_path: Path) -> Iterator[Parts]:
    yield from _parts(slurm_memory_cluster, home, tmp_path)


def _time_out(cluster: SlurmCluster, job: str) -> None:
    """Make a running job time out now (its limit to 0; slurmctld's 30 s check ends it)."""
    cluster.wait_state(job, ("RUNNING",))
    cluster.run("scontrol", "update", f"JobId={job}", "TimeLimit=0")
    assert eventually(lambda: cluster.state(job) == "TIMEOUT", 90)


def _tag(home: Home) -> str:
    return f"predictor: algorithm=mafft input={home.inputs / 'f12.fa'}"


def _job(cluster: SlurmCluster, home: Home, *args: str) -> str:
    return cluster.submit("--job-name=guarded", "--time=1", "--comment", _tag(home), *args, "--wrap", "sleep 600")


def _decided(follower: Follower, guard: ResourceGuard, job: str) -> list[GuardDecision]:
    """The guard's decisions about ``job`` once the last is final: passes until no requeue is left started (a job still
    COMPLETING when its end is read is requeued on a later pass)."""
    assert eventually(
        lambda: follower.poll() is not None and [d for d in guard.history() if d.job_id == job][-1].action != "requeue",
        60,
    )
    return [d for d in guard.history() if d.job_id == job]


def _runs(store: MeasurementStore, job: str) -> list[Measurement]:
    return sorted(
        (m for m in store.measurements(successful_only=False) if m.context["slurm_job"] == job),
        key=lambda m: m.recorded_at,
    )


def test_a_timed_out_job_is_requeued_once_with_a_larger_limit(
    guard_parts: Parts, slurm_cluster: SlurmCluster, home: Home
) -> None:
    follower, guard, store = guard_parts
    job = _job(slurm_cluster, home)
    _time_out(slurm_cluster, job)
    decisions = _decided(follower, guard, job)
    assert [d.action for d in decisions] == ["requeue", "requeued"]
    assert decisions[0].quantile == 0.99 and decisions[0].old_limit_s == 0.0 and decisions[0].new_limit_s == 60.0
    shown = slurm_cluster.show(job)
    assert shown["Restarts"] == "1" and shown["TimeLimit"] == "00:01:00"  # the larger limit, from the 0.99 quantile
    assert slurm_cluster.wait_state(job, ("RUNNING",), 60) == "RUNNING"  # released at once, not after Slurm's 2 min
    timed_out = _runs(store, job)
    assert len(timed_out) == 1 and timed_out[0].censored
    _time_out(slurm_cluster, job)  # its second run times out too: the guard gives one requeue only
    follower.poll()
    last = [d for d in guard.history() if d.job_id == job][-1]
    assert last.action == "declined" and "at most 1" in last.reason
    assert slurm_cluster.state(job) == "TIMEOUT"
    assert len(_runs(store, job)) == 2


def test_a_requeue_left_half_done_is_finished_by_the_next_guard(
    guard_parts: Parts, slurm_cluster: SlurmCluster, home: Home
) -> None:
    follower, guard, _ = guard_parts
    job = _job(slurm_cluster, home)
    _time_out(slurm_cluster, job)
    # the state a guard killed right after `scontrol requeuehold` leaves: its decision about the run on disk (written
    # by the walltime guard before issue 31: no resource named, so time), the job held, the log's cursor not moved on
    assert eventually(lambda: slurm_cluster.completions().get(job) == "TIMEOUT", 30)
    line = [x for x in slurm_cluster.jobcomp.read_text().splitlines() if x.startswith(f"JobId={job} ")][-1]
    ((_, ended),) = read_jobcomp([line])
    assert isinstance(ended, SlurmJob)
    started = GuardDecision(
        run_id_of(ended, slurm_cluster.name), job, "requeue", "killed half way", 0.0, 120.0, 0.99, "now"
    )
    old_line = {k: v for k, v in started.__dict__.items() if k not in ("resource", "old_memory_mb", "new_memory_mb")}
    guard.decisions.write_text(json.dumps(old_line) + "\n")
    slurm_cluster.run("scontrol", "requeuehold", job)
    assert slurm_cluster.wait_state(job, ("PENDING",), 30) == "PENDING"
    follower.poll()  # a new pass of the restarted guard: the run was decided about, the requeue is finished
    assert [d.action for d in guard.history() if d.job_id == job] == ["requeue", "requeued"]
    assert slurm_cluster.show(job)["TimeLimit"] == "00:02:00"
    assert slurm_cluster.wait_state(job, ("RUNNING",), 60) == "RUNNING"
    slurm_cluster.run("scancel", job)


def test_a_job_killed_for_memory_is_stored_censored_and_requeued_with_more_memory_only(
    memory_parts: Parts, slurm_memory_cluster: SlurmCluster, home: Home
) -> None:
    """Issue 31: past its --mem the job ends OUT_OF_MEMORY, is stored censored at its request, is requeued with twice
    the memory (no memory model: the fixed factor) and the same time limit, and completes."""
    follower, guard, store = memory_parts
    cluster = slurm_memory_cluster
    job = cluster.submit(
        "--job-name=greedy", "--mem=50M", "--time=5", "--comment", _tag(home), "--wrap", ALLOCATE.format(mb=80)
    )
    assert eventually(lambda: cluster.completions().get(job) == "OUT_OF_MEMORY", 60)
    decisions = _decided(follower, guard, job)
    (killed,) = _runs(store, job)
    assert (killed.censored, killed.max_rss_kb, killed.context["state"]) == (True, 50 * 1024, "OUT_OF_MEMORY")
    assert [(d.action, d.resource) for d in decisions] == [("requeue", "memory"), ("requeued", "memory")]
    assert (decisions[0].old_memory_mb, decisions[0].new_memory_mb, decisions[0].new_limit_s) == (50, 100, 300.0)
    shown = cluster.show(job)
    assert (shown["MinMemoryNode"], shown["TimeLimit"], shown["Restarts"]) == ("100M", "00:05:00", "1")  # memory only
    assert eventually(lambda: cluster.completions().get(job) == "COMPLETED", 60)
    follower.poll()
    assert [(m.censored, m.exit_status) for m in _runs(store, job)] == [(True, killed.exit_status), (False, 0)]
    assert [d.action for d in guard.history() if d.job_id == job] == [
        "requeue",
        "requeued",
    ]  # a completed run: no decision


def test_a_timed_out_job_keeps_its_memory(memory_parts: Parts, slurm_memory_cluster: SlurmCluster, home: Home) -> None:
    """Issue 31: a TIMEOUT raises the time limit only; the job's --mem stays as the user gave it."""
    follower, guard, _ = memory_parts
    cluster = slurm_memory_cluster
    job = _job(cluster, home, "--mem=60M")
    _time_out(cluster, job)
    decisions = _decided(follower, guard, job)
    assert [(d.action, d.resource) for d in decisions] == [("requeue", "time"), ("requeued", "time")]
    shown = cluster.show(job)
    assert (shown["MinMemoryNode"], shown["TimeLimit"]) == ("60M", "00:01:00")
    cluster.run("scancel", job)


def test_a_memory_estimate_past_the_request_is_the_new_request_capped_by_the_node(
    slurm_memory_cluster: SlurmCluster, home: Home, tmp_path: Path
) -> None:
    """Issue 31: with a memory model the first quantile whose memory limit exceeds the request wins (here 0.999's, the
    0.99 one being below it), capped by the node's memory (RealMemory of the fixture's node)."""
    cluster = slurm_memory_cluster
    memory = {0.99: 40 * MIB, 0.999: 5000 * MIB}

    def uppers(
        mapping: JobMapping, quantile: float
    ) -> Estimate | None:  # the oracle's memory limits, as a memory model gives them
        return Estimate(platform=mapping.platform, seconds=10.0, limit=20.0, memory_limit=memory.get(quantile))

    guard = ResourceGuard(Slurm(str(cluster.conf)), uppers, tmp_path / "guard.jsonl", cluster=cluster.name)
    store = MeasurementStore(f"sqlite:///{tmp_path / 'store.db'}")
    store.migrate()
    follower = _follower(cluster, tmp_path, store, guard, home.inputs)
    job = cluster.submit(
        "--job-name=greedy", "--mem=50M", "--time=5", "--comment", _tag(home), "--wrap", ALLOCATE.format(mb=80)
    )
    assert eventually(lambda: cluster.completions().get(job) == "OUT_OF_MEMORY", 60)
    requeue = _decided(follower, guard, job)[0]
    store.dispose()
    assert (requeue.resource, requeue.quantile, requeue.new_memory_mb) == ("memory", 0.999, NODE_MEMORY_MB)
    assert "capped by its nodes" in requeue.reason
    assert cluster.show(job)["MinMemoryNode"] == f"{NODE_MEMORY_MB}M"
    assert eventually(lambda: cluster.completions().get(job) == "COMPLETED", 60)


def test_a_preempted_job_is_requeued_with_neither_changed(
    memory_parts: Parts, slurm_memory_cluster: SlurmCluster, home: Home
) -> None:
    """Issue 31: a job of partition debug cancelled by a job of the higher-tier partition urgent (PreemptMode=CANCEL)
    ends PREEMPTED; nothing of it ran out, so it is requeued with its time limit and memory as they were."""
    follower, guard, _ = memory_parts
    cluster = slurm_memory_cluster
    job = cluster.submit(
        "--job-name=low", "-c", "2", "--mem=60M", "--time=3", "--comment", _tag(home), "--wrap", "sleep 600"
    )
    cluster.wait_state(job, ("RUNNING",))
    cluster.submit("--partition=urgent", "-c", "1", "--wrap", "sleep 3")
    assert eventually(lambda: cluster.completions().get(job) == "PREEMPTED", 60)
    decisions = _decided(follower, guard, job)
    assert [(d.action, d.resource) for d in decisions] == [("requeue", "none"), ("requeued", "none")]
    shown = cluster.show(job)
    assert (shown["MinMemoryNode"], shown["TimeLimit"], shown["Restarts"]) == ("60M", "00:03:00", "1")
    assert cluster.wait_state(job, ("RUNNING",), 60) == "RUNNING"  # once the urgent job is done
    cluster.run("scancel", job)


def test_after_a_node_failure_the_guard_leaves_the_requeue_to_slurm(
    memory_parts: Parts, slurm_memory_cluster: SlurmCluster
) -> None:
    """Issue 31: a node set DOWN under two running jobs ends both NODE_FAIL; Slurm requeues the requeueable one itself
    and refuses to requeue the one submitted --no-requeue: the guard declines both, saying which. (Last in the module:
    the node comes back by itself, ReturnToService=2.)"""
    follower, guard, _ = memory_parts
    cluster = slurm_memory_cluster
    requeueable, kept_out = (
        cluster.submit("--job-name=failing", *args, "--wrap", "sleep 600") for args in ([], ["--no-requeue"])
    )
    for job in (requeueable, kept_out):
        cluster.wait_state(job, ("RUNNING",))
    cluster.run("scontrol", "update", f"NodeName={cluster.node}", "State=DOWN", "Reason=guard-test")
    assert eventually(lambda: all(cluster.completions().get(j) == "NODE_FAIL" for j in (requeueable, kept_out)), 60)
    back, refused = (_decided(follower, guard, job)[-1] for job in (requeueable, kept_out))
    assert back.action == "declined" and "back in the queue already" in back.reason
    assert refused.action == "declined" and "Slurm refuses to requeue it" in refused.reason
    assert eventually(
        lambda: (
            set(cluster.run("sinfo", "-h", "-N", "-o", "%T").stdout.split()) == {"idle"}
            or cluster.state(requeueable) == "RUNNING"
        ),
        60,
    )
    cluster.run("scancel", requeueable)


@pytest.mark.parametrize("line_break", [False, True], ids=["words", "line-break"])
def test_a_job_name_cannot_make_the_guard_act_on_another_users_job(
    guard_parts: Parts, slurm_cluster: SlurmCluster, home: Home, line_break: bool
) -> None:
    """Issue 41: a job of user nobody whose name holds the words of a completion line naming root's held job (after a
    line break, a whole line of its own) times out: its run is nobody's, the guard requeues it alone, and root's job is
    left held with its limit."""
    follower, guard, store = guard_parts
    victim = slurm_cluster.submit("--hold", "--job-name=victim", "--time=1", "--wrap", "sleep 600")
    forged = f"JobId={victim} UserId=root(0) GroupId=root(0) Name=victim"
    name = f"sim\n{forged}" if line_break else f"sim {forged}"
    own = ("--uid=nobody", "--chdir=/tmp", "--output=/dev/null", f"--job-name={name}")
    mallory = slurm_cluster.submit(*own, "--time=1", "--comment", _tag(home), "--wrap", "sleep 600")
    try:
        _time_out(slurm_cluster, mallory)
        decisions = _decided(follower, guard, mallory)
        assert [(d.action, d.resource) for d in decisions] == [("requeue", "time"), ("requeued", "time")]
        assert not [d for d in guard.history() if d.job_id == victim]
        (run,) = _runs(store, mallory)
        assert (run.context["user"], run.context["state"]) == ("nobody", "TIMEOUT")
        assert not _runs(store, victim)
        shown = slurm_cluster.show(victim)
        assert (shown["JobState"], shown["TimeLimit"]) == ("PENDING", "00:01:00")
    finally:
        slurm_cluster.run("scancel", victim, mallory, check=False)


def test_the_guard_declines_a_run_slurmctld_holds_as_another_users(
    guard_parts: Parts, slurm_cluster: SlurmCluster, home: Home
) -> None:
    """Issue 41: a stopped run whose accounting names another user or job name than slurmctld holds, or a job
    slurmctld does not hold, is declined, and the job is left alone."""
    _, guard, _ = guard_parts
    job = _job(slurm_cluster, home)
    try:
        _time_out(slurm_cluster, job)
        now = datetime.now(UTC)
        told = SlurmJob(job, "guarded", "TIMEOUT", 60.0, 60.0, "debug", user="mallory", start=now, end=now)
        decided = guard.consider(told, None)
        assert decided is not None and decided.action == "declined" and "not the job" in decided.reason
        forgotten = replace(told, job_id="999999999", user="root")
        decided = guard.consider(forgotten, None)
        assert decided is not None and decided.action == "declined" and "no longer holds" in decided.reason
        assert slurm_cluster.state(job) == "TIMEOUT"
    finally:
        slurm_cluster.run("scancel", job, check=False)
