"""docs/getting-started.md followed as written: every command of the page is run, in order, and what it prints is
compared with what the page shows.

The page's commands are taken from the page itself (its ``sh`` blocks; `make run` as the commands `make -n run`
says it runs, which the page lists), run by bash from the checkout with ``.venv/bin/predictor`` being this
interpreter's, the service on a free port and the home in a temporary folder. Outputs are compared on what does not
legitimately vary: a table's title, its columns and its rows' algorithm, platform and target; every other line the
page shows, with numbers, run ids, paths elided with ``…``, zoo members and the reasons after a decision taken as
wildcards; JSON by its keys, its strings (numbers as numbers) and the order of its lists. A smaller zoo and fewer folds
than the page's (the defaults take 20 minutes to train) keep it short; they change numbers and members only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from predictor.settings import PROJECT_ROOT
from tests.livesrv import eventually, free_port

pytestmark = pytest.mark.tools  # the page profiles real MAFFT runs (`make tools`)

PAGE = PROJECT_ROOT / "docs" / "getting-started.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)
NUMBER = r"[-+]?(?:\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?|nan|inf)"
STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?"
VERDICT = r"(?:promoted|refreshed|kept|forced|unchanged)"
BOX = "┏┡└━─┳╇┻┯┷"
FIGURES = ("walltime", "limit_walltime", "memory_slurm", "memory_limit_slurm")  # JSON strings that are numbers
ENV = {
    "PREDICTOR_TRAIN_MODELS": '["mean", "linear_log", "svr_log"]',  # the page's zoo has 22 members
    "PREDICTOR_CV_FOLDS": "3",
    "PREDICTOR_API_RELOAD_INTERVAL_S": "1",
    "PREDICTOR_WORKER_INTERVAL_S": "3600",  # one pass while the test runs: the page shows the first pass's decisions
    "COLUMNS": "250",
}


@dataclass(frozen=True)
class Step:
    """One ``sh`` block of the page and the output blocks that follow it (``text`` or ``json``)."""

    command: str
    outputs: list[tuple[str, str]]


def steps(page: str) -> list[Step]:
    found: list[Step] = []
    for match in FENCE.finditer(page):
        language, body = match.group(1), match.group(2)
        if language == "sh":
            found.append(Step(body, []))
        elif language in ("text", "json") and found:
            found[-1].outputs.append((language, body))
    return found


# --- comparing a page's output with a command's ---------------------------------------------------------------------


def figures(text: str) -> str:
    """``text`` as a pattern in which every number, and every ISO 8601 time, is any number or time."""
    pattern = ""
    for k, part in enumerate(re.split(rf"({STAMP})", text)):
        if k % 2:
            pattern += STAMP
            continue
        parts = re.split(rf"((?<![A-Za-z_\d.]){NUMBER})", part)  # a number in a name (cpu1, v2) is the name's
        pattern += "".join(NUMBER if j % 2 else re.escape(piece) for j, piece in enumerate(parts))
    return pattern


def line_pattern(line: str) -> re.Pattern[str]:
    """A page's line as a pattern: numbers, hex run ids, ``…`` and ``<placeholders>`` are wildcards, and so is what follows
    ``<pair> <decision>:`` or ``#<n> <pair>:`` (a decision's reason names members and figures that vary)."""
    decided = re.match(rf"^(\S+/\S+(?: memory)?) {VERDICT}: ", line.strip())
    if decided:
        return re.compile(re.escape(decided.group(1)) + f" {VERDICT}: .*$")
    logged = re.match(rf"^(.* training\.worker: \S+/\S+ \w+): {VERDICT} \(", line.strip())
    if logged:  # the worker's log line of a decision, with its reason
        return re.compile(figures(logged.group(1)) + rf": {VERDICT} \(.*$")
    history = re.match(r"^#\d+ (\S+/\S+(?: \w+)?): ", line.strip())
    if history:
        return re.compile(r"#\d+ " + re.escape(history.group(1)) + ": .*$")
    pattern = ""
    for token in re.split(r"(\s+)", re.sub(r"<[^<>]+>", "…", line.strip())):  # a <placeholder> is any word
        if not token:
            continue
        if token.isspace():
            pattern += r"\s+"
        elif "…" in token:
            pattern += r"\S*"
        elif re.fullmatch(r"[0-9a-f]{32}:?", token):
            pattern += r"[0-9a-f]{32}:?"
        else:
            pattern += figures(token)
    return re.compile(pattern + "$")


