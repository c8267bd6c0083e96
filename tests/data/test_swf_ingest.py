"""Importing SWF logs: job classes, clusters, exit statuses, skips and rejects by line, idempotency, the real logs."""

from __future__ import annotations

import csv
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.app import app
from data.ingest import IngestError, IngestReport
from data.swf_ingest import ingest_swf
from features.history import history_features
from features.swf import read_swf
from predictor.catalog import Catalog, load_catalog
from predictor.domain import Source
from predictor.settings import BUNDLED_DATA
from predictor.store import MeasurementStore
from tests.traces import trace

CATALOG = """
platforms:
  alpha: {kind: cpu, cores: 2, clock_ghz: 1, memory_gb: 1, disk: hdd, power_watts: 1}
  beta: {kind: cpu, cores: 6, clock_ghz: 1, memory_gb: 1, disk: hdd, power_watts: 1}
  toy: {kind: cpu, cores: 6, clock_ghz: 1, memory_gb: 1, disk: hdd, power_watts: 1}
  plain: {kind: cpu, cores: 1, clock_ghz: 1, memory_gb: 1, disk: hdd, power_watts: 1}
algorithms:
  toy-short: {parameters: {}, implementations: {alpha: {}, beta: {}, toy: {}}}
  plain-all: {parameters: {}, implementations: {plain: {}}}
  plain-q3: {parameters: {}, implementations: {plain: {}}}
"""
TOY = """; UnixStartTime: 1704067200
; TimeZoneString: UTC
0 0 5 100 2 1 1024 2 200 -1 1 10 1 1 -1 1 -1 -1 {1,1} short 1:ppn=2:cl_alpha
1 10 0 50 1 1 1024 1 100 -1 0 10 1 1 -1 1 -1 -1 {1} short 1:ppn=1
2 20 0 -1 1 1 1024 1 100 -1 -1 11 1 1 -1 1 -1 -1 {2} short 1:ppn=1:cl_beta
3 30 0 70 12 1 1024 12 100 -1 5 11 1 1 -1 1 -1 -1 {2,3} short 2:ppn=6
4 40 0 seventy 1 1 1024 1 100 -1 1 11 1 1 -1 1 -1 -1 {2} short 1:ppn=1
5 50 0 10 1 1 1024 1 100 -1 1 12 1 1 -1 1 -1 -1 {4} long 1:ppn=1:^cl_alpha
"""
PLAIN = """1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1
2 5 0 20 1 -1 -1 1 60 -1 1 1 1 -1 3 -1 -1 -1
"""


@pytest.fixture
def toy_catalog(tmp_path: Path) -> Catalog:
    path = tmp_path / "catalog.yaml"
    path.write_text(CATALOG)
    return load_catalog(path)


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def accounted(report: IngestReport) -> bool:
    return report.rows == report.stored + report.duplicates + len(report.skipped) + len(report.rejected)


def test_jobs_become_measurements_with_class_cluster_status_time_and_context(
    tmp_path: Path, store: MeasurementStore, toy_catalog: Catalog
) -> None:
    path = write(tmp_path / "logs", "toy.swf", TOY)
    report = ingest_swf(path, store, toy_catalog)
    assert (report.rows, report.stored, report.duplicates) == (6, 3, 0) and accounted(report)
    assert [(s.line, s.field) for s in report.skipped] == [(5, "run")]
    assert [(r.line, r.field) for r in report.rejected] == [(7, "run"), (8, "algorithm")]
    assert "unknown algorithm 'toy-long'" in report.rejected[1].message
    by_id = {m.run_id: m for m in store.measurements(successful_only=False)}
    assert set(by_id) == {"swf-toy-0", "swf-toy-1", "swf-toy-3"}
    first, failed, cancelled = by_id["swf-toy-0"], by_id["swf-toy-1"], by_id["swf-toy-3"]
    assert (first.algorithm, first.platform, first.machine, first.wall_seconds, first.exit_status) == (
        "toy-short",
        "alpha",
        "node1",
        100,
        0,
    )
    # recorded when it ended: submitted at 0, waited 5 s, ran 100 s
    assert first.source is Source.IMPORT and first.recorded_at == datetime(2024, 1, 1, 0, 1, 45, tzinfo=UTC)
    assert first.context == {
        "job": 0,
        "swf_status": 1,
        "user": 10,
        "group": 1,
        "executable": 1,
        "partition": 1,
        "requested_procs": 2,
        "requested_seconds": 200,
        "allocated_procs": 2,
        "avg_cpu_seconds": 1,
        "used_memory": 1024,
        "wait_seconds": 5,
        "queue": "short",
        "nodes": [1],
        "node_request": "1:ppn=2:cl_alpha",
    }
    log = read_swf(path)
    assert first.features == history_features(log.jobs, log.start_time, log.timezone)[0]
    assert (failed.platform, failed.machine, failed.exit_status) == ("alpha", "node1", 1)  # node 1 is alpha's
    assert (cancelled.platform, cancelled.machine, cancelled.exit_status) == ("toy", "unknown", 2)  # node 3 unknown
    assert cancelled.features["user.submitted_jobs"] == 1  # the skipped job 2 still counts as a submission


