"""The Slurm commands the service runs (``squeue``, ``scontrol``, ``sbatch``, ``scancel``), each with a deadline.

The cluster is the one ``SLURM_CONF`` names (or Slurm's default). A command that fails raises :class:`SlurmError`
with what it printed; one that does not answer within ``timeout_s`` raises it too. The jobs slurmctld holds are read
as JSON (``squeue --json``): a job's name and comment are free text, and in ``squeue --format`` lines a ``|`` or a
line break in one of them would stand for another job's fields.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from predictor.walltime import parse_walltime
from slurm.accounting import QUEUED, SQUEUE_FORMAT, SlurmJob, read_squeue

NULL = "(null)"


class SlurmError(RuntimeError):
    """A Slurm command failed or did not answer in time."""


@dataclass(frozen=True)
class QueuedJob:
    """A job as ``squeue`` shows it (finished ones too while slurmctld still holds them)."""

    job_id: str
    name: str
    state: str
    node_list: str | None
    comment: str
    reason: str = ""
    user: str = ""
    work_dir: str = ""

    @property
    def line_breaks(self) -> int:
        """The line breaks in its name and working directory: the extra lines its completion record spans."""
        return self.name.count("\n") + self.work_dir.count("\n")

    @property
    def held(self) -> bool:
        """Pending and held (submitted held, or requeued held) until released."""
        return self.state == "PENDING" and "held" in self.reason.lower()


@dataclass(frozen=True)
class Node:
    """A node as ``sinfo`` shows it: name, state (``idle``, ``mixed``, ``down*``, ...) and CPUs."""

    name: str
    state: str
    cpus: int

    @property
    def usable(self) -> bool:
        """Up and taking jobs: not down, drained, failing or not responding (``*``)."""
        bad = ("down", "drain", "fail", "maint", "unk", "not_responding", "*", "inval", "future")
        return not any(word in self.state.lower() for word in bad)


class Slurm:
    """Runs Slurm's client commands against one cluster."""

    def __init__(self, conf: str | None = None, timeout_s: float = 30.0, cwd: str | None = None) -> None:
        self.env = {**os.environ, **({"SLURM_CONF": conf} if conf else {})}
        self.timeout_s = timeout_s
        self.cwd = cwd

    def run(self, program: str, *args: str) -> str:
        """What ``program args`` prints; SlurmError if it fails or outlasts the timeout."""
        try:
            done = subprocess.run(
                [program, *args],
                env=self.env,
                cwd=self.cwd,
                capture_output=True,
                text=True,
                timeout=self.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise SlurmError(f"{program} {' '.join(args)} did not answer in {self.timeout_s:g} s") from None
        except OSError as exc:
            raise SlurmError(f"cannot run {program}: {exc.strerror or exc}") from None
        if done.returncode != 0:
            raise SlurmError(
                f"{program} {' '.join(args)} failed ({done.returncode}): {(done.stderr or done.stdout).strip()}"
            )
        return done.stdout

    def jobs(self, job_ids: Iterable[str] = ()) -> list[QueuedJob]:
        """Every job slurmctld holds, in any state (only ``job_ids`` when given): finished ones until ``MinJobAge``.

        Read from ``squeue --json`` (which lists every job whatever ``--jobs`` says: the ids are picked here)."""
        text = self.run("squeue", "--json", "--states=all")
        try:
            listed = json.loads(text)["jobs"]
        except (ValueError, KeyError, TypeError):
            raise SlurmError(f"squeue --json printed no job list: {text[:200]!r}") from None
        wanted = set(job_ids)
        out = []
        for job in listed if isinstance(listed, list) else []:
            job_id = str(job.get("job_id", "")) if isinstance(job, dict) else ""
            if job_id and (not wanted or job_id in wanted):
                out.append(
                    QueuedJob(
                        job_id,
                        _text(job, "name"),
                        _text(job, "job_state"),
                        _text(job, "nodes") or None,
                        _text(job, "comment"),
                        _text(job, "state_reason"),
                        _text(job, "user_name"),
                        _text(job, "current_working_directory"),
                    )
                )
        return out

    def held(self, job_ids: Sequence[str]) -> dict[str, QueuedJob]:
        """Each of ``job_ids`` slurmctld still holds, by id (those it has forgotten are left out)."""
        return {job.job_id: job for job in self.jobs(job_ids)} if job_ids else {}

    def queue(self) -> list[SlurmJob]:
        """Every job waiting or running now, with its user, request, submit and start time (their users' history)."""
        states = ",".join(sorted(QUEUED))
        return read_squeue(self.run("squeue", "-h", f"--states={states}", f"--format={SQUEUE_FORMAT}"))

    def nodes(self) -> list[Node]:
        """Every node with its state and CPUs."""
        out: list[Node] = []
        for line in self.run("sinfo", "-h", "-N", "--format=%N|%T|%c").splitlines():
            name, state, cpus = (line.split("|") + ["", "", "0"])[:3]
            if name and not any(n.name == name for n in out):
                out.append(Node(name, state, int(cpus) if cpus.isdigit() else 0))
        return out

    def submit(self, *args: str) -> str:
        """``sbatch --parsable args``: the new job's id."""
        return self.run("sbatch", "--parsable", *args).strip().split(";")[0]

    def update(self, job_id: str, **fields: str) -> None:
        """``scontrol update JobId=<id> Field=value ...``."""
        self.run("scontrol", "update", f"JobId={job_id}", *(f"{key}={value}" for key, value in fields.items()))

    def release(self, job_id: str) -> None:
        self.run("scontrol", "release", job_id)

    def requeue(self, job_id: str, hold: bool = False) -> None:
        """Put an ended job back in the queue (``hold``: held until released)."""
        self.run("scontrol", "requeuehold" if hold else "requeue", job_id)

    def cancel(self, job_id: str) -> None:
        self.run("scancel", job_id)


def _text(job: dict, key: str) -> str:
    """A text field of a job in ``squeue --json`` ('' when absent, null or ``(null)``)."""
    value = job.get(key)
    return "" if value is None or value == NULL else str(value)


def partition_max_time(slurm: Slurm, partition: str) -> float | None:
    """The partition's MaxTime in seconds (None: unlimited)."""
    text = slurm.run("sinfo", "-h", f"--partition={partition}", "--format=%l").splitlines()
    return parse_walltime(text[0]) if text else None


def partition_max_memory(slurm: Slurm, partition: str) -> int | None:
    """The memory of the partition's smallest node in MB (``sinfo %m``; None when it shows none): the most a one-node
    job there can ask for."""
    text = slurm.run("sinfo", "-h", f"--partition={partition}", "--format=%m").split()
    sizes = [int(word.rstrip("+")) for word in text if word.rstrip("+").isdigit()]
    return min(sizes) if sizes else None