@dataclass
class Table:
    title: str | None
    columns: list[str]
    rows: list[dict[str, str]]


def split(text: str) -> tuple[list[Table], list[str]]:
    """The rich tables of ``text`` and its other lines (blank ones left out)."""
    tables: list[Table] = []
    others: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("┏"):
            title = None
            if others and not others[-1].startswith(("│", "┃")) and lines[i - 1].strip() == others[-1].strip():
                title = others.pop().strip()
            columns = [cell.strip() for cell in lines[i + 1].strip().strip("┃").split("┃")]
            rows = []
            i += 3
            while i < len(lines) and lines[i].startswith(("│", "...")):
                if lines[i].startswith("│"):
                    cells = [cell.strip() for cell in lines[i].strip().strip("│").split("│")]
                    rows.append(dict(zip(columns, cells, strict=True)))
                i += 1
            tables.append(Table(title, columns, rows))
            i += 1  # the bottom border
            continue
        if line.strip() and not line.startswith(tuple(BOX)):
            others.append(line.rstrip())
        i += 1
    return tables, others


KEYS = ("algorithm", "platform", "target")


def compare_text(shown: str, printed: str) -> list[str]:
    """What of the page's ``shown`` output the command's ``printed`` output does not have (empty: it matches)."""
    problems = []
    shown_tables, shown_lines = split(shown)
    printed_tables, printed_lines = split(printed)
    elided = "..." in shown.split()
    for table in shown_tables:
        title = line_pattern(table.title or "")
        same = [
            t
            for t in printed_tables
            if t.columns == table.columns and (table.title is None or title.match(t.title or ""))
        ]
        if not same:
            problems.append(
                f"no table {table.title!r} with columns {table.columns} in {[(t.title, t.columns) for t in printed_tables]}"
            )
            continue
        keys = [c for c in KEYS if c in table.columns]
        want = [tuple(r[k] for k in keys) for r in table.rows]
        got = [tuple(r[k] for k in keys) for r in same[0].rows]
        if keys and not (set(want) <= set(got) if elided else sorted(want) == sorted(got)):
            problems.append(f"table {table.title!r}: rows {want} shown, {got} printed")
    at = 0
    for line in shown_lines:
        if line.strip() in ("...", "…"):
            continue
        pattern = line_pattern(line)
        found = next((k for k in range(at, len(printed_lines)) if pattern.match(printed_lines[k].strip())), None)
        if found is None:
            problems.append(f"line not printed (in order): {line!r} (pattern {pattern.pattern!r})")
        else:
            at = found + 1
    return problems


def compare_json(shown: object, printed: object, where: str = "") -> list[str]:
    """Keys, strings and list order of the page's JSON in the printed one; numbers as numbers; ``"...": "..."`` elides."""
    if isinstance(shown, dict):
        if not isinstance(printed, dict):
            return [f"{where}: an object shown, {printed!r} printed"]
        problems = []
        for key, value in shown.items():
            if key == "...":
                continue
            if key not in printed:
                problems.append(f"{where}.{key}: missing")
            else:
                problems += compare_json(value, printed[key], f"{where}.{key}")
        return problems
    if isinstance(shown, list):
        if not isinstance(printed, list) or len(printed) < len(shown):
            return [f"{where}: {len(shown)} items shown, {printed!r} printed"]
        return [p for k, item in enumerate(shown) for p in compare_json(item, printed[k], f"{where}[{k}]")]
    if isinstance(shown, bool) or shown is None:
        return [] if shown == printed else [f"{where}: {shown!r} shown, {printed!r} printed"]
    if isinstance(shown, int | float):
        return [] if isinstance(printed, int | float) and not isinstance(printed, bool) else [f"{where}: {printed!r}"]
    if where.rsplit(".", 1)[-1] in FIGURES:
        return [] if isinstance(printed, str) and line_pattern(shown).match(printed) else [f"{where}: {printed!r}"]
    return [] if shown == printed else [f"{where}: {shown!r} shown, {printed!r} printed"]


