"""Behaviour before and after a restructuring (issue 32): the deterministic benchmarks' numbers and the API's bytes.

    .venv/bin/python benchmarks/behaviour.py --checkout /work/baseline --out before.json --serve-home HOME
    .venv/bin/python benchmarks/behaviour.py --checkout . --out after.json --serve-home HOME
    .venv/bin/python benchmarks/behaviour.py --compare before.json after.json
    .venv/bin/python benchmarks/behaviour.py --table before.json after.json

Each benchmark of ``BENCHMARKS`` runs as a subprocess of this Python with ``cwd`` and ``PYTHONPATH`` set to the
checkout (so its packages win over an editable install; checked before any run), from a byte-identical copy of the
checkout's script in a temporary folder: a script that writes beside itself (``RESULTS = Path(__file__).parent /
"results"``) writes there, never into the checkout. Recorded per benchmark: the JSON and CSV files it wrote (CSV as
rows, every digit), its wall and CPU seconds, and ``complete`` (false when ``--timeout`` stopped it: what it wrote
so far is kept). seed000 writes no file: its figures are its stdout's per-run lines and tables, at the precision it
prints (0.1 s). The real logs come from ``../shared/data/traces`` beside the checkout, as ``tests/traces.py`` finds
them (``--traces`` to override).

``--serve-home HOME`` starts the checkout's API (``python -m predictor serve`` with ``PREDICTOR_HOME=HOME``, a
trained registry) on a free 127.0.0.1 port, waits at most ``--ready-timeout`` seconds for ``/readyz``, sends the
README's request (POST /v1/predict, mafft on ``samples/family-40x300.fa``, which the API resolves under the
checkout's ``data/``) and GET /v1/models, records both answers' exact text, and stops the server by its PID.

``--backfill-limit N`` and ``--backfill-only WORD...`` pass ``--limit N`` and ``--only WORD...`` to the log replay
(``backfill_traces_hpc2n``): the first N jobs after the history, the rows whose label holds one of the words (its
learned rows, ``--backfill-only service``, train as the replay goes and take hours on the whole log). The arguments
are recorded as ``options`` (compared, so two recordings of different prefixes or rows differ there); a prefix is
compared with a prefix only.

    .venv/bin/python benchmarks/behaviour.py --checkout /work/baseline --only backfill_traces_hpc2n \
        --backfill-limit 300 --backfill-only service --out before-learned.json

``--table BEFORE [AFTER]`` prints a few headline figures per benchmark as a markdown table (the results page's).
``--compare`` prints, per benchmark, whether every recorded value is identical, the differing ones side by side, and
exits 1 on any difference. Left out of the comparison, by name, because they measure this machine and not the
behaviour (``TIMING``): the fields ``seconds``, ``sim_seconds``, ``bound_seconds``, ``ms``, ``best_ms``,
``median_ms``, ``wall``, ``cpu`` and ``load`` (the load-average note), and this tool's ``wall_seconds`` and
``cpu_seconds``; seed000's summary line (wall seconds, load) and each of its runs' ``(N.N s)`` (``TIMING_LINES``);
seed002's pass-cost table (milliseconds, stdout only, not recorded); and the rows of the planners stopped by a
wall-clock budget (``BUDGETED``: batch-search, ga-strong, milp), whose results depend on the machine's speed.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TIMING = {"seconds", "sim_seconds", "bound_seconds", "ms", "best_ms", "median_ms", "wall", "cpu", "load"}
TIMING |= {"wall_seconds", "cpu_seconds"}  # this tool's own
BUDGETED = {"batch-search", "ga-strong", "milp"}
TIMING_LINES = re.compile(r"\d s wall, |^chart: ")  # seed000's summary line (wall, load) and its chart's path
PREDICT = {"algorithm": "mafft", "params": {"input": "samples/family-40x300.fa"}}


@dataclass(frozen=True)
class Benchmark:
    """One deterministic benchmark: its script under ``benchmarks/`` and its arguments (``{out}``: the temp folder,
    ``{traces}``: the real logs' folder); ``stdout``: its figures are on stdout (it writes no file of them)."""

    name: str
    script: str
    args: tuple[str, ...]
    stdout: bool = False


BENCHMARKS = (  # the quick ones first, the log replay (its learned rows train as they go) last
    Benchmark("seed002_walker", "seed002_walker.py", ()),
    Benchmark("seed000_policies", "seed000_policies.py", ("--chart", "{out}/seed000_policies.png"), stdout=True),
    Benchmark(
        "batch_planning_small",
        "batch_planning.py",
        ("--sizes", "20x4,50x5,100x10,100x20,200x20", "--milp", "0", "--out", "{out}/batch_planning-small-runs.csv"),
    ),
    Benchmark(
        "backfill_traces_hpc2n",
        "backfill_traces.py",
        ("logs", "{traces}/hpc2n.swf", "--json", "{out}/backfill_traces.json"),
    ),
)


def checkout_env(checkout: Path, **extra: str) -> dict[str, str]:
    """This process's environment with the checkout (and its benchmarks, for their sibling imports) first on the
    path."""
    path = os.pathsep.join([str(checkout / "benchmarks"), str(checkout)])
    return {**os.environ, "PYTHONPATH": path, **extra}


def number(text: str) -> Any:
    """A CSV cell as a number when it is one (so JSON keeps every digit), else the text."""
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def read_outputs(folder: Path) -> dict[str, Any]:
    """The JSON and CSV files a benchmark wrote into ``folder`` (any depth), by their path in it."""
    found: dict[str, Any] = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if path.suffix == ".json":
            found[name] = json.loads(path.read_text())
        elif path.suffix == ".csv":
            with path.open(newline="") as f:
                found[name] = [{k: number(v) for k, v in row.items()} for row in csv.DictReader(f)]
    return found


def stdout_figures(text: str) -> list[str]:
    """seed000's stdout lines (per-run lines and tables), without the summary line and each run's ``(N.N s)``."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip() and not TIMING_LINES.search(line)]
    return [re.sub(r"\(\s*\d+\.\d s\)$", "", line).rstrip() for line in lines]


def run_benchmark(
    bench: Benchmark, checkout: Path, traces: Path, python: str, timeout: float, options: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Run one benchmark in ``checkout`` (``options``: more arguments, recorded): its recorded outputs (and stdout
    figures), wall and CPU seconds. Past ``timeout`` seconds its process group is stopped and what it wrote so far
    is kept, with ``complete`` false."""
    with tempfile.TemporaryDirectory(prefix=f"behaviour-{bench.name}-") as tmp:
        out = Path(tmp)
        script = out / bench.script  # RESULTS beside it: out / "results"
        shutil.copyfile(checkout / "benchmarks" / bench.script, script)
        argv = [python, str(script), *(a.format(out=out, traces=traces) for a in bench.args), *options]
        began, cpu = time.perf_counter(), children_cpu()
        child = subprocess.Popen(
            argv,
            cwd=checkout,
            env=checkout_env(checkout),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )  # its own process group, so a timeout stops its worker processes too
        try:
            stdout, stderr = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGTERM)
            stdout, stderr = child.communicate(timeout=60)
        wall, cpu = time.perf_counter() - began, children_cpu() - cpu
        complete = child.returncode == 0
        if not complete and wall < timeout:
            raise RuntimeError(f"{bench.name} failed ({child.returncode}): {stderr[-2000:]}")
        recorded = {
            "argv": argv[1:],
            "complete": complete,
            "wall_seconds": round(wall, 1),
            "cpu_seconds": round(cpu, 1),
        }
        if options:
            recorded["options"] = list(options)
        recorded["outputs"] = read_outputs(out)
        if complete and not recorded["outputs"] and not bench.stdout:
            raise RuntimeError(f"{bench.name} wrote no JSON or CSV under {out}: nothing to compare")
        return {**recorded, "stdout": stdout_figures(stdout)} if bench.stdout else recorded


