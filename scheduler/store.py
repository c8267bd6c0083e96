"""The scheduler's state, orders and inbox of events in the database (SQLite or PostgreSQL, same code).

:meth:`SchedulerStore.save` writes what one event changed (jobs, runs, machines),
the orders it produced, the observations of finished runs and the event's receipt
in one transaction; :meth:`SchedulerStore.load` rebuilds the state from the tables.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    LargeBinary,
    RowMapping,
    Table,
    Text,
    cast,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from predictor.domain import Measurement, ServedEstimate
from predictor.store.scheduler_tables import (
    sched_events,
    sched_jobs,
    sched_lease,
    sched_machines,
    sched_orders,
    sched_probes,
    sched_runs,
)
from predictor.store.store import insert_measurements, insert_served
from scheduler.orders import Order, OrderKind
from scheduler.probing import ProbeJob, ProbeRecord, ProbeRun
from scheduler.state import (
    STORED_FIELDS,
    Job,
    JobStatus,
    Machine,
    Run,
    State,
    hold_memory,
    job_from_plain,
    plain,
)

log = logging.getLogger(__name__)


CHUNK = 500
PROBE_ORDERS = (OrderKind.PROBE.value, OrderKind.CANCEL_PROBE.value)
LEASE = "scheduler"  # the one role a database's lease is for


class LeaseLost(RuntimeError):
    """This process no longer holds the scheduler's lease (another took it over): what it was writing is not committed."""


@dataclass(frozen=True)
class Fence:
    """The lease a write depends on: it commits only while ``holder`` still holds the lease at ``epoch`` (and renews it)."""

    holder: str
    epoch: int
    ttl_s: float


