"""Progress in a pipe or a log: the first step, a line every few seconds with the time left, and the last step."""

from __future__ import annotations

import io
import re

from rich.console import Console

from cli.progress import PlainProgress, progress


def test_plain_lines_come_at_the_first_step_every_interval_and_the_last():
    now = [100.0]
    out = io.StringIO()
    update = PlainProgress(Console(file=out, width=200), "training", every_s=10.0, clock=lambda: now[0])
    for step in range(1, 101):
        now[0] += 1.0  # one second per step
        update(step, 100, f"step {step}")
    lines = out.getvalue().splitlines()
    assert lines[0] == "training: 1/100 (1%), 1s elapsed: step 1"
    assert lines[1] == "training: 11/100 (11%), 11s elapsed, about 1m29s left: step 11"
    assert [int(re.match(r"training: (\d+)/100 ", line).group(1)) for line in lines] == [*range(1, 92, 10), 100]
    assert lines[-1] == "training: 100/100 (100%), 1m40s elapsed: step 100"


def test_an_unknown_total_prints_counts_only():
    out = io.StringIO()
    update = PlainProgress(Console(file=out, width=200), "sweep", every_s=0.0)
    update(1, None, "mafft@cpu1 0.50s")
    assert out.getvalue().startswith("sweep: 1, ") and out.getvalue().rstrip().endswith(": mafft@cpu1 0.50s")


def test_a_console_that_is_not_a_terminal_gets_plain_lines():
    console = Console(file=io.StringIO())
    with progress(console, "compare", total=3) as update:
        assert isinstance(update, PlainProgress)
