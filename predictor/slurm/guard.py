"""The walltime guard (opt-in): a job that times out is requeued with a larger limit, at most N times, each decision kept.

The larger limit is the first quantile of the job's estimate past its served limit (:data:`QUANTILES`, e.g. 0.99
then 0.999) whose upper estimate exceeds the limit it timed out at, rounded up to whole minutes and capped by the
partition's ``MaxTime``. Declined, and recorded as such: a job requeued N times already, one whose algorithm nobody
knows (no tag, no rule), one at its partition's maximum, or one no quantile would give more time.

Every decision is a JSON line in the decisions file, appended before it is carried out, and its run's id makes it
happen once. A requeue is ``scontrol requeuehold`` then ``scontrol update TimeLimit=... StartTime=now`` then
``scontrol release`` (:data:`RELAUNCH_DELAY_S` later): a guard killed half way leaves the job held, never running
with its old limit, and the next guard finishes what the file says it started.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from features import FeatureError
from predictor.oracle import RuntimeOracle
from predictor.slurm.accounting import SlurmJob
from predictor.slurm.control import Slurm, SlurmError, partition_max_time
from predictor.slurm.ingest import run_id_of
from predictor.slurm.rules import JobMapping

log = logging.getLogger(__name__)
QUANTILES = (0.99, 0.999, 0.9999)
Limits = Callable[[JobMapping, float], "float | None"]
"""The upper estimate (seconds) at a quantile for a mapped job; None when there is none."""


def oracle_limits(oracle: RuntimeOracle) -> Limits:
    """Upper estimates from ``oracle`` (the champions), at any quantile; None when the job cannot be estimated."""

    def limit(mapping: JobMapping, quantile: float) -> float | None:
        try:
            job = oracle.prepare(mapping.algorithm, mapping.params, [mapping.platform])
        except (FeatureError, KeyError, ValueError) as exc:
            log.warning("cannot estimate %s for the guard: %s", mapping.algorithm, exc)
            return None
        estimate = oracle.estimate_jobs([job], limit_quantile=quantile)[0].get(mapping.platform)
        return None if estimate is None else estimate.limit

    return limit


RELAUNCH_DELAY_S = 2.0
"""Seconds a requeued job stays held before its release (a guard's pass takes that much longer per requeue).
Slurm's own requeue waits out the job credential's lifetime (minutes); releasing at once instead, slurmd can refuse
the launch when it falls in the second the killed run's credential was revoked ("Job credential revoked": the job
ends FAILED; about half the runs of tests/predictor/slurm/test_guard.py did). A start time in the future is no
cure: only the backfill pass (every 30 s) would start the job then."""


@dataclass(frozen=True)
class GuardDecision:
    """One decision about one timed-out run: ``requeue`` (started), ``requeued`` (done) or ``declined``, and why."""

    run_id: str
    job_id: str
    action: str
    reason: str
    old_limit_s: float | None = None
    new_limit_s: float | None = None
    quantile: float | None = None
    at: str = ""


class WalltimeGuard:
    """Decides and carries out requeues of timed-out jobs (see the module docstring)."""

    def __init__(
        self, slurm: Slurm, limits: Limits, decisions: Path, *, cluster: str = "slurm", max_requeues: int = 1,
        quantiles: tuple[float, ...] = QUANTILES,
    ) -> None:  # fmt: skip
        self.slurm = slurm
        self.limits = limits
        self.decisions = decisions
        self.cluster = cluster
        self.max_requeues = max_requeues
        self.quantiles = quantiles

    def history(self) -> list[GuardDecision]:
        """Every decision recorded, oldest first."""
        if not self.decisions.exists():
            return []
        return [GuardDecision(**json.loads(line)) for line in self.decisions.read_text().splitlines() if line.strip()]

    def resume(self) -> list[GuardDecision]:
        """Finish every requeue started and not recorded done (a guard stopped half way, or Slurm did not answer)."""
        history = self.history()
        done = {d.run_id for d in history if d.action == "requeued"}
        return [self._carry_out(d) for d in history if d.action == "requeue" and d.run_id not in done]

    def consider(self, job: SlurmJob, mapping: JobMapping | None) -> GuardDecision | None:
        """Decide about one ended run (only TIMEOUT runs concern the guard) and carry the decision out; once per run."""
        if job.state != "TIMEOUT":
            return None
        run_id = run_id_of(job, self.cluster)
        history = self.history()
        mine = [d for d in history if d.run_id == run_id]
        if mine:
            return None  # decided before; a requeue left half done is finished by resume()
        decision = self._decide(job, run_id, mapping, sum(d.job_id == job.job_id and d.action == "requeued" for d in history))
        self._record(decision)
        return self._carry_out(decision) if decision.action == "requeue" else decision

    def _decide(self, job: SlurmJob, run_id: str, mapping: JobMapping | None, requeued: int) -> GuardDecision:
        old = job.time_limit

        def declined(reason: str) -> GuardDecision:
            return GuardDecision(run_id, job.job_id, "declined", reason, old_limit_s=old)

        if requeued >= self.max_requeues:
            return declined(f"requeued {requeued} times already (at most {self.max_requeues})")
        if mapping is None:
            return declined("no tag or rule names its algorithm: nothing to estimate a larger limit from")
        try:
            ceiling = partition_max_time(self.slurm, job.partition) if job.partition else None
        except SlurmError as exc:
            return declined(f"cannot read the partition's MaxTime: {exc}")
        current = old or 0.0
        if ceiling is not None and current >= ceiling:
            return declined(f"its limit is the partition's maximum ({ceiling:.0f} s)")
        for quantile in self.quantiles:
            upper = self.limits(mapping, quantile)
            if upper is not None and math.ceil(upper / 60) * 60 > current:
                new = float(math.ceil(upper / 60) * 60)
                capped = ceiling is not None and new > ceiling
                new = min(new, ceiling) if ceiling is not None else new
                why = f"timed out at {current:.0f} s; the {quantile:g} quantile of its estimate is {upper:.0f} s"
                return GuardDecision(run_id, job.job_id, "requeue", why + (" (capped by the partition)" if capped else ""), old, new, quantile)
        return declined(f"no quantile up to {self.quantiles[-1]:g} of its estimate exceeds {current:.0f} s")

    def _carry_out(self, decision: GuardDecision) -> GuardDecision:
        """Requeue held, raise the limit, release; each step again is harmless, so a half-done requeue is finished."""
        minutes = math.ceil((decision.new_limit_s or 0) / 60)
        try:
            state = next((j.state for j in self.slurm.jobs([decision.job_id])), "")
            if state == "TIMEOUT":
                self.slurm.requeue(decision.job_id, hold=True)
            self.slurm.update(decision.job_id, TimeLimit=str(minutes), StartTime="now")
            time.sleep(RELAUNCH_DELAY_S)  # the run ended before its requeue: this keeps the release past its kill's second
            self.slurm.release(decision.job_id)
        except SlurmError as exc:
            log.warning("requeueing job %s failed (tried again on the next pass): %s", decision.job_id, exc)
            return decision
        done = GuardDecision(**{**asdict(decision), "action": "requeued", "at": ""})
        self._record(done)
        log.info("job %s requeued with a limit of %d min: %s", decision.job_id, minutes, decision.reason)
        return done

    def _record(self, decision: GuardDecision) -> None:
        """Append the decision as one JSON line, on disk before anything is done about it."""
        stamped = GuardDecision(**{**asdict(decision), "at": datetime.now(UTC).isoformat(timespec="seconds")})
        self.decisions.parent.mkdir(parents=True, exist_ok=True)
        with self.decisions.open("a") as fh:
            fh.write(json.dumps(asdict(stamped)) + "\n")
            fh.flush()
