"""Progress of a long CLI command: a live bar on a terminal, plain timed lines in a pipe or a log (``make run > log``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

# (steps done, steps in all or None while unknown, what is being done)
Update = Callable[[int, int | None, str], None]

PLAIN_EVERY_S = 10.0


class PlainProgress:
    """Progress as plain lines: the first step, then at most one line every ``every_s`` seconds, and the last step.

    The time left is extrapolated from the pace since the first step, so start-up time does not inflate it.
    """

    def __init__(
        self, console: Console, title: str, every_s: float = PLAIN_EVERY_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.console, self.title, self.every_s, self.clock = console, title, every_s, clock
        self.started = clock()
        self.first: tuple[int, float] | None = None  # (steps done, time) at the first update
        self.last_line: float | None = None

    def __call__(self, done: int, total: int | None, label: str) -> None:
        now = self.clock()
        if self.first is None:
            self.first = (done, now)
        if self.last_line is not None and now - self.last_line < self.every_s and done != total:
            return
        self.last_line = now
        parts = [f"{self.title}: {done}"]
        if total:
            parts[0] += f"/{total} ({done / total:.0%})"
        parts.append(f"{_clock(now - self.started)} elapsed")
        first_done, first_at = self.first
        if total and first_done < done < total:
            parts.append(f"about {_clock((now - first_at) / (done - first_done) * (total - done))} left")
        self.console.print(", ".join(parts) + f": {label}", markup=False, highlight=False, soft_wrap=True)


@contextmanager
def progress(console: Console, title: str, total: int | None = None) -> Iterator[Update]:
    """An update function showing progress on ``console``: a rich bar on a terminal, else :class:`PlainProgress` lines."""
    if not console.is_terminal:
        yield PlainProgress(console, title)
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as bar:
        task = bar.add_task(title, total=total)
        yield lambda done, steps, label: bar.update(task, completed=done, total=steps, description=label)


def _clock(seconds: float) -> str:
    """Seconds as ``1h02m03s``, ``2m03s`` or ``3s``."""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"
