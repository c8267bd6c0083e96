"""One scheduler per database: a lease in the database, held by the process that runs the scheduler.

The holder renews the lease every third of its time and with every step it commits (the step's
transaction is fenced: it commits only while the holder still holds the lease at its epoch). A process
that does not hold the lease stands by and tries again; when the holder stops renewing (a crash, a
SIGKILL, a lost network), the lease lapses after its time and a standby takes it over, loading the
committed state from the database. A clean stop lets the lease lapse at once. Orders are never issued
twice: a fenced-out holder's steps are refused, and the database refuses a second (job, kind, run).
Lease times are wall-clock Unix seconds: the hosts' clocks must agree to well within the lease time.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable

from scheduler.service import SchedulerService
from scheduler.store import Fence, SchedulerStore

log = logging.getLogger("scheduler")


def holder_name() -> str:
    """A name for this process as a lease holder: host, pid and a random tag (pids are reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class LeasedScheduler:
    """Runs the scheduler service built by ``build`` only while this process holds the lease; stands by otherwise."""

    def __init__(
        self, db: SchedulerStore, build: Callable[[Fence], SchedulerService], *, ttl_s: float, poll_s: float = 1.0
    ) -> None:
        self.db, self.build, self.ttl_s, self.poll_s = db, build, ttl_s, poll_s
        self.holder = holder_name()
        self._service: SchedulerService | None = None
        self._fence: Fence | None = None
        self._stop = threading.Event()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    @property
    def service(self) -> SchedulerService | None:
        """The running scheduler service, or None while this process stands by."""
        return self._service

    def standing_by(self) -> str:
        """Why this process runs no scheduler: who holds the lease, and until when."""
        lease = self.db.lease()
        if lease is None:
            return "no process holds the scheduler lease yet"
        return f"the scheduler runs in another process ({lease['holder']}, lease epoch {lease['epoch']})"

    def start(self) -> None:
        """Take the lease now if it is free, then keep holding it (or keep trying) in a background thread."""
        self._step()
        self._thread = threading.Thread(target=self._run, name="scheduler-lease", daemon=True)
        self._thread.start()

    def wait_running(self, timeout: float | None = None) -> bool:
        """Block until this process runs the scheduler (or ``timeout`` seconds pass); whether it does."""
        with self._changed:
            return (
                self._changed.wait_for(lambda: self._service is not None or self._stop.is_set(), timeout)
                and self._service is not None
            )

    def stop(self) -> None:
        """Stop the scheduler and let the lease lapse now, so a standby takes over at once."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.ttl_s + 10)
        self._drop(release=True)
        with self._changed:
            self._changed.notify_all()

    def _run(self) -> None:
        while not self._stop.wait(self.ttl_s / 3):
            try:
                self._step()
            # the database is down or busy: the lease lapses on its own if this goes on
            except Exception:
                log.exception("renewing or taking the scheduler lease failed")

    def _step(self) -> None:
        """Renew the lease if held (stop the scheduler if it was lost), else try to take it and start the scheduler."""
        if self._fence is not None:
            if not self.db.renew_lease(self._fence):
                log.error(
                    "lost the scheduler lease (epoch %s): another process took over; standing by", self._fence.epoch
                )
                self._drop(release=False)
            return
        epoch = self.db.take_lease(self.holder, self.ttl_s)
        if epoch is None:
            return
        fence = Fence(self.holder, epoch, self.ttl_s)
        # loads the committed state: whatever the previous holder finished
        service = self.build(fence)
        service.start_polling(self.poll_s)
        with self._changed:
            self._fence, self._service = fence, service
            self._changed.notify_all()
        log.warning("took the scheduler lease (epoch %s) as %s", epoch, self.holder)

    def _drop(self, *, release: bool) -> None:
        service, fence = self._service, self._fence
        self._service = self._fence = None
        if service is not None:
            service.stop()
        if release and fence is not None:
            self.db.release_lease(fence)
