"""Ingesting CSV and Parquet files: conventions, mapping, option defaults, rejects by line and field, idempotency."""

from __future__ import annotations

import csv
import json
import os
import re
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest

from data import ingest
from data.ingest import IngestError, IngestReport, Reject, ingest_file
from predictor.catalog import Catalog
from predictor.domain import CacheState, Source
from predictor.records import RowError, validate_record
from predictor.store import MeasurementStore
from slurm.ingest import ingest_slurm
from slurm.rules import Rules


def write(path: Path, text: str) -> Path:
    path.write_text(text.lstrip("\n"))
    return path


def read_rejects(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def assert_accounted(report: IngestReport) -> None:
    assert report.rows == report.stored + report.duplicates + len(report.rejected)


def test_good_csv_is_stored_with_typed_params_features_and_times(
    tmp_path: Path, store: MeasurementStore, catalog: Catalog
) -> None:
    fasta = write(tmp_path / "in.fa", ">a\nACGT\n>b\nGG\n")
    path = write(
        tmp_path / "runs.csv",
        f"""
run_id,algorithm,platform,machine,wall_seconds,cpu_seconds,max_rss_kb,exit_status,cache_state,recorded_at,param.threads,param.evalue,param.ungapped,param.task,feature.query.residues,params,context.queue
r1,blastn,cpu-small,node-1,12.5,40.25,2048,0,warm,2026-03-01T12:00:00+02:00,4,1e-5,yes,blastn,1500,"{{""query"": ""q.fa""}}",short
r2,mafft,cpu-small,node-2,3,,,1,cold,2026-03-01 10:00:00,,,,,,"{{""input"": ""{fasta}""}}",
""",
    )
    report = ingest_file(path, store, catalog)
    assert (report.rows, report.stored, report.duplicates, report.rejected, report.rejects_path) == (2, 2, 0, [], None)
    first, second = store.measurements(successful_only=False)
    assert first.params == {"query": "q.fa", "threads": 4, "evalue": 1e-5, "ungapped": True, "task": "blastn"}
    assert isinstance(first.params["threads"], int)
    assert first.features == {"query.residues": 1500.0}
    assert (first.machine, first.cpu_seconds, first.max_rss_kb, first.cache_state) == (
        "node-1",
        40.25,
        2048,
        CacheState.WARM,
    )
    assert first.recorded_at == datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
    assert first.source is Source.IMPORT and first.context == {"queue": "short"}
    assert second.exit_status == 1 and second.cpu_seconds is None
    assert (second.features["input.sequences"], second.features["input.residues"]) == (2, 6)  # read from the input
    assert second.recorded_at == datetime(2026, 3, 1, 10, 0, tzinfo=UTC)  # naive means UTC


def test_good_parquet_is_stored(tmp_path: Path, store: MeasurementStore, catalog: Catalog) -> None:
    path = tmp_path / "runs.parquet"
    query = write(tmp_path / "b.fa", ">q\nACGTACGT\n")
    pd.DataFrame(
        {
            "algorithm": ["blastn", "blastn"],
            "platform": ["gpu-a100", "cpu-small"],
            "wall_seconds": [2.5, 30.0],
            "max_rss_kb": [1024, None],
            "recorded_at": pd.to_datetime(["2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"]),
            "param.threads": [8, 16],
            "feature.query.residues": [100.0, None],
            "params": ['{"query": "a.fa"}', json.dumps({"query": str(query)})],
        }
    ).to_parquet(path)
    report = ingest_file(path, store, catalog, source=Source.PROBE, machine="imported")
    assert (report.rows, report.stored, report.rejected) == (2, 2, [])
    gpu, cpu = store.measurements()
    assert gpu.params == {"query": "a.fa", "threads": 8} and gpu.max_rss_kb == 1024
    assert gpu.features == {"query.residues": 100.0}  # given, so the missing a.fa is not read
    assert cpu.features["query.residues"] == 8 and cpu.features["threads"] == 16  # none given: read from b.fa
    assert cpu.max_rss_kb is None and cpu.machine == "imported"
    assert cpu.source is Source.PROBE and cpu.recorded_at == datetime(2026, 1, 2, tzinfo=UTC)
    assert gpu.run_id.startswith("ingest-")
    again = ingest_file(path, store, catalog, machine="imported")  # the source is not part of a run's identity
    assert (again.stored, again.duplicates) == (0, 2)


def test_mapping_renames_columns_first(tmp_path: Path, store: MeasurementStore, catalog: Catalog) -> None:
    path = write(
        tmp_path / "log.csv",
        """
job,tool,node_class,runtime,qlen,user
j1,blastn,cpu-small,7.5,320,alice
""",
    )
    mapping = {
        "job": "run_id",
        "tool": "algorithm",
        "node_class": "platform",
        "runtime": "wall_seconds",
        "qlen": "feature.query.residues",
        "user": "context.user",
    }
    report = ingest_file(path, store, catalog, mapping=mapping)
    assert report.stored == 1
    [m] = store.measurements()
    assert (m.run_id, m.algorithm, m.wall_seconds, m.features, m.context) == (
        "j1",
        "blastn",
        7.5,
        {"query.residues": 320.0},
        {"user": "alice"},
    )
    with pytest.raises(IngestError, match="mapped columns not in the file: nope"):
        ingest_file(path, store, catalog, mapping={**mapping, "nope": "machine"})
    with pytest.raises(IngestError, match="both give 'wall_seconds'"):
        ingest_file(path, store, catalog, mapping={**mapping, "qlen": "wall_seconds"})


def test_options_fill_missing_algorithm_and_platform_only(
    tmp_path: Path, store: MeasurementStore, catalog: Catalog
) -> None:
    no_columns = write(tmp_path / "a.csv", "run_id,wall_seconds\nx1,1.0\n")
    ingest_file(no_columns, store, catalog, algorithm="blastn", platform="gpu-a100")
    some_cells = write(tmp_path / "b.csv", "run_id,algorithm,platform,wall_seconds\nx2,,,2.0\nx3,mafft,cpu-small,3.0\n")
    report = ingest_file(some_cells, store, catalog, algorithm="blastn", platform="cpu-small")
    assert report.stored == 2
    got = {m.run_id: (m.algorithm, m.platform) for m in store.measurements()}
    assert got == {"x1": ("blastn", "gpu-a100"), "x2": ("blastn", "cpu-small"), "x3": ("mafft", "cpu-small")}
    with pytest.raises(IngestError, match="unknown algorithm option 'nope'"):
        ingest_file(no_columns, store, catalog, algorithm="nope")


BAD_CSV = """
run_id,algorithm,platform,wall_seconds,cpu_seconds,exit_status,cache_state,param.threads,param.task,feature.query.residues,context.note
ok-1,blastn,cpu-small,1.0,,,,,,,"a note
spanning two lines"
bad-algo,blastx,cpu-small,1.0,,,,,,,

bad-platform,blastn,tpu,1.0,,,,,,,
no-impl,mafft,gpu-a100,1.0,,,,,,,
no-target,blastn,cpu-small,,,,,,,,
negative,blastn,cpu-small,-2,,,,,,,
not-finite,blastn,cpu-small,nan,,,,,,,
inf-cpu,blastn,cpu-small,1.0,inf,,,,,,
wrong-type,blastn,cpu-small,1.0,,abc,,,,,
bad-cache,blastn,cpu-small,1.0,,,lukewarm,,,,
bad-threads,blastn,cpu-small,1.0,,,,many,,,
out-of-range,blastn,cpu-small,1.0,,,,0,,,
bad-choice,blastn,cpu-small,1.0,,,,,tblastx,,
bad-feature,blastn,cpu-small,1.0,,,,,,long,
short-row,blastn,cpu-small
ok-2,blastn,gpu-a100,2.0,,,,8,megablast,10,
"""

EXPECTED_REJECTS = [
    (4, "algorithm", "unknown algorithm"),
    (6, "platform", "unknown platform"),
    (7, "platform", "mafft has no implementation on 'gpu-a100'"),
    (8, "wall_seconds", "missing"),
    (9, "wall_seconds", "greater than or equal to 0"),
    (10, "wall_seconds", ""),
    (11, "cpu_seconds", "finite"),
    (12, "exit_status", "integer"),
    (13, "cache_state", "'warm', 'cold' or 'unknown'"),
    (14, "param.threads", "expected an integer"),
    (15, "param.threads", "below the minimum"),
    (16, "param.task", "not one of megablast, blastn"),
    (17, "feature.query.residues", "expected a number"),
    (18, "(row)", "has 3 fields but the header has 11"),
]


def test_bad_rows_are_reported_by_line_and_field_and_kept(
    tmp_path: Path, store: MeasurementStore, catalog: Catalog
) -> None:
    path = write(tmp_path / "mixed.csv", BAD_CSV)
    report = ingest_file(path, store, catalog)
    assert_accounted(report)
    assert (report.rows, report.stored, report.duplicates) == (16, 2, 0)
    assert [(r.line, r.field) for r in report.rejected] == [(line, field) for line, field, _ in EXPECTED_REJECTS]
    for reject, (_, _, text) in zip(report.rejected, EXPECTED_REJECTS, strict=True):
        assert text in reject.message, reject
    assert sorted(m.run_id for m in store.measurements()) == ["ok-1", "ok-2"]
    assert report.rejects_path == tmp_path / "mixed.rejects.csv"
    rows = read_rejects(report.rejects_path)
    assert [(int(r["_line"]), r["_field"]) for r in rows] == [(line, field) for line, field, _ in EXPECTED_REJECTS]
    assert rows[0]["run_id"] == "bad-algo" and rows[0]["algorithm"] == "blastx"
    assert rows[-1]["run_id"] == "short-row" and rows[-1]["wall_seconds"] == ""
    assert all(r["_error"] for r in rows)


def test_param_outside_schema_and_json_problems_are_rejected(
    tmp_path: Path, store: MeasurementStore, catalog: Catalog
) -> None:
    path = write(
        tmp_path / "params.csv",
        """
run_id,algorithm,platform,wall_seconds,param.word_size,params,features
p1,blastn,cpu-small,1,11,,
p2,blastn,cpu-small,1,,not json,
p3,blastn,cpu-small,1,,[1],
p4,blastn,cpu-small,1,,"{""threads"": 2}","{""query.residues"": ""x""}"
p5,blastn,cpu-small,1,,"{""threads"": 2}","{""query.residues"": 5}"
""",
    )
    report = ingest_file(path, store, catalog)
    assert [(r.line, r.field) for r in report.rejected] == [
        (2, "param.word_size"),
        (3, "params"),
        (4, "params"),
        (5, "feature.query.residues"),
    ]
    assert "not a parameter of this algorithm" in report.rejected[0].message
    assert report.stored == 1 and store.measurements()[0].params == {"threads": 2}


def test_reingesting_stores_nothing_new(tmp_path: Path, store: MeasurementStore, catalog: Catalog) -> None:
    path = write(
        tmp_path / "noids.csv",
        """
algorithm,platform,wall_seconds,param.threads
blastn,cpu-small,1.5,2
blastn,cpu-small,1.50,2.0
blastn,cpu-small,2.5,2
""",
    )
    first = ingest_file(path, store, catalog)
    assert (first.stored, first.duplicates) == (2, 1)  # rows 2 and 3 are the same run once normalised
    second = ingest_file(path, store, catalog)
    assert (second.rows, second.stored, second.duplicates) == (3, 0, 3)
    assert store.count() == 2


def test_corrected_rejects_file_can_be_ingested_and_clean_runs_remove_it(
    tmp_path: Path, store: MeasurementStore, catalog: Catalog
) -> None:
    path = write(tmp_path / "fix.csv", "run_id,algorithm,platform,wall_seconds\nf1,blastn,cpu-small,-1\n")
    report = ingest_file(path, store, catalog)
    assert report.rejects_path is not None
    fixed = report.rejects_path.read_text().replace("-1", "1")
    corrected = write(tmp_path / "fixed.csv", fixed)
    assert ingest_file(corrected, store, catalog).stored == 1
    write(path, "run_id,algorithm,platform,wall_seconds\nf1,blastn,cpu-small,1\n")
    again = ingest_file(path, store, catalog)
    assert (again.duplicates, again.rejects_path) == (1, None)
    assert not (tmp_path / "fix.rejects.csv").exists()


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("runs.txt", "a,b\n", "unsupported file type '.txt'"),
        ("runs", "a,b\n", "unsupported file type '(none)'"),
        ("empty.csv", "", "the file is empty"),
        ("blank.csv", "\n\n", "the file is empty"),
        ("header.csv", "run_id,wall_seconds\n", "header but no data rows"),
        ("extra.csv", "run_id,wall_seconds,colour\nr,1,red\n", "unknown columns: 'colour'"),
        ("broken.parquet", "this is not parquet", "not a readable parquet file"),
    ],
)
def test_unusable_files_raise(
    tmp_path: Path, store: MeasurementStore, catalog: Catalog, name: str, content: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(IngestError, match=re.escape(message)):
        ingest_file(path, store, catalog)


def test_missing_file_raises(tmp_path: Path, store: MeasurementStore, catalog: Catalog) -> None:
    with pytest.raises(IngestError, match="cannot read"):
        ingest_file(tmp_path / "absent.csv", store, catalog)


def test_reject_is_a_plain_record() -> None:
    assert Reject(2, "wall_seconds", "missing") == Reject(line=2, field="wall_seconds", message="missing")


def test_censored_flag_is_strict_and_needs_a_run_time(
    tmp_path: Path, store: MeasurementStore, catalog: Catalog
) -> None:
    path = write(
        tmp_path / "censored.csv",
        """
run_id,algorithm,platform,wall_seconds,exit_status,censored
c-true,blastn,cpu-small,60,137,true
c-one,blastn,cpu-small,61,137,1
c-upper,blastn,cpu-small,62,0,TRUE
f-false,blastn,cpu-small,5,0,False
f-zero,blastn,cpu-small,6,0,0
f-empty,blastn,cpu-small,7,0,
bad-yes,blastn,cpu-small,60,137,yes
bad-two,blastn,cpu-small,60,137,2
bad-float,blastn,cpu-small,60,137,1.0
bad-zero-time,blastn,cpu-small,0,137,true
""",
    )
    report = ingest_file(path, store, catalog)
    assert_accounted(report)
    assert [(r.line, r.field) for r in report.rejected] == [
        (8, "censored"),
        (9, "censored"),
        (10, "censored"),
        (11, "censored"),
    ]
    assert "expected true or false" in report.rejected[0].message and "'yes'" in report.rejected[0].message
    assert "needs wall_seconds > 0" in report.rejected[-1].message
    stored = {m.run_id: m.censored for m in store.measurements(with_censored=True)}
    assert stored == {
        "c-true": True,
        "c-one": True,
        "c-upper": True,
        "f-false": False,
        "f-zero": False,
        "f-empty": False,
    }
    assert (
        store.count(informative_only=True) == 6 and len(store.measurements()) == 4
    )  # the censored 137s are no finished runs


def test_parquet_censored_column_of_booleans(tmp_path: Path, store: MeasurementStore, catalog: Catalog) -> None:
    path = tmp_path / "runs.parquet"
    frame = pd.DataFrame(
        {"run_id": ["a", "b"], "algorithm": "blastn", "platform": "cpu-small", "wall_seconds": [9.0, 3.0]}
    )
    frame.assign(censored=[True, False], exit_status=[137, 0]).to_parquet(path)
    assert ingest_file(path, store, catalog).stored == 2
    assert {m.run_id: m.censored for m in store.measurements(with_censored=True)} == {"a": True, "b": False}


FINISHED_RUN_ID = "ingest-3a3cf7a280efbbbeba1314e1261a81ac12dc5ded93f1029073ebcd6ffab829a4"


def test_derived_run_id_of_a_finished_run_ignores_the_censored_flag(
    tmp_path: Path, store: MeasurementStore, catalog: Catalog
) -> None:
    without = write(tmp_path / "without.csv", "algorithm,platform,wall_seconds\nblastn,cpu-small,8\n")
    flagged = write(
        tmp_path / "flagged.csv",
        "algorithm,platform,wall_seconds,censored\nblastn,cpu-small,8,false\nblastn,cpu-small,8,true\n",
    )
    assert ingest_file(without, store, catalog).stored == 1
    again = ingest_file(flagged, store, catalog)
    assert (again.stored, again.duplicates) == (1, 1), (
        "the same finished run keeps its id; a censored one is another run"
    )
    # The id a finished run had before the censored flag existed (computed on main before the flag, commit 1865d63).
    assert store.measurements()[0].run_id == FINISHED_RUN_ID


def test_times_outside_the_years_1_to_9999_in_utc_reject_their_row_only(
    tmp_path: Path, store: MeasurementStore, catalog: Catalog
) -> None:
    path = write(
        tmp_path / "times.csv",
        """
run_id,algorithm,platform,wall_seconds,recorded_at
t1,blastn,cpu-small,1.0,2026-03-01T12:00:00+02:00
t2,blastn,cpu-small,1.0,9999-12-31T23:00:00-05:00
t3,blastn,cpu-small,1.0,0001-01-01T00:30:00+01:00
t4,blastn,cpu-small,1.0,9999-12-31T23:00:00+05:00
t5,blastn,cpu-small,1.0,0
""",
    )
    report = ingest_file(path, store, catalog)
    assert [(r.line, r.field) for r in report.rejected] == [(3, "recorded_at"), (4, "recorded_at"), (6, "recorded_at")]
    assert "outside the years 1 to 9999" in report.rejected[0].message
    assert "ISO 8601" in report.rejected[2].message  # a number is not taken as seconds since 1970
    assert sorted(m.run_id for m in store.measurements()) == ["t1", "t4"]


def test_values_the_store_cannot_hold_are_rejected_by_line_and_field_on_both_backends(
    tmp_path: Path, store: MeasurementStore, catalog: Catalog
) -> None:
    good = [f"g{i},blastn,cpu-small,node-{i},1.5,0,{2**25}" for i in range(23)]
    bad = [
        f"b1,blastn,cpu-small,{'m' * 201},1.5,0,",
        "b2,blastn,cpu-small,node,1.5,2147483648,",
        "b3,blastn,cpu-small,node,1.5,-2147483649,",
        f"b4,blastn,cpu-small,node,1.5,0,{2**63}",
    ]
    rows = [*good[:10], *bad, *good[10:]]
    path = write(
        tmp_path / "limits.csv",
        "run_id,algorithm,platform,machine,wall_seconds,exit_status,max_rss_kb\n" + "\n".join(rows) + "\n",
    )
    report = ingest_file(path, store, catalog)
    assert [(r.line, r.field) for r in report.rejected] == [
        (12, "machine"),
        (13, "exit_status"),
        (14, "exit_status"),
        (15, "max_rss_kb"),
    ]
    assert "over the store's limit of 200" in report.rejected[0].message
    assert "32-bit" in report.rejected[1].message
    assert "above the memory of a cpu-small machine" in report.rejected[3].message  # before the store's 64 bits
    assert (report.stored, store.count()) == (23, 23)


@pytest.mark.parametrize(
    ("column", "values", "field"),
    [
        ("wall_seconds", [False, True], "wall_seconds"),
        ("exit_status", [False, True], "exit_status"),
        ("max_rss_kb", [False, True], "max_rss_kb"),
        ("recorded_at", [1767225600, 0], "recorded_at"),
        ("feature.query.residues", [False, True], "feature.query.residues"),
    ],
)
def test_booleans_are_not_numbers_and_numbers_are_not_times(
    tmp_path: Path, store: MeasurementStore, catalog: Catalog, column: str, values: list[object], field: str
) -> None:
    path = tmp_path / "typed.parquet"
    frame = pd.DataFrame({"run_id": ["a", "b"], "algorithm": "blastn", "platform": "cpu-small", "wall_seconds": 2.0})
    frame[column] = values
    frame.to_parquet(path)
    report = ingest_file(path, store, catalog)
    assert {(r.line, r.field) for r in report.rejected} >= {(3, field)}
    assert store.count() == 2 - len(report.rejected)


def test_rows_naming_inputs_without_features_get_theirs_or_are_rejected(
    tmp_path: Path, store: MeasurementStore, catalog: Catalog
) -> None:
    fasta = write(tmp_path / "q.fa", ">q1\nACGTACGTAC\n>q2\nACG\n")
    absent, long_name = tmp_path / "absent.fa", tmp_path / ("x" * 300 + ".fa")
    path = write(
        tmp_path / "inputs.csv",
        f"""
run_id,algorithm,platform,wall_seconds,param.query,feature.query.residues
read,blastn,cpu-small,1.0,{fasta},
missing,blastn,cpu-small,1.0,{absent},
too-long,blastn,cpu-small,1.0,{long_name},
given,blastn,cpu-small,1.0,{absent},13
""",
    )
    report = ingest_file(path, store, catalog)
    assert [(r.line, r.field) for r in report.rejected] == [(3, "param.query"), (4, "param.query")]
    assert "no such file" in report.rejected[0].message and "give the run's features" in report.rejected[0].message
    assert "File name too long" in report.rejected[1].message
    stored = {m.run_id: m.features for m in store.measurements()}
    assert stored["given"] == {"query.residues": 13.0}  # features given: the input is not read
    assert (stored["read"]["query.sequences"], stored["read"]["query.residues"], stored["read"]["evalue"]) == (
        2,
        13,
        10,
    )


def test_rows_are_stored_chunk_by_chunk_before_the_file_ends(
    tmp_path: Path, store: MeasurementStore, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file is a pipe whose writer holds back the last rows until the first chunk is in the store."""
    monkeypatch.setattr(ingest, "CHUNK_ROWS", 10, raising=False)
    fifo = tmp_path / "runs.csv"
    os.mkfifo(fifo)
    rows = [f"s{i},blastn,cpu-small,{1 + i % 7}" if i != 3 else "bad,blastn,cpu-small,-1" for i in range(30)]
    stored_early: list[int] = []

    def writer() -> None:
        with fifo.open("w") as fh:
            fh.write("run_id,algorithm,platform,wall_seconds\n" + "\n".join(rows[:25]) + "\n")
            fh.flush()
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and not stored_early:
                if (count := store.count()) > 0:
                    stored_early.append(count)
                time.sleep(0.05)
            fh.write("\n".join(rows[25:]) + "\ns0,blastn,cpu-small,1\n")  # s0 again: a duplicate of the first chunk

    thread = threading.Thread(target=writer)
    thread.start()
    report = ingest_file(fifo, store, catalog, rejects_dir=tmp_path / "rejects")
    thread.join(timeout=30)
    assert stored_early and stored_early[0] < 29, "nothing was stored before the whole file was read"
    assert (report.rows, report.stored, report.duplicates, [(r.line, r.field) for r in report.rejected]) == (
        31,
        29,
        1,
        [(5, "wall_seconds")],
    )
    assert store.count() == 29
    assert [row["run_id"] for row in read_rejects(tmp_path / "rejects" / "runs.rejects.csv")] == ["bad"]


def test_features_the_algorithm_does_not_have_reject_their_row(
    tmp_path: Path, store: MeasurementStore, catalog: Catalog
) -> None:
    """Issue 30, item 7: ingest refuses what the API refuses; a stored made-up name would widen every training table."""
    path = write(
        tmp_path / "names.csv",
        """
run_id,algorithm,platform,wall_seconds,feature.query.residues,features
n1,blastn,cpu-small,1,150,
n2,blastn,cpu-small,1,150,"{""junk"": 1}"
""",
    )
    report = ingest_file(path, store, catalog)
    assert [(r.line, r.field) for r in report.rejected] == [(3, "features")]
    assert report.rejected[0].message.startswith("unknown feature(s) junk; known: evalue, query.bytes")
    assert [m.run_id for m in store.measurements()] == ["n1"]


def test_a_peak_memory_above_the_platforms_is_refused_at_every_door(
    tmp_path: Path, store: MeasurementStore, catalog: Catalog
) -> None:
    """Issue 42: a peak above the platform's memory (cpu-small: 32 GB) cannot have happened: a CSV row, an observation
    (validate_record, as POST /v1/observations) and a sacct job are each refused naming max_rss_kb; the node's whole
    memory is taken."""
    whole = 32 * 1024**2  # KiB
    path = write(
        tmp_path / "runs.csv",
        f"""
run_id,algorithm,platform,wall_seconds,max_rss_kb,feature.input.residues
ok,mafft,cpu-small,3,{whole},10
poisoned,mafft,cpu-small,3,{10**18},10
""",
    )
    report = ingest_file(path, store, catalog)
    assert report.stored == 1 and [(r.line, r.field) for r in report.rejected] == [(3, "max_rss_kb")]
    assert "above the memory of a cpu-small machine (32 GB)" in report.rejected[0].message
    observation = {"algorithm": "mafft", "platform": "cpu-small", "wall_seconds": 3, "max_rss_kb": whole + 1}
    with pytest.raises(RowError) as refused:
        validate_record({**observation, "features": {"input.residues": 10}}, catalog)
    assert refused.value.field == "max_rss_kb"
    sacct = tmp_path / "sacct.txt"
    sacct.write_text(
        "JobID|JobName|State|Elapsed|Timelimit|ReqCPUS|ReqMem|Partition|Comment|MaxRSS\n"
        "1|x|COMPLETED|00:00:03|5|1|1000M|debug|predictor: algorithm=mafft platform=cpu-small|\n"
        "1.batch|batch|COMPLETED|00:00:03||||||1000000G\n"
    )
    slurm = ingest_slurm(sacct, store, catalog, Rules(), file_format="sacct", cluster="c")
    assert [(r.line, r.field) for r in slurm.rejected] == [(2, "max_rss_kb")]