def compare(language: str, shown: str, printed: str) -> list[str]:
    if language == "json":
        try:
            return compare_json(json.loads(shown), json.loads(printed))
        except json.JSONDecodeError as exc:
            return [f"not JSON ({exc}): {printed[:300]!r}"]
    return compare_text(shown, printed)


# --- running the page ------------------------------------------------------------------------------------------------


@dataclass
class Reader:
    """The page's commands as this test runs them: its interpreter for ``.venv/bin/predictor``, the service's port."""

    home: Path
    port: int

    def command(self, text: str) -> str:
        text = text.replace(".venv/bin/predictor", f"{sys.executable} -m predictor")
        text = text.replace("127.0.0.1:8000", f"127.0.0.1:{self.port}")
        return text.replace(".predictor/api-token", f"{self.home}/api-token")

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, **ENV, "PREDICTOR_HOME": str(self.home), "PREDICTOR_API_PORT": str(self.port)}

    def run(self, text: str) -> str:
        done = subprocess.run(
            ["bash", "-c", "set -eo pipefail\n" + self.command(text)],
            cwd=PROJECT_ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, f"{text}\n{done.stdout}\n{done.stderr}"
        return done.stdout


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[Reader, Path, list[str]]]:
    """`make run`'s commands as the page lists them, the last (`serve --train`) left serving; what it printed so far."""
    if shutil.which("mafft") is None:
        pytest.skip("MAFFT is not installed (`make tools`)")
    reader = Reader(tmp_path / "home", free_port())
    make = [step for step in steps(PAGE.read_text()) if "make run" in step.command][0]
    listed = [line for line in make.outputs[0][1].splitlines() if line.startswith(".venv/bin/predictor")]
    planned = subprocess.run(
        ["make", "-n", "--no-print-directory", "run", "VENV=.venv"],
        cwd=PROJECT_ROOT,
        env={k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")},  # run by make test
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.splitlines()
    assert listed == [line for line in planned if line.startswith(".venv/bin/predictor")], (listed, planned)
    *before, serve = listed
    printed = [reader.run(line) for line in before]
    log = tmp_path / "serve.log"
    from tests import tiers

    tiers.starting("`predictor serve`")
    with log.open("w") as out:
        process = subprocess.Popen(
            ["bash", "-c", "exec " + reader.command(serve)],
            cwd=PROJECT_ROOT,
            env=reader.env,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        yield reader, log, printed
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


def test_the_getting_started_page_can_be_followed_and_prints_what_it_shows(
    service: tuple[Reader, Path, list[str]],
) -> None:
    """Issue 42: after the page's profile runs its retrain said `kept: 3 new job(s) are too few ... (at least 10)`, and
    nothing of the page's "version 2" could be reproduced; its tables lacked the memory and target columns."""
    reader, log, printed = service
    base = f"http://127.0.0.1:{reader.port}"
    all_steps = steps(PAGE.read_text())
    make = next(k for k, step in enumerate(all_steps) if "make run" in step.command)
    ready: dict = {}

    def answers() -> bool:
        nonlocal ready
        try:
            ready = httpx.get(f"{base}/readyz", timeout=10).json()
        except httpx.HTTPError:
            return False
        return True

    def shown(text: str) -> str:  # the page's service listens on 8000, this one where it could
        return text.replace("127.0.0.1:8000", f"127.0.0.1:{reader.port}")

    assert eventually(answers, timeout=300), log.read_text()[-3000:]
    request = all_steps[make + 1]
    problems = compare("json", request.outputs[0][1], reader.run(request.command))  # at once: the measured medians

    def trained() -> bool:  # the worker's first pass is over and its champions are served
        training = ready.get("training") or {}
        return answers() and training.get("last_pass_at") is not None and ready["memory_champions"] > 0

    assert eventually(trained, timeout=1200), ready
    served = ready["champions"], ready["memory_champions"]
    assert eventually(lambda: answers() and (ready["champions"], ready["memory_champions"]) == (14, 14), timeout=120), (
        served,
        ready,
    )
    for language, expected in request.outputs[1:]:  # once the champions are in
        problems += [f"the request again: {p}" for p in compare(language, expected, reader.run(request.command))]
    made = "\n".join(line for line in all_steps[make].outputs[0][1].splitlines() if not line.startswith(".venv/bin/"))
    problems += [f"make run: {p}" for p in compare("text", shown(made), "\n".join(printed) + "\n" + log.read_text())]
    for k, step in enumerate(all_steps[make + 2 :], start=make + 2):
        out = reader.run(step.command)
        (log.parent / f"step-{k}.txt").write_text(out)  # what the page's block k printed, to refresh the page from
        if "predictor train" in step.command:  # the retrain the page follows: a new version of mafft on cpu1
            history = reader.run(".venv/bin/predictor models history --algorithm mafft --platform cpu1 --limit 1")
            assert re.search(r"│\s*mafft\s*│\s*cpu1\s*│\s*time\s*│\s*(promoted|refreshed)\s*│", history), out + history
            assert eventually(lambda: "mafft/cpu1" in log.read_text().split("champions swapped")[-1], timeout=120)
        for language, expected in step.outputs:
            problems += [f"after `{step.command.strip()[:60]}`: {p}" for p in compare(language, shown(expected), out)]
    assert problems == [], "\n".join([*problems, f"(the outputs: {log.parent})"])


def test_the_comparison_allows_what_varies_and_refuses_what_does_not() -> None:
    """Not a run: the matcher itself, on lines and tables the page has (numbers, members, reasons vary; words do not)."""
    assert line_pattern("mafft/cpu1 promoted: ensemble(svr_log x2, mlp x1) beats svr_log: RAE -1.92 points").match(
        "mafft/cpu1 refreshed: refreshed minus served on 12 new run(s): RAE +0.10 points"
    )
    assert not line_pattern("mafft/cpu1 promoted: x").match("mafft/cpu2 promoted: x")
    assert line_pattern("data/measurements/realtools.csv: 3744 rows, 3744 stored, 0 rejected").match(
        "data/measurements/realtools.csv: 3744 rows, 12 stored, 0 rejected"
    )
    assert not line_pattern("3744 rows, 3744 stored, 0 rejected").match("3744 rows, 3744 kept, 0 rejected")
    assert line_pattern("175a9c2da8fc427abc46ba8fef552abf: ok, wall 0.326 s, cpu 0.303 s, max rss 23236 KiB").match(
        "0123456789abcdef0123456789abcdef: ok, wall 1.5 s, cpu 1.4 s, max rss 9000 KiB"
    )
    shown = "     Champions\n┏━━━┳━━━┓\n┃ algorithm ┃ platform ┃\n┡━━━╇━━━┩\n│ mafft │ cpu1 │\n└───┴───┘\n"
    assert compare_text(shown, shown) == []
    assert compare_text(shown, shown.replace("cpu1", "cpu2")) != []
    assert compare_text(shown, shown.replace("platform", "machine")) != []
    assert compare_json({"a": 1, "b": [{"c": "x"}], "...": "..."}, {"a": 2.5, "b": [{"c": "x", "d": 1}], "e": 3}) == []
    assert compare_json({"a": 1}, {"a": "1"}) != []