class SchedulerStore:
    """Reads and writes the ``sched_*`` tables through one engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.dialect = engine.dialect.name

    def load(self) -> State:
        """The state as last committed: machines, every job, the runs in progress, and the plan."""
        state = State()
        with self.engine.connect() as conn:
            for row in conn.execute(select(sched_machines)).mappings():
                state.add_machine(
                    Machine(
                        row["id"],
                        row["platform"],
                        row["slots"],
                        row["power_watts"],
                        row["online"],
                        warm=row["warm"],
                        idle_since=row["idle_since"],
                        node_memory=row["node_memory"],
                    )
                )
            for row in conn.execute(select(sched_jobs).order_by(sched_jobs.c.seq)).mappings():
                state.add_job(job_from_plain({name: row[name] for name in STORED_FIELDS}))
            for row in conn.execute(select(sched_runs)).mappings():
                job, machine = state.jobs[row["job_id"]], state.machines[row["machine_id"]]
                run = Run(
                    machine.id,
                    row["start"],
                    row["attempt"],
                    row["estimate"],
                    row["progress0"],
                    row["orphan"],
                    memory=row["memory"],
                )
                job.runs[machine.id] = run
                machine.running[job.id] = None
                machine.used += job.size
                hold_memory(machine, run, job.size, 1)
        for machine in state.machines.values():
            state.refresh(machine)
        planned = [
            (j, j.planned_machine, j.planned_start or 0.0)
            for j in state.jobs.values()
            if j.status is JobStatus.PENDING and j.planned_machine is not None and j.planned_machine in state.machines
        ]
        planned.sort(key=lambda p: (p[2], p[0].seq))
        state.replan(planned)
        state.dirty_jobs.clear()
        state.dirty_machines.clear()
        return state

    def save(
        self,
        state: State,
        orders: Sequence[Order],
        now: float,
        observations: Sequence[Measurement] = (),
        event: int | None = None,
        outcome: str = "applied",
        served: Sequence[ServedEstimate] = (),
        fence: Fence | None = None,
        probes_started: Sequence[ProbeRun] = (),
        probes_closed: Sequence[ProbeRecord] = (),
    ) -> list[int]:
        """Write the dirty jobs and machines, the orders (returns their seqs), observations (through the measurement
        store's inserts, with the estimates they were served), the probes started and closed, and the event's receipt,
        in one transaction; with a ``fence``, only while its holder still holds the lease (LeaseLost, and nothing
        written, otherwise)."""
        jobs = [state.jobs[j] for j in sorted(state.dirty_jobs)]
        machines = [state.machines[m] for m in sorted(state.dirty_machines) if m in state.machines]
        with self.engine.connect().execution_options(sqlite_begin="IMMEDIATE") as conn:
            if fence is not None and not self._renew(conn, fence):
                conn.rollback()
                raise LeaseLost(f"the scheduler lease of epoch {fence.epoch} is no longer held by {fence.holder}")
            self._upsert(conn, sched_jobs, "id", [plain(j, STORED_FIELDS) for j in jobs])
            ids = [j.id for j in jobs]
            for start in range(0, len(ids), CHUNK):
                conn.execute(delete(sched_runs).where(sched_runs.c.job_id.in_(ids[start : start + CHUNK])))
            runs = [_run_row(j, r) for j in jobs for r in j.runs.values()]
            if runs:
                conn.execute(insert(sched_runs), runs)
            self._upsert(conn, sched_machines, "id", [_machine_row(m) for m in machines])
            seqs = [
                conn.execute(insert(sched_orders).values(_order_row(o, now)).returning(sched_orders.c.seq)).scalar_one()
                for o in orders
            ]
            if probes_started:
                conn.execute(insert(sched_probes), [_probe_row(r) for r in probes_started])
            for record in probes_closed:
                conn.execute(
                    update(sched_probes)
                    .where(sched_probes.c.token == record.token)
                    .values(ended=record.end, outcome=record.outcome)
                )
            insert_measurements(conn, observations)
            insert_served(conn, served)
            if event is not None:
                conn.execute(
                    update(sched_events).where(sched_events.c.seq == event).values(processed_at=now, outcome=outcome)
                )
            conn.commit()
        state.dirty_jobs.clear()
        state.dirty_machines.clear()
        return seqs

    def add_event(
        self,
        kind: str,
        *,
        machine: str | None = None,
        job: str | None = None,
        payload: dict[str, Any] | None = None,
        at: float | None = None,
    ) -> int:
        """Queue an event for the scheduler, as a resource manager would with a plain INSERT."""
        row = {"kind": kind, "machine_id": machine, "job_id": job, "payload": payload or {}, "at": at}
        with self.engine.connect().execution_options(sqlite_begin="IMMEDIATE") as conn:
            seq = conn.execute(insert(sched_events).values(row).returning(sched_events.c.seq)).scalar_one()
            conn.commit()
        return int(seq)

    def events_about(self, *, job: str | None = None, machine: str | None = None) -> list[dict[str, Any]]:
        """The inbox's events about ``job``, or else about ``machine`` (processed or not), oldest first: what a resource
        manager has already reported, so that one restarted does not report it again."""
        e = sched_events.c
        where = e.job_id == job if job is not None else (e.machine_id == machine) & e.job_id.is_(None)
        with self.engine.connect() as conn:
            return [
                dict(row)
                for row in conn.execute(
                    select(e.seq, e.kind, e.machine_id, e.job_id, e.payload).where(where).order_by(e.seq)
                ).mappings()
            ]

    def report_probe_end(self, machine: str, probe: str, token: int, reason: str = "") -> bool:
        """Send a probe's end to the inbox unless it is there already (an executor restarted before it saved that it had
        sent it); whether it was sent now."""
        sent = any(
            e["kind"] == "probe_ended" and isinstance(e["payload"], dict) and e["payload"].get("attempt") == token
            for e in self.events_about(job=probe)
        )
        if not sent:
            self.add_event("probe_ended", machine=machine, job=probe, payload={"attempt": token, "reason": reason})
        return not sent

    def pending_events(self, limit: int = 1000) -> list[dict[str, Any]]:
        """Unprocessed events, oldest first, with ``payload`` as the JSON text a resource manager wrote (checked by the service).

        SQLite keeps whatever bytes a writer put in a text column, and one row of bytes that are not UTF-8 made every
        read of the inbox fail: the text is read as bytes here and decoded, and such a row is set aside (marked
        rejected, with its reason, logged once) so the rows behind it are applied.
        """
        e = sched_events.c
        texts = {"kind": e.kind, "machine_id": e.machine_id, "job_id": e.job_id, "payload": cast(e.payload, Text)}
        if self.dialect == "sqlite":
            texts = {name: cast(column, LargeBinary) for name, column in texts.items()}
        stmt = (
            select(e.seq, *(column.label(name) for name, column in texts.items()))
            .where(e.processed_at.is_(None))
            .order_by(e.seq)
            .limit(limit)
        )
        with self.engine.connect() as conn:
            rows = [dict(row) for row in conn.execute(stmt).mappings()]
        events = []
        for row in rows:
            undecodable = [name for name, value in row.items() if isinstance(value, bytes) and not _utf8(value)]
            if undecodable:
                outcome = f"rejected: {', '.join(undecodable)} is not UTF-8 text"
                log.warning("inbox event %s set aside: %s", row["seq"], outcome)
                self.reject_event(row["seq"], time.time(), outcome)
                continue
            events.append({name: value.decode() if isinstance(value, bytes) else value for name, value in row.items()})
        return events

    def reject_event(self, seq: int, now: float, outcome: str) -> None:
        """Mark an event processed without effect, saying why."""
        with self.engine.connect().execution_options(sqlite_begin="IMMEDIATE") as conn:
            conn.execute(
                update(sched_events).where(sched_events.c.seq == seq).values(processed_at=now, outcome=outcome)
            )
            conn.commit()

    def orders(self, after: int = 0, limit: int = 1000, machine: str | None = None) -> list[dict[str, Any]]:
        """Orders with seq above ``after``, oldest first, optionally only those naming ``machine``; a probe's orders
        carry its ``sched_probes`` row as ``probe``."""
        stmt = select(sched_orders).where(sched_orders.c.seq > after)
        if machine is not None:
            stmt = stmt.where((sched_orders.c.machine_id == machine) | (sched_orders.c.target == machine))
        with self.engine.connect() as conn:
            rows = [dict(row) for row in conn.execute(stmt.order_by(sched_orders.c.seq).limit(limit)).mappings()]
            tokens = {r["attempt"] for r in rows if r["kind"] in PROBE_ORDERS}
            found: Iterable[RowMapping] = (
                conn.execute(select(sched_probes).where(sched_probes.c.token.in_(tokens))).mappings() if tokens else []
            )
            probes = {p["token"]: dict(p) for p in found}
        for row in rows:
            if row["kind"] in PROBE_ORDERS:
                row["probe"] = probes.get(row["attempt"])
        return rows

    def probes(self, since: float) -> tuple[list[ProbeRun], list[ProbeRecord], int]:
        """What a restarted prober needs: the probes still running, those closed since ``since`` (Unix seconds) or
        cancelled, and the last probe number given."""
        p = sched_probes.c
        with self.engine.connect() as conn:
            rows = (
                conn.execute(
                    select(sched_probes).where(p.ended.is_(None) | (p.started >= since) | (p.outcome == "cancelled"))
                )
                .mappings()
                .all()
            )
            last = conn.execute(select(func.max(p.token))).scalar_one()
        running = [
            ProbeRun(
                ProbeJob(
                    r["probe"], r["algorithm"], r["features"], params=r["params"], platforms=frozenset({r["platform"]})
                ),
                r["machine_id"],
                r["platform"],
                r["started"],
                r["cap_s"],
                True,
                r["token"],
            )
            for r in rows
            if r["ended"] is None
        ]
        closed = [
            ProbeRecord(
                r["probe"],
                r["algorithm"],
                r["machine_id"],
                r["platform"],
                r["started"],
                r["ended"],
                r["outcome"],
                r["token"],
            )
            for r in rows
            if r["ended"] is not None
        ]
        return running, closed, int(last or 0)

    def take_lease(self, holder: str, ttl_s: float) -> int | None:
        """Take the scheduler's lease for ``ttl_s`` seconds if it is free, lapsed or ``holder``'s already: its epoch, else None."""
        now = time.time()
        try:
            with self.engine.connect().execution_options(sqlite_begin="IMMEDIATE") as conn:
                row = (
                    conn.execute(select(sched_lease).where(sched_lease.c.name == LEASE).with_for_update())
                    .mappings()
                    .first()
                )
                if row is None:
                    conn.execute(insert(sched_lease).values(name=LEASE, holder=holder, epoch=1, expires_at=now + ttl_s))
                    epoch = 1
                elif row["holder"] == holder or row["expires_at"] < now:
                    epoch = row["epoch"] if row["holder"] == holder else row["epoch"] + 1
                    values = {"holder": holder, "epoch": epoch, "expires_at": now + ttl_s}
                    conn.execute(update(sched_lease).where(sched_lease.c.name == LEASE).values(values))
                else:
                    return None
                conn.commit()
                return epoch
        # another process inserted the first row at the same moment: it holds the lease
        except IntegrityError:
            return None

    def renew_lease(self, fence: Fence) -> bool:
        """Extend the lease by its time if ``fence`` still holds it; False once another process has taken it over."""
        with self.engine.connect().execution_options(sqlite_begin="IMMEDIATE") as conn:
            held = self._renew(conn, fence)
            conn.commit()
            return held

    def release_lease(self, fence: Fence) -> None:
        """Let the lease lapse now (a clean stop), so a standby takes over without waiting for it to expire."""
        with self.engine.connect().execution_options(sqlite_begin="IMMEDIATE") as conn:
            conn.execute(self._held(fence).values(expires_at=0.0))
            conn.commit()

    def lease(self) -> dict[str, Any] | None:
        """The lease as it stands: holder, epoch and expires_at (Unix seconds), or None if it was never taken."""
        with self.engine.connect() as conn:
            row = conn.execute(select(sched_lease).where(sched_lease.c.name == LEASE)).mappings().first()
            return None if row is None else dict(row)

    def _renew(self, conn: Connection, fence: Fence) -> bool:
        return conn.execute(self._held(fence).values(expires_at=time.time() + fence.ttl_s)).rowcount == 1

    @staticmethod
    def _held(fence: Fence) -> Any:
        """An update of the lease row that matches only while ``fence``'s holder holds it at its epoch."""
        c = sched_lease.c
        return update(sched_lease).where(c.name == LEASE, c.holder == fence.holder, c.epoch == fence.epoch)

    def _insert(self, table: Table) -> Any:
        return (sqlite.insert if self.dialect == "sqlite" else postgresql.insert)(table)

    def _upsert(self, conn: Connection, table: Table, key: str, rows: Iterable[dict[str, Any]]) -> None:
        rows = list(rows)
        if rows:
            stmt = self._insert(table)
            stmt = stmt.on_conflict_do_update(
                index_elements=[key], set_={c.name: stmt.excluded[c.name] for c in table.c if c.name != key}
            )
            conn.execute(stmt, rows)