def test_every_valid_job_is_recorded_in_the_job_history_once(
    tmp_path: Path, store: MeasurementStore, toy_catalog: Catalog
) -> None:
    """Skipped jobs and jobs of classes the catalog lacks are their users' history too; importing again adds none."""
    path = write(tmp_path / "logs", "toy.swf", TOY)
    ingest_swf(path, store, toy_catalog)
    ingest_swf(path, store, toy_catalog)
    columns = (
        'key, cluster, "user", "group", partition, time_limit_s, min_cpus, submit_at, start_at, end_at, state, seq'
    )
    with store.engine.connect() as conn:
        rows = [tuple(r) for r in conn.exec_driver_sql(f"SELECT {columns} FROM job_history ORDER BY seq")]
    t0 = 1704067200.0
    assert rows == [
        ("swf-toy-0", "toy", "10", "1", "short", 200.0, 2, t0, t0 + 5, t0 + 105, "completed", 3),
        ("swf-toy-1", "toy", "10", "1", "short", 100.0, 1, t0 + 10, t0 + 10, t0 + 60, "failed", 4),
        (
            "swf-toy-2",
            "toy",
            "11",
            "1",
            "short",
            100.0,
            1,
            t0 + 20,
            None,
            None,
            None,
            5,
        ),  # run unknown: no start either
        ("swf-toy-3", "toy", "11", "1", "short", 100.0, 12, t0 + 30, t0 + 30, t0 + 100, "cancelled", 6),
        ("swf-toy-5", "toy", "12", "1", "long", 100.0, 1, t0 + 50, t0 + 50, t0 + 60, "completed", 8),  # class unknown
    ]


LIMITED = """1 0 0 60 1 -1 -1 1 60 -1 0 1 1 -1 -1 -1 -1 -1
2 5 0 65 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1
3 9 0 30 1 -1 -1 1 60 -1 5 1 1 -1 -1 -1 -1 -1
4 12 0 90 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1
5 15 0 20 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1
"""


def test_a_job_that_ran_to_its_requested_time_is_censored(
    tmp_path: Path, store: MeasurementStore, toy_catalog: Catalog
) -> None:
    report = ingest_swf(write(tmp_path, "plain.swf", LIMITED), store, toy_catalog)
    assert report.stored == 5 and accounted(report)
    found = {m.run_id: (m.censored, m.exit_status) for m in store.measurements(successful_only=False)}
    assert found == {
        "swf-plain-1": (True, 1),  # killed at its 60 s limit, logged as failed
        "swf-plain-2": (True, 0),  # ran past its limit (grace), logged as completed
        "swf-plain-3": (False, 2),  # cancelled at 30 s, before its limit: a failure, not a bound
        "swf-plain-4": (False, 0),  # no requested time: nothing says a limit stopped it
        "swf-plain-5": (False, 0),
    }
    assert store.count(informative_only=True) == 4


def test_rejects_file_keeps_the_lines_as_they_were(
    tmp_path: Path, store: MeasurementStore, toy_catalog: Catalog
) -> None:
    path = write(tmp_path / "logs", "toy.swf", TOY)
    report = ingest_swf(path, store, toy_catalog, rejects_dir=tmp_path / "rejects")
    assert report.rejects_path == tmp_path / "rejects" / "toy.rejects.csv"
    with report.rejects_path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    lines = TOY.splitlines()
    assert [(r["swf_line"], r["_line"], r["_field"]) for r in rows] == [
        (lines[6], "7", "run"),
        (lines[7], "8", "algorithm"),
    ]
    assert rows[0]["_error"] == "expected a number, got 'seventy'"


def test_importing_again_stores_nothing_new(tmp_path: Path, store: MeasurementStore, toy_catalog: Catalog) -> None:
    path = write(tmp_path, "toy.swf", TOY)
    ingest_swf(path, store, toy_catalog)
    again = ingest_swf(path, store, toy_catalog)
    assert (again.stored, again.duplicates, len(again.skipped), len(again.rejected)) == (0, 3, 1, 2) and accounted(
        again
    )
    assert store.count() == 3


