"""Limits a resource manager enforces in a simulation, and the retries of the jobs it kills.

A job is killed for time (TIMEOUT) when its run passes its time limit (``params['requested_time']``) and for
memory (OUT_OF_MEMORY) when its peak (``JobSpec.true_memory``) is above its memory limit (``JobSpec.memory``). A
log gives a job's peak, not its memory over time: the simulator takes the memory to grow evenly over the run, so a
job whose limit is a fraction f of its peak is killed after f of its run (the earlier of the two kills wins).
A killed job is submitted again at once (as a user or a workflow system does) with its limits raised by a
:class:`RetryPolicy`: ``double-both`` raises time and memory whatever ran out, ``failed-only`` only the resource
that ran out (issue 31's resource guard). Given the cluster, a raised memory never exceeds what a node has for the
job (:func:`most_memory`; Slurm refuses a job that asks more), and a job killed for memory that already asked that
much is not retried: no retry could give it more.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from predictor.domain import Estimate
from predictor.oracle import JobQuery, Oracle
from scheduler.nodes import node_needs
from scheduler.state import requested_seconds
from simulator.workload import Cluster, JobSpec

OOM, TIMEOUT = "oom", "timeout"  # the segment outcomes of the two kills
KILLS = (OOM, TIMEOUT)
RetryRule = Literal["double-both", "failed-only"]
RETRY_RULES: tuple[str, ...] = ("double-both", "failed-only")


def kill(spec: JobSpec, seconds: float) -> tuple[float, str] | None:
    """(seconds into the run, OOM or TIMEOUT) when a run of ``seconds`` of ``spec`` is killed; None if it ends."""
    kills = []
    if spec.memory is not None and spec.true_memory is not None and spec.true_memory > spec.memory:
        kills.append((seconds * spec.memory / spec.true_memory, OOM))
    limit = requested_seconds(spec.params)
    if limit is not None and limit < seconds:
        kills.append((limit, TIMEOUT))
    return min(kills, default=None)


def most_memory(spec: JobSpec, cluster: Cluster) -> int | None:
    """The most memory ``spec`` can be placed with on the machines of ``cluster`` that can run it: on each, the memory
    of a node over the most slots the job takes on one node, times its slots (a pooled machine: its memory); the
    largest over those machines, None when one of them has no memory size (nothing caps it there)."""
    caps = []
    for machine in cluster.machines:
        if machine.platform not in spec.true_times or spec.size > machine.slots:
            continue
        if machine.node_memory is None:
            return None
        slots = node_needs(spec.size, spec.params, machine.node_slots)
        caps.append(machine.node_memory // max(slots) * sum(slots))
    return max(caps, default=None)


@dataclass(frozen=True)
class RetryPolicy:
    """Which limits a killed job's next submission raises, by what factor, and how often a job may be retried; with
    the ``cluster`` its jobs run on, a raised memory stops at what a node has for the job (:func:`most_memory`)."""

    rule: RetryRule = "failed-only"
    factor: float = 2.0
    retries: int = 3
    cluster: Cluster | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.rule not in RETRY_RULES:
            raise ValueError(f"rule must be one of {', '.join(RETRY_RULES)}, got {self.rule!r}")
        if self.factor <= 1.0 or self.retries < 0:
            raise ValueError(f"need factor > 1 and retries >= 0, got {self.factor} and {self.retries}")

    def retry(self, spec: JobSpec, reason: str, now: float) -> JobSpec | None:
        """The job submitted again at ``now`` after a kill for ``reason``, with its limits raised (memory at most what a
        node has); None past the retries allowed, or when it was killed for memory and cannot be given more."""
        done = int(spec.params.get("retry", 0))
        if done >= self.retries:
            return None
        params = dict(spec.params, retry=done + 1)
        asked = memory = spec.memory
        if asked is not None and (reason == OOM or self.rule == "double-both"):
            cap = None if self.cluster is None else most_memory(spec, self.cluster)
            memory = int(asked * self.factor) if cap is None else min(int(asked * self.factor), max(cap, asked))
            if reason == OOM and memory <= asked:
                return None
        if reason == TIMEOUT or self.rule == "double-both":
            limit = requested_seconds(spec.params)
            params["requested_time"] = -1.0 if limit is None else limit * self.factor
        root = spec.id.split("~", 1)[0]
        return replace(
            spec, id=f"{root}~{done + 1}", submit=now, params=params, memory=memory, platforms=tuple(spec.true_times)
        )


class LimitOracle(Oracle):
    """Plans each job with its own time limit (a resource manager without a predictor): a retry's raised limit too."""

    label = "limit"

    def __init__(self, platforms: tuple[str, ...]) -> None:
        self.platforms = platforms

    def answer(self, job: JobQuery) -> dict[str, Estimate]:
        """The time limit on each platform the job may use."""
        seconds = requested_seconds(job.params)
        return {
            p: Estimate(platform=p, seconds=seconds, model_name=self.label) for p in job.platforms or self.platforms
        }
