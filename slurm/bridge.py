"""The bridge: the embedded scheduler's orders carried out on Slurm, Slurm's node and job changes sent back as events.

Each pass of :meth:`SlurmBridge.step`:

1. **nodes**: every Slurm node of a partition the rules map to a platform is a machine; a usable node not yet
   reported is sent as G (``gained``, with its platform and slots), one gone down or drained as L (``lost``);
2. **jobs**: each scheduler job that is pending or running and not in Slurm yet is submitted **held**, named
   ``sched-<id>``, as a script that runs the catalog's command for the platform of the node it lands on;
3. **orders** after the bridge's cursor, in order: START releases the held job to the planned node
   (``scontrol update NodeList=<machine> StartTime=now`` then ``scontrol release``), CANCEL with requeue and PAUSE put it back
   held (``scontrol requeuehold``; Slurm has no checkpoint here), CANCEL without ``scancel``s it, MIGRATE is a
   requeue to the target; REPLICATE is not carried out (one Slurm job is one run) and is logged; PROBE submits the
   idle-time probe at once to the planned node (``sbatch --nodelist``, named ``predictor-probe-<n>``, at the lowest
   priority, the cap plus a minute as its time limit) as ``predictor profile`` of the candidate's command, killed at the
   cap, which stores the run with source ``probe``; CANCEL_PROBE ``scancel``s it at once;
4. **ended jobs**: a Slurm job that reached a final state sends E (``ended``, COMPLETED) or T (``failed``, any other,
   with the state as the reason), once per run; one the bridge cancelled itself sends nothing. A probe that ended
   sends ``probe_ended`` (the service reads how it went from the store), one cancelled nothing.

Events go into the scheduler's inbox (``sched_events``), which the service applies in order. The bridge's own
state (the order cursor, the runs it started and reported, the nodes it reported) is a JSON file written
atomically after every action. Crash-safe: each action first checks where its effect shows (a job already
released is not released again, one in Slurm under its name is not submitted again, an event already in the
inbox, which carries the run's attempt, is not sent again), so a bridge killed between an action and its state's
write does not do it twice when restarted; no order is skipped, since the cursor moves only after one is done.
"""

from __future__ import annotations

import logging
import shlex
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from data.probe import profile_probe_command
from predictor.atomic import read_state, write_json_atomically
from predictor.catalog import Catalog
from predictor.passes import every_interval
from predictor.walltime import slurm_walltime
from scheduler.orders import OrderKind
from scheduler.state import JobStatus
from scheduler.store import SchedulerStore
from slurm.control import QueuedJob, Slurm, SlurmError