def children_cpu() -> float:
    """User and system CPU seconds of this process's finished children (and theirs) so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url: str, body: dict[str, Any] | None = None, timeout: float = 60.0) -> tuple[int, str]:
    """Status and exact body text of a GET (or a JSON POST when ``body`` is given)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"content-type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def serve_answers(checkout: Path, home: Path, python: str, ready_timeout: float) -> dict[str, Any]:
    """Start the checkout's API on ``home``, record the README request's and GET /v1/models' answers (and what
    /readyz said: ready or degraded, how many champions, from where), stop it."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = Path(tempfile.mkstemp(prefix="behaviour-serve-", suffix=".log")[1])
    argv = [python, "-m", "predictor", "serve", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("w") as out:
        server = subprocess.Popen(
            argv,
            cwd=checkout,
            env=checkout_env(checkout, PREDICTOR_HOME=str(home), PYTHONUNBUFFERED="1"),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + ready_timeout
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"the API exited ({server.returncode}) before it was ready; log: {log}")
            try:
                status, ready = fetch(f"{base}/readyz", timeout=5)
                if status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the API was not ready after {ready_timeout:g} s; log: {log}")
            time.sleep(1.0)
        predict_status, predict = fetch(f"{base}/v1/predict", PREDICT)
        models_status, models = fetch(f"{base}/v1/models")
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=30)
    return {
        "request": PREDICT,
        "ready": {k: v for k, v in json.loads(ready).items() if k in ("status", "champions", "source", "reasons")},
        "predict_status": predict_status,
        "predict": predict,
        "models_status": models_status,
        "models": models,
    }


def record(args: argparse.Namespace) -> None:
    """Run the chosen benchmarks (and the API) in the checkout and write one JSON keyed by benchmark."""
    checkout = args.checkout.resolve()
    traces = (args.traces or checkout.parent / "shared" / "data" / "traces").resolve()
    commit = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"], check=False, capture_output=True, text=True
    ).stdout.strip()
    imported = subprocess.run(
        [args.python, "-c", "import predictor; print(predictor.__file__)"],
        check=True,
        cwd=checkout,
        env=checkout_env(checkout),
        capture_output=True,
        text=True,
    ).stdout.strip()
    if not Path(imported).is_relative_to(checkout):
        raise SystemExit(f"{checkout}'s runs would import predictor from {imported}")
    result: dict[str, Any] = {"benchmarks": {}}
    if args.update and args.out.exists():  # add to (or replace in) an earlier recording of the same commit
        result = json.loads(args.out.read_text())
        if result["commit"] != commit:
            raise SystemExit(f"{args.out} records {result['commit']}, not {commit}")
    result.update(checkout=str(checkout), commit=commit, imports=imported)
    options = {"backfill_traces_hpc2n": backfill_options(args)}
    for bench in BENCHMARKS:
        if args.only is not None and bench.name not in args.only:
            continue
        print(f"{bench.name} ...", flush=True)
        result["benchmarks"][bench.name] = run_benchmark(
            bench, checkout, traces, args.python, args.timeout, options.get(bench.name, ())
        )
        print(f"{bench.name}: {result['benchmarks'][bench.name]['wall_seconds']:.0f} s", flush=True)
        args.out.write_text(json.dumps(result, indent=1))  # after each, so a long run keeps what it has
    if args.serve_home:
        began = time.perf_counter()
        result["api"] = serve_answers(checkout, args.serve_home.resolve(), args.python, args.ready_timeout)
        result["api"]["wall_seconds"] = round(time.perf_counter() - began, 1)
        print(f"api: predict {result['api']['predict_status']}, models {result['api']['models_status']}", flush=True)
    args.out.write_text(json.dumps(result, indent=1))


def backfill_options(args: argparse.Namespace) -> tuple[str, ...]:
    """The log replay's ``--limit`` and ``--only`` from ``--backfill-limit`` and ``--backfill-only`` (none: all)."""
    limit = ("--limit", str(args.backfill_limit)) if args.backfill_limit is not None else ()
    return (*limit, *(("--only", *args.backfill_only) if args.backfill_only else ()))


