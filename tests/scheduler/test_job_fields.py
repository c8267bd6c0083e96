"""A job's fields are defined once, on ``scheduler.state.Job``: the table, the migrations, the workload's job spec
and the API's schemas are checked against it here, and a job with every field set survives the store."""

from __future__ import annotations

from dataclasses import fields

from sqlalchemy import inspect

from predictor.store import MeasurementStore
from predictor.store.scheduler_tables import sched_jobs
from scheduler.state import ASKED_FIELDS, STORED_FIELDS, Job, JobStatus, Machine, Run, State
from scheduler.store import SchedulerStore
from serving.schemas.scheduler import JobIn, JobOut, RunOut
from simulator.workload import JobSpec

JOB_FIELDS = {f.name: f for f in fields(Job)}
EVERY_FIELD_SET = Job(
    id="j1",
    algorithm="blastn",
    submit=5.0,
    params={"query": "q.fa", "evalue": 0.1},
    features={"residues": 300.0},
    deadline=900.0,
    priority=3,
    depends_on=("j0",),
    stream_from="j0",
    size=2,
    platforms=("type2", "type6"),
    checkpoint=frozenset({"type6", "type2"}),
    data="nt",
    inputs=(("q.fa", 300),),
    memory=2**30,
    seq=7,
    estimates={"type2": 12.5, "type6": None},
    planned_memory={"type6": 3 * 2**31},
    status=JobStatus.DONE,
    runs={"m1": Run("m1", 6.0, 1, 12.5)},
    progress=0.5,
    attempts=2,
    planned_machine="m2",
    planned_start=20.0,
    started=6.0,
    ended=19.0,
    message="ok",
)


def test_the_sample_job_sets_every_field() -> None:
    # A new field must be given a value here, so the round trip below covers it.
    defaults = Job(id="", algorithm="", submit=0.0)
    assert [name for name in JOB_FIELDS if getattr(EVERY_FIELD_SET, name) == getattr(defaults, name)] == []


def test_the_table_has_a_column_for_every_stored_field_and_no_other() -> None:
    assert STORED_FIELDS and set(STORED_FIELDS) <= set(JOB_FIELDS)
    assert {c.name for c in sched_jobs.columns} == set(STORED_FIELDS)


def test_a_migrated_store_has_the_same_columns(store: MeasurementStore) -> None:
    assert {c["name"] for c in inspect(store.engine).get_columns("sched_jobs")} == set(STORED_FIELDS)


def test_a_job_with_every_field_set_comes_back_from_the_store(store: MeasurementStore) -> None:
    state = State()
    state.add_machine(Machine("m1", "type2", slots=2))  # where its run is
    state.add_job(EVERY_FIELD_SET)
    SchedulerStore(store.engine).save(state, [], now=0.0)
    loaded = SchedulerStore(store.engine).load().jobs["j1"]
    assert {name: getattr(loaded, name) for name in STORED_FIELDS} == {
        name: getattr(EVERY_FIELD_SET, name) for name in STORED_FIELDS
    }


def test_a_workload_job_spec_gives_every_asked_field_with_the_job_s_type() -> None:
    spec_fields = {f.name: f.type for f in fields(JobSpec)}
    assert ASKED_FIELDS and {name: spec_fields.get(name) for name in ASKED_FIELDS} == {
        name: JOB_FIELDS[name].type for name in ASKED_FIELDS
    }
    spec = JobSpec(**{name: getattr(EVERY_FIELD_SET, name) for name in ASKED_FIELDS}, true_times={"type2": 10.0})
    assert {name: getattr(spec.job(), name) for name in ASKED_FIELDS} == {
        name: getattr(EVERY_FIELD_SET, name) for name in ASKED_FIELDS
    }


def test_the_api_schemas_name_job_fields() -> None:
    assert set(JobIn.model_fields) <= set(ASKED_FIELDS)
    assert set(JobOut.model_fields) <= set(JOB_FIELDS)
    assert set(RunOut.model_fields) <= {f.name for f in fields(Run)}
