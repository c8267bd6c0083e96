"""The training report's rows: which candidate is marked as the champion (issue 30, item 10)."""

from __future__ import annotations

from mlflow.entities import Param, Run, RunData, RunInfo, RunTag

from training.report import _row


def _child(run_id: str, model: str, role: str | None = None) -> Run:
    info = RunInfo(
        run_id=run_id,
        experiment_id="1",
        user_id="u",
        status="FINISHED",
        start_time=0,
        end_time=1,
        lifecycle_stage="active",
    )
    params = [Param("role", role)] if role else []
    return Run(info, RunData(tags=[RunTag("platform", "cpu1"), RunTag("model_kind", model)], params=params))


def test_one_row_is_the_champion_when_a_session_logs_a_member_twice() -> None:
    """An ensemble is logged as the session's challenger and, with the serving weights, as the incumbent: only the run
    that serves is marked, and the incumbent's row says what it is."""
    parent = {"champion.cpu1": "ensemble", "champion_run.cpu1": "b"}
    rows = [
        _row(_child("a", "ensemble"), parent),
        _row(_child("b", "ensemble", role="incumbent"), parent),
        _row(_child("c", "mlp"), parent),
    ]
    assert [r.champion for r in rows] == [False, True, False]
    assert [r.model for r in rows] == ["ensemble", "ensemble (incumbent)", "mlp"]


def test_a_session_without_the_run_tag_marks_the_champion_by_its_member() -> None:
    """Sessions tracked before the run tag existed keep their mark."""
    parent = {"champion.cpu1": "mlp"}
    assert [_row(_child(i, m), parent).champion for i, m in (("a", "svr_log"), ("b", "mlp"))] == [False, True]