log = logging.getLogger(__name__)
PREFIX = "sched-"
# probes' Slurm jobs: predictor-probe-<n>, outside the scheduler jobs' names
PROBE_PREFIX = "predictor-probe-"
# Slurm's limit beyond the probe's cap: the profile wrapper kills it first and stores it censored
PROBE_MARGIN_S = 60.0
FINAL = frozenset(
    {"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "PREEMPTED", "DEADLINE"}
)
ACTIVE = (JobStatus.PENDING, JobStatus.RUNNING)


@dataclass
class BridgeState:
    """What the bridge has done: orders up to ``cursor``; each job's current run (machine, attempt); what it reported."""

    cursor: int = 0
    runs: dict[str, list[Any]] = field(default_factory=dict)  # job -> [machine, attempt]
    reported: list[str] = field(default_factory=list)  # "job:attempt" whose end was sent
    # "job:attempt" the bridge stopped itself
    cancelled: list[str] = field(default_factory=list)
    nodes: dict[str, bool] = field(default_factory=dict)  # node -> reported online
    # probe number -> [machine, probe id] while it runs
    probes: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class BridgeStep:
    """What one pass did."""

    submitted: int = 0
    orders: int = 0
    events: int = 0


class SlurmBridge:
    """Carries the scheduler's orders out on Slurm and reports back (see the module docstring)."""

    def __init__(
        self,
        db: SchedulerStore,
        slurm: Slurm,
        catalog: Catalog,
        platforms: dict[str, str],
        state_path: Path,
        output_dir: Path,
        *,
        slots: int | None = None,
    ) -> None:
        self.db = db
        self.slurm = slurm
        self.catalog = catalog
        self.platforms = platforms  # partition -> platform
        self.state_path = state_path
        self.output_dir = output_dir
        self.slots = slots
        self.state = read_state(state_path, BridgeState)

    # --- the pass ------------------------------------------------------------------------------------------------

    def step(self) -> BridgeStep:
        """One pass: nodes, new jobs, orders, ended jobs (in that order, so a START finds its job in Slurm)."""
        node_platform = self._node_platforms()
        events = self._nodes(node_platform)
        queued = self._queued()
        submitted = self._submit_new(queued, node_platform)
        if submitted:
            queued = self._queued()
        orders = self._orders(queued)
        events += self._ended(self._queued() if orders else queued)
        events += self._probes_ended()
        return BridgeStep(submitted, orders, events)

    def run(
        self, interval_s: float, stop: threading.Event, on_step: Callable[[BridgeStep], None] | None = None
    ) -> None:
        """Step every ``interval_s`` until ``stop`` is set; a failing pass is logged and the next one tries again."""
        every_interval(
            self.step,
            interval_s,
            stop,
            what="bridge pass",
            log=log,
            on_pass=on_step,
            retry_on=(SlurmError, OSError),
            quiet=True,
        )

    # --- nodes ---------------------------------------------------------------------------------------------------

    def _node_platforms(self) -> dict[str, str]:
        """Each node of a mapped partition and its platform."""
        found: dict[str, str] = {}
        for line in self.slurm.run("sinfo", "-h", "-N", "--format=%N|%P").splitlines():
            node, _, partition = line.partition("|")
            platform = self.platforms.get(partition.rstrip("*"))
            if node and platform:
                found.setdefault(node, platform)
        return found

    def _nodes(self, node_platform: dict[str, str]) -> int:
        sent = 0
        for node in self.slurm.nodes():
            if node.name not in node_platform:
                continue
            if self.state.nodes.get(node.name) == node.usable:
                continue
            kind = "gained" if node.usable else "lost"
            if self._last_node_event(node.name) != kind:  # not sent before a restart
                payload = (
                    {"platform": node_platform[node.name], "slots": self.slots or node.cpus} if node.usable else {}
                )
                self.db.add_event(kind, machine=node.name, payload=payload)
                sent += 1
            self.state.nodes[node.name] = node.usable
            self._save()
        return sent

    def _last_node_event(self, node: str) -> str | None:
        kinds = [e["kind"] for e in self.db.events_about(machine=node) if e["kind"] in ("gained", "lost")]
        return kinds[-1] if kinds else None

    # --- jobs ----------------------------------------------------------------------------------------------------

    def _queued(self) -> dict[str, QueuedJob]:
        """The scheduler's jobs slurmctld holds, by scheduler job id (the newest Slurm job of a name)."""
        return {job.name[len(PREFIX) :]: job for job in self.slurm.jobs() if job.name.startswith(PREFIX)}

    def _submit_new(self, queued: dict[str, QueuedJob], node_platform: dict[str, str]) -> int:
        submitted = 0
        jobs = self.db.load().jobs
        for job in jobs.values():
            if job.status.final and job.id in queued and queued[job.id].held:
                # dropped or cancelled by the scheduler before it ran
                self.slurm.cancel(queued[job.id].job_id)
            if job.status not in ACTIVE or job.id in queued or job.id in self.state.runs:
                continue
            script = self._script(job.algorithm, job.params, node_platform)
            self.output_dir.mkdir(parents=True, exist_ok=True)
            self.slurm.submit(
                "--hold",
                f"--job-name={PREFIX}{job.id}",
                f"--output={self.output_dir / (PREFIX + job.id)}.out",
                f"--cpus-per-task={job.size}",
                f"--comment=predictor: algorithm={job.algorithm} scheduler_job={job.id}",
                str(self._write_script(job.id, script)),
            )
            submitted += 1
        return submitted

    def _script(self, algorithm: str, params: dict[str, Any], node_platform: dict[str, str]) -> str:
        """A batch script running the catalog's command for the platform of whichever node it runs on."""
        algo = self.catalog.algorithm(algorithm)
        cases = []
        for node, platform in sorted(node_platform.items()):
            if platform in algo.implementations:
                spec = self.catalog.platform(platform)
                command = [*spec.launcher, *algo.command(platform, params, spec.threads)]
                cases.append(f"  {shlex.quote(node)}) exec {shlex.join(command)} ;;")
        cases.append('  *) echo "no platform of this job on node $SLURMD_NODENAME" >&2; exit 2 ;;')
        return '#!/bin/sh\ncase "$SLURMD_NODENAME" in\n' + "\n".join(cases) + "\nesac\n"

    def _write_script(self, job_id: str, text: str) -> Path:
        path = self.output_dir / f"{PREFIX}{job_id}.sh"
        path.write_text(text)
        return path

    # --- orders --------------------------------------------------------------------------------------------------

    def _orders(self, queued: dict[str, QueuedJob]) -> int:
        done = 0
        for order in self.db.orders(self.state.cursor, 1000):
            self._apply(order, queued.get(order["job_id"]))
            self.state.cursor = order["seq"]
            self._save()
            done += 1
        return done

    def _apply(self, order: dict[str, Any], slurm_job: QueuedJob | None) -> None:
        """Carry out one order, unless Slurm shows it already done."""
        kind, job = OrderKind(order["kind"]), order["job_id"]
        key = f"{job}:{order['attempt']}"
        if kind is OrderKind.PROBE:
            self._probe(order)
            return
        if kind is OrderKind.CANCEL_PROBE:
            self._cancel_probe(order)
            return
        if slurm_job is None:
            log.warning("order %s for job %s: the job is not in Slurm; skipped", order["seq"], job)
            return
        if kind is OrderKind.START:
            if slurm_job.held:
                self.slurm.update(slurm_job.job_id, NodeList=order["machine_id"], StartTime="now")
                self.slurm.release(slurm_job.job_id)
            self.state.runs[job] = [order["machine_id"], order["attempt"]]
        elif kind in (OrderKind.CANCEL, OrderKind.PAUSE, OrderKind.MIGRATE):
            self.state.cancelled.append(key)
            if kind is OrderKind.CANCEL and not order["requeue"]:
                if slurm_job.state not in FINAL:
                    self.slurm.cancel(slurm_job.job_id)
            elif not slurm_job.held:
                self.slurm.requeue(slurm_job.job_id, hold=True)
            self.state.runs.pop(job, None)
            if kind is OrderKind.MIGRATE and order["target"]:
                self.slurm.update(slurm_job.job_id, NodeList=order["target"], StartTime="now")
                self.slurm.release(slurm_job.job_id)
                self.state.runs[job] = [order["target"], order["attempt"]]
        else:
            log.warning("order %s: %s is not carried out on Slurm (one Slurm job is one run)", order["seq"], kind.value)

    # --- probes --------------------------------------------------------------------------------------------------

    def _probe_jobs(self) -> dict[str, QueuedJob]:
        """The probes slurmctld holds, by probe number."""
        return {job.name[len(PROBE_PREFIX) :]: job for job in self.slurm.jobs() if job.name.startswith(PROBE_PREFIX)}

    def _probe(self, order: dict[str, Any]) -> None:
        """Submit the probe to its node now, unless it is in Slurm already (a bridge restarted before saving)."""
        token, probe = str(order["attempt"]), order["probe"]
        if probe is None:
            log.warning("order %s: probe %s is not in the database; skipped", order["seq"], token)
            return
        if token not in self._probe_jobs():
            command = profile_probe_command(
                self.catalog, probe["probe"], probe["algorithm"], probe["platform"], probe["params"], probe["cap_s"]
            )
            name = f"{PROBE_PREFIX}{token}"
            self.output_dir.mkdir(parents=True, exist_ok=True)
            script = self.output_dir / f"{name}.sh"
            script.write_text(f"#!/bin/sh\nexec {shlex.join(command)}\n")
            self.slurm.submit(
                f"--job-name={name}",
                f"--nodelist={order['machine_id']}",
                f"--time={slurm_walltime(probe['cap_s'] + PROBE_MARGIN_S)}",
                "--exclusive",
                "--nice=10000",
                f"--output={self.output_dir / name}.out",
                f"--comment=predictor: probe={probe['probe']} algorithm={probe['algorithm']}",
                str(script),
            )
        self.state.probes[token] = [order["machine_id"], order["job_id"]]

    def _cancel_probe(self, order: dict[str, Any]) -> None:
        """Kill the probe at once: a real job is taking its node."""
        token = str(order["attempt"])
        self.state.probes.pop(token, None)
        slurm_job = self._probe_jobs().get(token)
        if slurm_job is not None and slurm_job.state not in FINAL:
            self.slurm.cancel(slurm_job.job_id)

    def _probes_ended(self) -> int:
        """Send ``probe_ended`` for each probe of this bridge that Slurm shows ended (once: not if the inbox has it)."""
        if not self.state.probes:
            return 0
        sent = 0
        slurm_jobs = self._probe_jobs()
        for token, (machine, probe_id) in list(self.state.probes.items()):
            slurm_job = slurm_jobs.get(token)
            if slurm_job is not None and slurm_job.state not in FINAL:
                continue
            state = slurm_job.state if slurm_job is not None else "gone from slurmctld"
            sent += self.db.report_probe_end(machine, probe_id, int(token), f"Slurm: {state}")
            del self.state.probes[token]
            self._save()
        return sent

    # --- ended jobs ----------------------------------------------------------------------------------------------

    def _ended(self, queued: dict[str, QueuedJob]) -> int:
        sent = 0
        for job, (machine, attempt) in list(self.state.runs.items()):
            slurm_job = queued.get(job)
            key = f"{job}:{attempt}"
            if slurm_job is None or slurm_job.state not in FINAL or key in self.state.reported:
                continue
            if key not in self.state.cancelled and not self._reported_before(job, attempt):
                if slurm_job.state == "COMPLETED":
                    self.db.add_event("ended", machine=machine, job=job, payload={"attempt": attempt})
                else:
                    reason = f"Slurm job {slurm_job.job_id}: {slurm_job.state}"
                    self.db.add_event(
                        "failed", machine=machine, job=job, payload={"attempt": attempt, "reason": reason}
                    )
                sent += 1
            self.state.reported.append(key)
            self._save()
        return sent

    def _reported_before(self, job: str, attempt: int) -> bool:
        """Whether the inbox already has this run's end (sent by a bridge killed before it saved that it had)."""
        return any(
            e["kind"] in ("ended", "failed")
            and isinstance(e["payload"], dict)
            and e["payload"].get("attempt") == attempt
            for e in self.db.events_about(job=job)
        )

    # --- state ---------------------------------------------------------------------------------------------------

    def _save(self) -> None:
        """Write the state atomically: a kill leaves the old file or the new one."""
        write_json_atomically(self.state_path, asdict(self.state))
