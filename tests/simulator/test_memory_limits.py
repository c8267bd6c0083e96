"""Memory limits learned online from a log (simulator/memory_limits.py): only ended jobs inform a limit, the sources'
arithmetic, and the waste and over-limit score, on hand-made jobs and a tiny SWF file."""

from __future__ import annotations

from pathlib import Path

import pytest

from features.swf import read_swf
from simulator import memory_limits as ml

MB = 2**20


def job(
    id: int, submit: float, end: float, peak_mb: float, user: int = 1, procs: int = 1, run: float = 3600.0
) -> ml.MemoryJob:
    return ml.MemoryJob(id, user, procs, submit, end, run, 7200.0, peak_mb * MB)


FALLBACK = ml.NodeShare(1024 * MB, 2, whole=True)  # 1 GiB nodes of 2 CPUs: a node's memory over the CPUs a job fills


def test_a_limit_is_set_only_from_jobs_that_had_ended_at_its_submission() -> None:
    jobs = [job(1, 0, 100, 200), job(2, 50, 500, 300), job(3, 200, 900, 100), job(4, 600, 700, 100)]
    limits = ml.replay(jobs, ml.LastRuns(k=3, scope="user"), FALLBACK)
    # job 2 is submitted before job 1 ends: the fallback (a whole node for one CPU); job 3 sees job 1 only; job 4 both
    assert [round(v / MB) for v in limits] == [1024, 1024, 200, 300]


def test_last_runs_takes_the_quantile_of_the_class_s_window_plus_the_offset() -> None:
    jobs = [job(1, 0, 1, 100), job(2, 2, 3, 400), job(3, 4, 5, 200), job(4, 6, 7, 50, procs=2), job(5, 8, 9, 50)]
    assert [round(v / MB) for v in ml.replay(jobs, ml.LastRuns(k=2, offset=0.1, scope="class"), FALLBACK)] == [
        1024,
        110,
        440,
        512,
        440,
    ]
    assert [round(v / MB) for v in ml.replay(jobs, ml.LastRuns(k=10, scope="user", quantile=0.5), FALLBACK)][-1] == 150


def test_node_share_gives_a_cpu_s_share_or_whole_nodes() -> None:
    three = job(1, 0, 1, 100, procs=3)
    assert ml.NodeShare(1024 * MB, 2).limit(three) * 3 == 1536 * MB
    assert FALLBACK.limit(three) * 3 == 1536 * MB  # packed 2 + 1: a node's memory over its 2 CPUs
    assert FALLBACK.limit(job(2, 0, 1, 100)) == 1024 * MB  # one CPU: a whole node


def test_score_counts_unused_memory_hours_and_jobs_over_their_limit() -> None:
    jobs = [job(1, 0, 1, 512, procs=2, run=7200.0), job(2, 0, 1, 600, run=3600.0)]
    result = ml.score(jobs, [1024 * MB, 512 * MB])
    assert result.waste_gbh == pytest.approx(0.5 * 2 * 2)  # 0.5 GiB unused on each of 2 CPUs for 2 h; job 2 is over
    assert result.over == 1 and result.over_share == 0.5
    assert result.requested_gbh == pytest.approx(1.0 * 2 * 2 + 0.5)


def test_the_online_learner_and_sizey_answer_once_their_class_has_history() -> None:
    jobs = [job(i, 10.0 * i, 10.0 * i + 5, 100 + 10 * (i % 3), procs=1 + i % 2) for i in range(12)]
    online = ml.replay(jobs, ml.OnlineQuantile(0.9), FALLBACK)
    assert online[0] == 1024 * MB and all(0 < v < 1024 * MB for v in online[1:])
    sizey = ml.SizeyStyle(ml.SizeyModels("user"), alpha=0.5, offset="max-under")
    limits = ml.replay(jobs, sizey, FALLBACK)
    assert limits[:2] == [FALLBACK.limit(j) for j in jobs[:2]]  # fewer than two ended jobs: nothing to fit
    assert all(50 * MB < v < 400 * MB for v in limits[2:])
    with pytest.raises(ValueError, match="offset must be one of"):
        ml.SizeyStyle(ml.SizeyModels(), offset="mean")  # type: ignore[arg-type]


def test_memory_jobs_read_per_processor_kb_and_skip_unknown_memory(tmp_path: Path) -> None:
    log = tmp_path / "toy.swf"
    log.write_text(
        "1 0 10 100 4 -1 2048 4 200 4096 1 7 1 -1 -1 1 -1 -1\n2 5 10 100 2 -1 -1 2 200 -1 1 7 1 -1 -1 1 -1 -1\n"
    )
    (only,) = ml.memory_jobs(read_swf(log))
    assert (only.id, only.user, only.procs, only.end, only.peak, only.requested, only.peak_total) == (
        1,
        7,
        4,
        110.0,
        2048 * 1024,
        4096 * 1024,
        4 * 2048 * 1024,
    )
