"""Schemathesis over every operation of a live ``predictor serve``, with and without the token: server errors per operation.

Runs Schemathesis' own engine (``st run``) on the service's OpenAPI document in three phases: the schema's
examples, the coverage phase (boundary and just-out-of-bounds values of every field, deterministic) and
the fuzzing phase (Hypothesis, positive and negative data, ``--examples`` per operation and mode). Every
answer is checked: no 5xx, a documented status, the documented content type and response schema. Nothing
stops at the first failure; the requests, server errors and other failed checks are counted per operation
from Schemathesis' event stream, and the first few problems are printed.

    .venv/bin/python benchmarks/fuzz_api.py --examples 200 [--postgres] [--extreme]

Without ``--url`` it trains a small home from the bundled dataset (MAFFT, ``linear_log``, 3 folds) in a
temporary folder and serves it with a token, on SQLite or (``--postgres``) on a throwaway PostgreSQL
server. Operations without input (``GET /healthz``) have one possible request, so they get a handful.
"""

from __future__ import annotations

import argparse
import base64
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.pgserver import throwaway_database  # noqa: E402 - after the paths above

TOKEN = "fuzz-token"
CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"
PHASES = "examples,coverage,fuzzing"
SHOWN = 3  # problems printed per operation and kind


@dataclass
class OperationReport:
    """What the fuzzer sent to one operation and what came back wrong."""

    requests: int = 0
    server_errors: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def fuzz(base: str, examples: int, token: str | None, workdir: Path, seed: int = 1) -> dict[str, OperationReport]:
    """Run ``st run`` against ``base`` (with ``token`` as bearer, or none) and count what happened per operation."""
    events = workdir / f"events-{'token' if token else 'anonymous'}.ndjson"
    command = [
        str(Path(sys.executable).with_name("st")),
        "run",
        f"{base}/openapi.json",
        "--phases",
        PHASES,
        "--mode",
        "all",
        "--max-examples",
        str(examples),
        "--checks",
        CHECKS,
        "--continue-on-failure",
        "--workers",
        "1",
        "--seed",
        str(seed),
        "--suppress-health-check",
        "all",
        "--generation-database",
        "none",
        "--request-timeout",
        "60",
        "--no-color",
        "--report",
        "ndjson",
        "--report-ndjson-path",
        str(events),
        *(["--header", f"Authorization: Bearer {token}"] if token else []),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=workdir)  # its cache stays there
    if not events.exists():
        raise RuntimeError(
            f"schemathesis did not run ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return _reports(events)


def _reports(events: Path) -> dict[str, OperationReport]:
    """Requests, 5xx answers and failed checks per operation label, from Schemathesis' NDJSON event stream."""
    reports: dict[str, OperationReport] = {}
    for line in events.read_text().splitlines():
        event = json.loads(line)
        recorder = event.get("ScenarioFinished", {}).get("recorder", {})
        report = reports.setdefault(recorder["label"], OperationReport()) if recorder else None
        for interaction in recorder.get("interactions", {}).values():
            report.requests += 1
            request, response = interaction["request"], interaction["response"]
            if response is not None and response["status_code"] >= 500:
                body = base64.b64decode(response.get("content", {}).get("$base64", "")).decode(errors="replace")
                sent = base64.b64decode((request.get("body") or {}).get("$base64", "")).decode(errors="replace")
                report.server_errors.append(
                    f"{response['status_code']} {request['method']} {request['uri']} {sent[:300]} -> {body[:200]}"
                )
        for checks in recorder.get("checks", {}).values():
            for check in checks:
                if check["status"] == "failure" and check["name"] != "not_a_server_error":
                    failure = (check.get("failure_info") or {}).get("failure") or {}
                    message = " / ".join(str(failure.get("message", "")).splitlines())
                    report.failures.append(
                        f"{failure.get('title', check['name'])} on {failure.get('operation')}: {message[:300]}"
                    )
    return reports


def summary(runs: dict[str, dict[str, OperationReport]]) -> str:
    """A table per operation: requests and server errors per run (with and without the token), then the problems seen."""
    labels = list(dict.fromkeys(label for reports in runs.values() for label in reports))
    header = " | ".join(f"requests {name} | 5xx" for name in runs)
    lines = [f"| operation | {header} | other failed checks |", "| --- |" + " ---: | ---: |" * len(runs) + " ---: |"]
    for label in labels:
        cells = []
        for reports in runs.values():
            r = reports.get(label, OperationReport())
            cells += [str(r.requests), str(len(r.server_errors))]
        failed = sum(len(reports[label].failures) for reports in runs.values() if label in reports)
        lines.append(f"| {label} | {' | '.join(cells)} | {failed} |")
    every = [r for reports in runs.values() for r in reports.values()]
    lines.append(
        f"\n{len(labels)} operations, {sum(r.requests for r in every)} requests: "
        f"{sum(len(r.server_errors) for r in every)} server errors, {sum(len(r.failures) for r in every)} other failed checks"
    )
    for name, reports in runs.items():
        for label, r in reports.items():
            for kind, problems in (("server error", r.server_errors), ("failed check", r.failures)):
                lines += [f"  {kind} [{label}, {name}]: {problem}" for problem in problems[:SHOWN]]
    return "\n".join(lines)


EXTREME_SECONDS = (1e308, 3.7e16, 1e12)  # runs no edge lets in now, written past it as an older release could have


def seed_extremes(store_url: str) -> None:
    """Write absurd runs straight into the store, for a trained pair (mafft) and one served by the fallback (clustalo)."""
    from predictor.domain import Measurement
    from predictor.store import MeasurementStore

    store = MeasurementStore(store_url)
    runs = [
        Measurement(
            run_id=f"extreme-{algorithm}-{platform}-{i}",
            algorithm=algorithm,
            platform=platform,
            features={},
            wall_seconds=seconds,
        )
        for algorithm in ("mafft", "clustalo")
        for platform in ("cpu1", "cpu2")
        for i, seconds in enumerate(EXTREME_SECONDS)
    ]
    store.add(runs)
    store.dispose()


@contextmanager
def trained_service(workdir: Path, postgres: bool, extreme: bool = False) -> Iterator[str]:
    """``predictor serve`` over a home trained from the bundled dataset, with the token (and absurd runs stored after
    training, with ``extreme``); yields its base URL."""
    from apisetup import DATASETS, cli, ours

    with ExitStack() as stack:
        store = {"store_url": stack.enter_context(throwaway_database())} if postgres else {}
        home = workdir / "home"
        home.mkdir()
        cli(home, "ingest", *map(str, DATASETS), **store)
        cli(home, "train", "--algorithm", "mafft", "--model", "linear_log", cv_folds="3", **store)
        if extreme:
            seed_extremes(store.get("store_url") or f"sqlite:///{home / 'store.db'}")
        base, _ = stack.enter_context(
            ours(home, workdir / "server.log", api_token=TOKEN, api_reload_interval_s="0", **store)
        )
        yield base


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200, help="fuzzing examples per operation and generation mode")
    parser.add_argument("--postgres", action="store_true", help="serve from a throwaway PostgreSQL store")
    parser.add_argument("--url", help="fuzz this running service instead of starting one")
    parser.add_argument("--token", default=TOKEN, help="the service's token (with --url)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--extreme", action="store_true", help="store absurd runs (1e308 s, ...) past the edge before serving"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fuzz-api-") as tmp:
        work = Path(tmp)
        with trained_service(work, args.postgres, args.extreme) if args.url is None else _given(args.url) as base:
            runs = {
                "with token": fuzz(base, args.examples, args.token, work, args.seed),
                "without": fuzz(base, args.examples, None, work, args.seed),
            }
    print(summary(runs))
    sys.exit(1 if any(r.server_errors for reports in runs.values() for r in reports.values()) else 0)


@contextmanager
def _given(url: str) -> Iterator[str]:
    yield url.rstrip("/")


if __name__ == "__main__":
    main()
