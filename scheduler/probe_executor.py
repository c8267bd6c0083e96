"""The scheduler's probe orders carried out on this host, for a site with no resource manager that could run them.

One executor per machine reads the orders naming its machine from the database, in order (:meth:`SchedulerStore.orders`):
PROBE starts the profile wrapper's command (:func:`data.probe.profile_probe_command`, killed at the cap, storing
the run with source ``probe``) as a child process in its own session (at normal CPU priority: the machine is idle, and
the run should take what a user's would); CANCEL_PROBE kills that session at once; a child that ended is reported as ``probe_ended`` in the scheduler's inbox, once. The order
cursor and the running children (probe number, probe id, pid) are a JSON file written after every action, so a
restarted executor starts nothing twice and reports the end of a child it lost sight of. Other orders are not its
business (the site runs its real jobs its own way).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from data.probe import profile_probe_command
from predictor.atomic import read_state, write_json_atomically
from predictor.catalog import Catalog
from predictor.passes import every_interval
from scheduler.orders import OrderKind
from scheduler.processes import group_alive
from scheduler.store import SchedulerStore

log = logging.getLogger(__name__)


@dataclass
class ExecutorState:
    """Orders done up to ``cursor``; the probes running here: number -> [probe id, pid]."""

    cursor: int = 0
    running: dict[str, list[Any]] = field(default_factory=dict)


class LocalProbeExecutor:
    """Runs one machine's probe orders as child processes of this host (see the module docstring)."""

    def __init__(self, db: SchedulerStore, catalog: Catalog, machine: str, state_path: Path, log_dir: Path) -> None:
        self.db, self.catalog, self.machine = db, catalog, machine
        self.state_path, self.log_dir = state_path, log_dir
        self.state = read_state(state_path, ExecutorState)
        self._children: dict[str, subprocess.Popen[bytes]] = {}

    def step(self) -> int:
        """One pass: carry out the new orders, then report the probes that ended; how many orders it read."""
        orders = self.db.orders(self.state.cursor, 1000, self.machine)
        for order in orders:
            if order["kind"] == OrderKind.PROBE.value and order["machine_id"] == self.machine:
                self._start(order)
            elif order["kind"] == OrderKind.CANCEL_PROBE.value:
                self._kill(str(order["attempt"]))
            self.state.cursor = order["seq"]
            self._save()
        self._report_ended()
        return len(orders)

    def run(self, interval_s: float, stop: threading.Event) -> None:
        """Step every ``interval_s`` until ``stop`` is set; a failing pass is logged and the next one tries again."""
        every_interval(
            self.step, interval_s, stop, what="probe executor pass", log=log, retry_on=(OSError,), quiet=True
        )

    def _start(self, order: dict[str, Any]) -> None:
        token, probe = str(order["attempt"]), order["probe"]
        if token in self.state.running or probe is None:
            return
        command = profile_probe_command(
            self.catalog, probe["probe"], probe["algorithm"], probe["platform"], probe["params"], probe["cap_s"]
        )
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with (self.log_dir / f"probe-{token}.out").open("ab") as out:
            child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self._children[token] = child
        self.state.running[token] = [order["job_id"], child.pid]

    def _kill(self, token: str) -> None:
        """Kill the probe's whole session at once; a cancelled probe is not reported (the scheduler closed it)."""
        if token in self.state.running:
            self._signal(token)
            self.state.running.pop(token)
            child = self._children.pop(token, None)
            if child is not None:
                child.wait(timeout=30)

    def _signal(self, token: str) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.state.running[token][1], signal.SIGKILL)

    def _report_ended(self) -> None:
        for token, (probe_id, pid) in list(self.state.running.items()):
            child = self._children.get(token)
            if child is not None and child.poll() is None:
                continue
            # its session: the profiler and the program
            if child is None and group_alive(pid):
                continue
            self.db.report_probe_end(
                self.machine, probe_id, int(token), f"exit {child.returncode}" if child is not None else "lost"
            )
            self._children.pop(token, None)
            del self.state.running[token]
            self._save()

    def _save(self) -> None:
        write_json_atomically(self.state_path, asdict(self.state))