def test_options_fill_only_what_the_log_does_not_say(tmp_path: Path, toy_catalog: Catalog) -> None:
    store = MeasurementStore(f"sqlite:///{tmp_path / 's.db'}")
    store.migrate()
    ingest_swf(write(tmp_path, "toy.swf", TOY), store, toy_catalog, platform="beta", machine="m9")
    ingest_swf(write(tmp_path, "plain.swf", PLAIN), store, toy_catalog)
    found = {m.run_id: (m.algorithm, m.platform, m.machine) for m in store.measurements(successful_only=False)}
    assert found == {
        "swf-toy-0": ("toy-short", "alpha", "node1"),
        "swf-toy-1": ("toy-short", "alpha", "node1"),
        "swf-toy-3": ("toy-short", "beta", "m9"),
        "swf-plain-1": ("plain-all", "plain", "unknown"),
        "swf-plain-2": ("plain-q3", "plain", "unknown"),
    }
    # no header: Unix times; the first run to end, 10 s after the log's start
    assert store.measurements()[0].recorded_at == datetime(1970, 1, 1, 0, 0, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "options", "message"),
    [
        ("; only: a header\n", {}, "no job lines"),
        (TOY, {"platform": "nowhere"}, "unknown platform option 'nowhere'"),
        ("; UnixStartTime: later\n" + TOY, {}, "header UnixStartTime is not a number"),
    ],
)
def test_unusable_files_raise(tmp_path: Path, toy_catalog: Catalog, text: str, options: dict, message: str) -> None:
    store = MeasurementStore(f"sqlite:///{tmp_path / 's.db'}")
    with pytest.raises(IngestError, match=message):
        ingest_swf(write(tmp_path, "toy.swf", text), store, toy_catalog, **options)


def test_cli_picks_the_reader_by_format_or_suffix(tmp_path: Path) -> None:
    write(tmp_path, "catalog.yaml", CATALOG)
    env = {"PREDICTOR_HOME": str(tmp_path / "home"), "PREDICTOR_CATALOG_PATH": str(tmp_path / "catalog.yaml")}
    log = write(tmp_path / "logs", "toy.log", TOY)
    runner = CliRunner()
    result = runner.invoke(app, ["ingest", "--format", "swf", str(log), "--rejects-dir", str(tmp_path / "r")], env=env)
    assert result.exit_code == 1, result.output  # two lines rejected
    assert f"{log}: 6 rows, 3 stored, 0 already stored, 1 skipped, 2 rejected" in result.stdout
    assert "skipped 1: run time unknown (-1): not a measurement" in result.stdout
    assert "line 7, run: expected a number, got 'seventy'" in result.stderr
    assert (tmp_path / "r" / "toy.rejects.csv").exists() and not (tmp_path / "logs" / "toy.rejects.csv").exists()
    plain = write(tmp_path / "logs", "plain.swf", PLAIN)
    result = runner.invoke(app, ["ingest", str(plain)], env=env)
    assert result.exit_code == 0 and f"{plain}: 2 rows, 2 stored" in result.stdout
    result = runner.invoke(app, ["ingest", str(plain), "--map", "a=b"], env=env)
    assert result.exit_code == 2 and "an SWF log has fixed fields" in result.stderr
    table = write(tmp_path / "logs", "runs.txt", "run_id,algorithm,platform,wall_seconds\nc1,plain-all,plain,3\n")
    result = runner.invoke(app, ["ingest", "--format", "csv", str(table)], env=env)
    assert result.exit_code == 0 and f"{table}: 1 rows, 1 stored" in result.stdout


@pytest.fixture(scope="module")
def real_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[MeasurementStore, dict[str, IngestReport]]:
    """Both real logs imported once into a SQLite store with the bundled catalog."""
    folder = tmp_path_factory.mktemp("real")
    store = MeasurementStore(f"sqlite:///{folder / 'store.db'}")
    store.migrate()
    catalog = load_catalog(BUNDLED_DATA / "catalog.yaml")
    names = ("hpc2n.swf", "wagap-2013.swf")
    reports = {name: ingest_swf(trace(name), store, catalog, rejects_dir=folder) for name in names}
    return store, reports


def test_real_hpc2n_log_imports_cleanly(real_store: tuple[MeasurementStore, dict[str, IngestReport]]) -> None:
    store, reports = real_store
    report = reports["hpc2n.swf"]
    assert (report.rows, report.stored, report.duplicates, len(report.skipped), report.rejected) == (
        3170,
        3145,
        0,
        25,
        [],
    )
    assert {s.message for s in report.skipped} == {"run time unknown (-1): not a measurement"}
    assert ("hpc2n-all", "hpc2n") in store.pairs()
    first = store.measurement("swf-hpc2n-1")
    assert first is not None and first.recorded_at == datetime.fromtimestamp(
        1027839845 + 308434 + 31405, UTC
    )  # its end
    assert (first.features["time.hour"], first.features["time.weekday"]) == (9, 6)  # Sunday 09:04 in Stockholm


def test_real_wagap_log_imports_with_its_two_bad_lines_rejected(
    real_store: tuple[MeasurementStore, dict[str, IngestReport]],
) -> None:
    store, reports = real_store
    report = reports["wagap-2013.swf"]
    assert (report.rows, report.stored, report.duplicates, report.skipped) == (17900, 17898, 0, ())
    assert [(r.line, r.field) for r in report.rejected] == [(4186, "run"), (4200, "run")] and accounted(report)
    platforms = Counter(
        m.platform for m in store.measurements(successful_only=False) if m.run_id.startswith("swf-wagap")
    )
    assert platforms == {"zegox": 9233, "zewura": 8576, "wagap-2013": 89}
    assert len({a for a, _ in store.pairs() if a.startswith("wagap-2013-")}) == 11