def _run_row(j: Job, r: Run) -> dict[str, Any]:
    return {
        "job_id": j.id,
        "machine_id": r.machine,
        "start": r.start,
        "attempt": r.attempt,
        "estimate": r.estimate,
        "progress0": r.progress0,
        "orphan": r.orphan,
        "memory": r.memory,
    }


def _machine_row(m: Machine) -> dict[str, Any]:
    return {
        "id": m.id,
        "platform": m.platform,
        "slots": m.slots,
        "power_watts": m.power_watts,
        "online": m.online,
        "warm": m.warm,
        "idle_since": m.idle_since,
        "node_memory": m.node_memory,
    }


def _probe_row(r: ProbeRun) -> dict[str, Any]:
    return {
        "token": r.token,
        "probe": r.probe.id,
        "algorithm": r.probe.algorithm,
        "platform": r.platform,
        "machine_id": r.machine,
        "params": r.probe.params,
        "features": r.probe.features,
        "cap_s": r.seconds,
        "started": r.start,
    }


def _order_row(o: Order, now: float) -> dict[str, Any]:
    if o.attempt is None:
        raise ValueError(f"{o}: an order for the resource manager must name its run (attempt)")
    return {
        "kind": o.kind.value,
        "job_id": o.job,
        "machine_id": o.machine,
        "target": o.target,
        "attempt": o.attempt,
        "requeue": o.requeue,
        "reason": o.reason,
        "issued_at": now,
    }


def _utf8(value: bytes) -> bool:
    """Whether ``value`` is UTF-8 text."""
    try:
        value.decode()
    except UnicodeDecodeError:
        return False
    return True