def leaves(value: Any, path: str = "") -> dict[str, Any]:
    """Every scalar under ``value`` by its path, without the timing fields and the rows of the planners stopped by a
    wall-clock budget."""
    if isinstance(value, dict):
        if value.get("planner") in BUDGETED:
            return {}
        return {
            k: v for key, item in value.items() if key not in TIMING for k, v in leaves(item, f"{path}.{key}").items()
        }
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in leaves(item, f"{path}[{i}]").items()}
    return {path: value}


def same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to NaN."""
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def sections(recording: dict[str, Any]) -> dict[str, Any]:
    """A recording's parts by name, the API's last, without their command lines (they name temporary folders)."""
    parts = {**recording.get("benchmarks", {}), **({"api": recording["api"]} if "api" in recording else {})}
    return {name: {k: v for k, v in part.items() if k != "argv"} for name, part in parts.items()}


def compare(before_path: Path, after_path: Path, shown: int = 20) -> bool:
    """Print per benchmark (and the API) whether before and after agree, the differences side by side; True if all
    do."""
    before, after = json.loads(before_path.read_text()), json.loads(after_path.read_text())
    for side, recording in (("before", before), ("after", after)):
        print(f"{side:7s} {recording.get('commit', '?')[:12]} ({recording.get('checkout')})")
    print(f"\n{'':24s} {'values':>6s}  {'verdict':>12s}   wall seconds before | after")
    old_parts, new_parts = sections(before), sections(after)
    agree = True
    for name in dict.fromkeys([*old_parts, *new_parts]):
        if name not in old_parts or name not in new_parts:
            print(f"{name:24s} MISSING on the {'before' if name not in old_parts else 'after'} side")
            agree = False
            continue
        old, new = old_parts[name], new_parts[name]
        a, b = leaves(old), leaves(new)
        differ = [p for p in dict.fromkeys([*a, *b]) if p not in a or p not in b or not same(a[p], b[p])]
        verdict = f"{len(differ)} DIFFER" if differ else "identical"
        walls = f"{old.get('wall_seconds', 0):7.0f} | {new.get('wall_seconds', 0):.0f}"
        print(f"{name:24s} {len(a):6d}  {verdict:>12s}   {walls}")
        for p in differ[:shown]:
            print(f"    {p}: {a.get(p, '<absent>')!r:>30} | {b.get(p, '<absent>')!r}")
        if len(differ) > shown:
            print(f"    ... and {len(differ) - shown} more")
        agree &= not differ
    return agree


def headlines(recording: dict[str, Any]) -> dict[str, str]:
    """A few figures per part of a recording, by label, as the results page shows them (means over seeds and
    instances; the full detail is what ``--compare`` compares)."""
    found: dict[str, str] = {}
    parts = recording.get("benchmarks", {})
    if "seed002_walker" in parts:
        runs = parts["seed002_walker"]["outputs"]["results/seed002_walker-runs.csv"]
        for (testbed, policy), values in grouped(runs, ("estimates", "policy"), "job_completion").items():
            found[f"seed002 {testbed} {policy}: mean grid-job completion (s)"] = f"{statistics.fmean(values):.1f}"
    if "seed000_policies" in parts:
        cluster = ""
        for line in parts["seed000_policies"]["stdout"]:
            if line.startswith("**"):
                cluster = line.split("**")[1]
            elif line.startswith("| ") and not line.startswith(("| policy", "| ---")):
                cells = [c.strip() for c in line.strip("|").split("|")]
                found[f"seed000 {cluster} {cells[0]} ({cells[1]}): mean completion (s)"] = cells[2]
    if "batch_planning_small" in parts:
        runs = parts["batch_planning_small"]["outputs"]["batch_planning-small-runs.csv"]
        for (kind, planner), values in grouped(runs, ("kind", "planner"), "ratio").items():
            if planner in ("best heuristic", "edf:objective=makespan", "ga (paper)"):
                found[f"batch {kind} {planner}: mean makespan / bound"] = f"{statistics.fmean(values):.4f}"
    if "backfill_traces_hpc2n" in parts:
        for log, part in parts["backfill_traces_hpc2n"]["outputs"].get("backfill_traces.json", {}).items():
            for row in part["rows"]:
                found[f"backfill {log} {row['run']}: AVEbsld"] = f"{row['avebsld']:.2f}"
    if "api" in recording:
        api = recording["api"]
        for what in ("predict", "models"):
            digest = hashlib.sha256(api[what].encode()).hexdigest()[:16]
            found[f"API {what}: status, bytes, sha256"] = f"{api[f'{what}_status']}, {len(api[what])}, {digest}"
    return found


def grouped(rows: list[dict[str, Any]], keys: tuple[str, ...], value: str) -> dict[tuple[Any, ...], list[float]]:
    """``value`` of ``rows`` grouped by ``keys``, in first-seen order."""
    groups: dict[tuple[Any, ...], list[float]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(row[value])
    return groups


def table(paths: list[Path]) -> str:
    """The headline figures of one recording (or of before and after, side by side) as a markdown table."""
    columns = [headlines(json.loads(p.read_text())) for p in paths]
    labels = list(dict.fromkeys(label for column in columns for label in column))
    head = ["figure", *(["before", "after"] if len(paths) == 2 else ["value"])]
    lines = ["| " + " | ".join(head) + " |", "| --- |" + " ---: |" * (len(head) - 1)]
    return "\n".join(
        lines + [f"| {label} | " + " | ".join(c.get(label, "") for c in columns) + " |" for label in labels]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=REPO, help="the checkout to run (default: this repository)")
    parser.add_argument("--out", type=Path, help="the JSON to write")
    parser.add_argument("--update", action="store_true", help="keep what --out already records, replacing what runs")
    parser.add_argument(
        "--only", nargs="*", choices=[b.name for b in BENCHMARKS], help="only these benchmarks (none: the API only)"
    )
    parser.add_argument(
        "--traces", type=Path, help="the real logs' folder (default: ../shared/data/traces beside the checkout)"
    )
    parser.add_argument(
        "--serve-home", type=Path, help="PREDICTOR_HOME of a trained registry: also record the API's answers"
    )
    parser.add_argument(
        "--backfill-limit", type=int, help="the log replay: only the first N jobs after the history (default: all)"
    )
    parser.add_argument(
        "--backfill-only", nargs="+", help="the log replay: only the rows whose label holds one of these words"
    )
    parser.add_argument("--table", type=Path, nargs="+", help="BEFORE [AFTER]: print the headline figures as markdown")
    parser.add_argument("--timeout", type=float, default=4 * 3600.0, help="seconds before a benchmark is stopped")
    parser.add_argument("--ready-timeout", type=float, default=900.0, help="seconds to wait for the API's /readyz")
    parser.add_argument("--python", default=sys.executable, help="the interpreter the checkout runs under")
    parser.add_argument(
        "--compare",
        type=Path,
        nargs=2,
        metavar=("BEFORE", "AFTER"),
        help="compare two recordings; exit 1 on a difference",
    )
    args = parser.parse_args()
    if args.table:
        print(table(args.table))
        return
    if args.compare:
        sys.exit(0 if compare(*args.compare) else 1)
    if args.out is None:
        parser.error("--out is required to record")
    record(args)


if __name__ == "__main__":
    main()
