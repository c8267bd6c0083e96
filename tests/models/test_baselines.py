"""Baselines: the profile table per job type (seed 000) and job-history estimates (Tsafrir et al. 2007)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from models import make_model
from models.baselines import HistoryBaseline, JobTypeMean


def test_job_type_mean_groups_by_plain_parameters_by_default() -> None:
    X = pd.DataFrame({"input.sequences": [10.0, 20.0, 30.0, 40.0], "retree": [1.0, 1.0, 2.0, 2.0]})
    model = make_model("profile_mean").fit(X, [1.0, 3.0, 10.0, 20.0])
    assert model.group_indices_ == [1]
    new = pd.DataFrame({"input.sequences": [99.0, 99.0, 99.0], "retree": [1.0, 2.0, 3.0]})
    np.testing.assert_allclose(model.predict(new), [2.0, 15.0, 8.5])


def test_job_type_mean_takes_named_columns_and_without_any_is_the_mean() -> None:
    X = pd.DataFrame({"task=megablast": [1.0, 1.0, 0.0], "db": [0.0, 1.0, 1.0]})
    both = JobTypeMean(group_columns=["task=megablast", "db"]).fit(X, [1.0, 2.0, 6.0])
    np.testing.assert_allclose(both.predict(X), [1.0, 2.0, 6.0])
    unnamed = JobTypeMean().fit(X.to_numpy(), [1.0, 2.0, 6.0])
    np.testing.assert_allclose(unnamed.predict(X.to_numpy()), [3.0, 3.0, 3.0])
    with pytest.raises(ValueError, match="'nope' is not among the features"):
        JobTypeMean(group_columns=["nope"]).fit(X, [1.0, 2.0, 6.0])


def history() -> pd.DataFrame:
    """Four jobs: full history; one finished run; none (request only); nothing known at all."""
    return pd.DataFrame(
        {
            "history.last2_mean": [30.0, 0.0, np.nan, 0.0],
            "history.last1": [20.0, 50.0, 0.0, 0.0],
            "request.time": [25.0, 100.0, 60.0, 0.0],
        }
    )


def test_last_two_mean_falls_back_to_last_run_then_request_and_is_capped_by_it() -> None:
    model = make_model("last_two_mean").fit(history(), [1.0, 2.0, 3.0, 6.0])
    np.testing.assert_allclose(model.predict(history()), [25.0, 50.0, 60.0, 3.0])


def test_requested_time_is_the_users_estimate() -> None:
    model = make_model("requested_time").fit(history(), [1.0, 2.0, 3.0, 6.0])
    np.testing.assert_allclose(model.predict(history()), [25.0, 100.0, 60.0, 3.0])


def test_history_columns_must_exist() -> None:
    with pytest.raises(ValueError, match="'history.last2_mean' is not among the features"):
        HistoryBaseline().fit(pd.DataFrame({"request.time": [1.0, 2.0]}), [1.0, 2.0])
    with pytest.raises(ValueError, match="out of range"):
        HistoryBaseline(columns=(3,), cap_column=None).fit(np.ones((2, 2)), [1.0, 2.0])


def blast_like(seed: int, n_inputs: int) -> tuple[pd.DataFrame, np.ndarray]:
    """BLAST-like runs: random query and database sizes, each input run with both tasks and two word sizes.

    The run time is mostly the task's (megablast is fast); search_space is derived, query x database residues.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for query, db in zip(rng.integers(100, 5000, n_inputs), rng.integers(10**5, 10**7, n_inputs), strict=True):
        for megablast in (0.0, 1.0):
            for word_size in (11.0, 28.0):
                rows.append(
                    {
                        "query.residues": float(query),
                        "db.residues": float(db),
                        "search_space": float(query * db),
                        "task=megablast": megablast,
                        "word_size": word_size,
                    }
                )
    X = pd.DataFrame(rows)
    y = np.where(X["task=megablast"] == 1.0, 1.0, 10.0) + X["word_size"] / 100 + 1e-11 * X["search_space"]
    return X, y.to_numpy()


def test_profile_mean_keys_blast_jobs_by_their_parameters_not_the_derived_search_space() -> None:
    X, y = blast_like(seed=1, n_inputs=30)
    model = make_model("profile_mean").fit(X, y)
    assert [X.columns[i] for i in model.group_indices_] == ["task=megablast", "word_size"]
    unseen, truth = blast_like(seed=2, n_inputs=10)  # other inputs, the same parameter settings
    predicted = model.predict(unseen)
    mean = make_model("mean").fit(X, y).predict(unseen)
    assert not np.allclose(predicted, mean)
    assert np.abs(predicted - truth).mean() < 0.2 * np.abs(mean - truth).mean()


def test_a_parameter_each_input_was_run_with_once_stays_in_the_key() -> None:
    X = pd.DataFrame(
        {"input.sequences": [10.0, 20.0, 30.0, 40.0, 50.0, 60.0], "retree": [1.0, 2.0, 1.0, 2.0, 1.0, 2.0]}
    )
    assert make_model("profile_mean").fit(X, [1.0, 9.0, 1.0, 9.0, 1.0, 9.0]).group_indices_ == [1]
