"""The runtime oracle: fast paths equal to ``predict``, one model call per champion per batch, atomic swaps, intervals."""

from __future__ import annotations

import json
import math
import threading

import numpy as np
import pandas as pd
import pytest

from data.datagen import write_family_fasta
from features import FeatureError
from models import make_model
from models.baselines import HistoryBaseline
from models.ensemble import AveragedRegressor
from predictor import thirdparty
from predictor.catalog import Catalog
from predictor.domain import MAX_WALL_SECONDS, AnsweredEstimate
from predictor.envelope import TrainingEnvelope
from predictor.fastpath import compile_rows, probe_rows, single_threaded
from predictor.oracle import RuntimeOracle, serve_model
from predictor.registry import Champion

NAMES = ["a", "b", "c"]
QUANTILES = {0.05: -0.2, 0.5: 0.0, 0.95: 0.4}


class Counting:
    """A model that is not scikit-learn (so served on the generic path), counting calls and rows."""

    def __init__(self, scale: float = 1.0, gate: threading.Event | None = None) -> None:
        self.scale, self.gate, self.calls, self.rows = scale, gate, 0, 0

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        if self.gate is not None:
            self.gate.wait(timeout=30)
        self.calls += 1
        self.rows += len(X)
        return self.scale * X.sum(axis=1).to_numpy()


def champion(model, platform: str = "cpu-small", version: str = "1", quantiles: dict | None = None) -> Champion:
    tags = {"residual_log_quantiles": json.dumps(quantiles)} if quantiles else {}
    return Champion("blastn", platform, f"runtime-blastn-{platform}", version, "sklearn", NAMES, model, tags)


def oracle(catalog: Catalog, *champions: Champion, profile=None) -> RuntimeOracle:
    return RuntimeOracle(
        catalog, {(c.algorithm, c.platform): c for c in champions}, profile, coverage=0.9, limit_quantile=0.95
    )


def features(i: float) -> dict[str, float]:
    return {"a": 1.0 + i, "b": 2.0 * i, "c": 3.0}


# The zoo members served on the fast path; the linear ones and LightGBM's take it through predictor.thirdparty.
FAST_MEMBERS = ["mean", "linear", "linear_log", "lad", "lad_log", "lightgbm", "lightgbm_log"]


def fitted(name: str, **params) -> tuple[object, pd.DataFrame]:
    """Zoo member ``name`` fitted on 60 seeded rows of a power law, and those rows."""
    rng = np.random.default_rng(1)
    X = pd.DataFrame(10 ** rng.uniform(0, 4, size=(60, 3)), columns=NAMES)
    y = 0.01 * X["a"] * X["b"] ** 0.5 + rng.uniform(0, 0.1, 60)
    return make_model(name, seed=0, **params).fit(X, y), X


@pytest.mark.parametrize("name", FAST_MEMBERS)
def test_fast_path_gives_the_numbers_of_predict(name):
    model, X = fitted(name)
    rows, path = compile_rows(model, NAMES, probe_rows(3, X.head(3).to_numpy()))
    fresh = 10 ** np.random.default_rng(2).uniform(-1, 5, size=(200, 3))
    assert path == "fast"
    np.testing.assert_allclose(rows(fresh), model.predict(pd.DataFrame(fresh, columns=NAMES)), rtol=1e-9)
    np.testing.assert_allclose(rows(fresh[:1]), model.predict(pd.DataFrame(fresh[:1], columns=NAMES)), rtol=1e-9)


def test_the_history_rule_and_ensembles_take_the_fast_path_with_the_numbers_of_predict():
    """The rules and ensembles a guard often serves: column picks with NaN and zero as unknown, capped; weighted means."""
    _, X = fitted("linear")
    rows = X.to_numpy().copy()
    rows[::3, 0], rows[1::4, 1], rows[::5, 2] = np.nan, 0.0, np.nan
    y = X["a"].to_numpy()
    rule = HistoryBaseline(columns=("a", "b"), cap_column="c").fit(pd.DataFrame(rows, columns=NAMES), y)
    linear = make_model("linear", seed=0).fit(X, y)
    ensemble = AveragedRegressor.from_fitted([("rule", rule), ("linear", linear)], [2.0, 1.0], X)
    # the linear member refuses NaN, the rule reads it as unknown: the ensemble is checked on zeros for NaN
    for model, matrix in ((rule, rows), (ensemble, np.nan_to_num(rows))):
        compiled, path = compile_rows(model, NAMES, probe_rows(3, matrix[:3]))
        assert path == "fast"
        np.testing.assert_allclose(compiled(matrix), model.predict(pd.DataFrame(matrix, columns=NAMES)), rtol=1e-12)
    unknown = AveragedRegressor.from_fitted([("rule", rule), ("other", Counting())], [1.0, 1.0], X)
    assert compile_rows(unknown, NAMES, probe_rows(3))[1] == "generic"


@pytest.mark.parametrize(
    ("name", "private"),
    [("linear", "linear_model_base"), ("lad_log", "linear_model_base"), ("lightgbm_log", "booster_rows")],
)
def test_without_the_private_api_the_member_leaves_the_fast_path(name, private, monkeypatch):
    """What the test above catches: losing a private API of predictor.thirdparty sends its members to the generic path."""
    model, X = fitted(name)
    monkeypatch.setattr(thirdparty, private, lambda *args, **kwargs: None)
    rows, path = compile_rows(model, NAMES, probe_rows(3))
    assert path == "generic"
    np.testing.assert_allclose(rows(X.to_numpy()), model.predict(X), rtol=1e-9)


@pytest.mark.parametrize(("name", "path"), [("lightgbm", "fast"), ("lightgbm_log_smeared", "generic")])
def test_compiling_leaves_the_model_as_it_was(name, path):
    model, X = fitted(name)
    model.set_params(**{k: 4 for k in model.get_params(deep=True) if k.split("__")[-1] == "n_jobs"})
    before = model.get_params(deep=True)
    rows, found = compile_rows(model, NAMES, probe_rows(3))
    assert found == path and model.get_params(deep=True) == before
    np.testing.assert_allclose(rows(X.to_numpy()), model.predict(X), rtol=1e-9)


def test_unknown_models_take_the_generic_path_and_lightgbm_runs_on_one_thread():
    rows, path = compile_rows(Counting(), NAMES, probe_rows(3))
    assert path == "generic" and rows(np.ones((2, 3))).tolist() == [3.0, 3.0]
    model = make_model("lightgbm_log", seed=0).set_params(regressor__n_jobs=4)
    threaded = single_threaded(model)
    assert threaded.get_params()["regressor__n_jobs"] == 1 and model.get_params()["regressor__n_jobs"] == 4
    assert single_threaded(threaded) is threaded  # nothing to change: no copy


def test_a_batch_makes_one_model_call_per_champion(catalog):
    cpu, gpu = Counting(), Counting(2.0)
    o = oracle(catalog, champion(cpu), champion(gpu, "gpu-a100"))
    jobs = [o.prepare("blastn", {}, None, features(i)) for i in range(50)]
    answers = o.estimate_jobs(jobs)
    assert (cpu.calls, cpu.rows, gpu.calls, gpu.rows) == (1, 50, 1, 50)
    assert [a["cpu-small"].seconds for a in answers] == [sum(features(i).values()) for i in range(50)]
    assert [a["gpu-a100"].seconds for a in answers] == [2 * sum(features(i).values()) for i in range(50)]


def test_matrix_equals_jobs_and_parameters_become_features(catalog):
    o = oracle(catalog, champion(Counting()))
    rows = [[features(i)[n] for n in NAMES] for i in range(5)]
    columns = o.estimate_matrix("blastn", NAMES, rows, ["cpu-small"], {"threads": 4})
    jobs = o.estimate_jobs([o.prepare("blastn", {"threads": 4}, ["cpu-small"], features(i)) for i in range(5)])
    assert columns[0].seconds == [j["cpu-small"].seconds for j in jobs]
    assert o.prepare("blastn", {"threads": 4}, None, features(0)).features["threads"] == 4.0


def test_intervals_and_limits_come_from_the_residual_quantiles(catalog):
    o = oracle(catalog, champion(Counting(), quantiles=QUANTILES), champion(Counting(), "gpu-a100"))
    e = o.estimate("blastn", {}, None, features(2))
    cpu, gpu = e["cpu-small"], e["gpu-a100"]
    assert cpu.lower == pytest.approx(cpu.seconds * math.exp(-0.2)) and cpu.upper == pytest.approx(
        cpu.seconds * math.exp(0.4)
    )
    assert cpu.limit == pytest.approx(cpu.seconds * math.exp(0.4)) and (cpu.coverage, cpu.limit_quantile) == (0.9, 0.95)
    assert (gpu.lower, gpu.upper, gpu.limit, gpu.coverage) == (None, None, None, None)
    narrow = o.estimate_jobs([o.prepare("blastn", {}, ["cpu-small"], features(2))], coverage=0.5, limit_quantile=0.5)[0]
    # a limit is never below the interval's upper end: the median limit is lifted to it
    assert narrow["cpu-small"].limit == pytest.approx(narrow["cpu-small"].upper) and narrow["cpu-small"].coverage == 0.5


def test_a_swap_leaves_calls_in_flight_on_the_old_champions(catalog):
    gate = threading.Event()
    o = oracle(catalog, champion(Counting(gate=gate)))
    gate.set()
    o.estimate("blastn", {}, ["cpu-small"], features(1))  # warm: compiled and probed
    gate.clear()
    job = o.prepare("blastn", {}, ["cpu-small"], features(1))
    answers: list = []
    worker = threading.Thread(target=lambda: answers.append(o.estimate_jobs([job])))
    worker.start()
    o.swap({("blastn", "cpu-small"): serve_model(champion(Counting(10.0), version="2"))})
    gate.set()
    worker.join()
    assert answers[0][0]["cpu-small"].model_version == "1"
    assert o.estimate_jobs([job])[0]["cpu-small"].model_version == "2"


def test_fallbacks_say_why(catalog):
    o = oracle(catalog, champion(Counting()), profile={("blastn", "gpu-a100"): (12.5, 4)})
    e = o.estimate("blastn", {}, None, {"a": 1.0})
    assert e["cpu-small"].seconds is None and "features missing for the model: b, c" in e["cpu-small"].reason
    assert (
        e["gpu-a100"].fallback and e["gpu-a100"].seconds == 12.5 and "median of 4 measured runs" in e["gpu-a100"].reason
    )


def test_non_finite_answers_become_fallbacks(catalog):
    o = oracle(catalog, champion(Counting(float("inf"))))
    e = o.estimate("blastn", {}, ["cpu-small"], features(1))["cpu-small"]
    assert e.seconds is None and "not a finite number" in e.reason


def test_parameter_checks_hold_for_remembered_parameter_sets(catalog):
    o = oracle(catalog, champion(Counting()))
    assert o.prepare("blastn", {"threads": 1}, None, features(0)).features["threads"] == 1.0
    with pytest.raises(FeatureError, match="threads"):
        o.prepare("blastn", {"threads": True}, None, features(0))
    with pytest.raises(FeatureError, match="unknown parameter"):
        o.prepare("blastn", {"colour": "red"}, None, features(0))


def test_feature_extraction_honours_the_time_budget(catalog, tmp_path):
    path = write_family_fasta(tmp_path / "q.fa", n_sequences=50, length=200, mutation_rate=0.1, alphabet="dna", seed=1)
    o = oracle(catalog)
    assert o.prepare("blastn", {"query": str(path)}, None, budget_s=60).features["query.sequences"] == 50
    with pytest.raises(FeatureError, match="time budget"):
        o.prepare("blastn", {"query": str(path)}, None, budget_s=1e-9)


MIB = 1024**2


def memory_champion(
    model, platform: str = "cpu-small", version: str = "1", quantiles: dict | None = None, names=None, envelope=None
) -> Champion:
    """A peak-memory champion (bytes) as training registers it under its own name."""
    tags = {"residual_log_quantiles": json.dumps(quantiles)} if quantiles else {}
    return Champion(
        "blastn", platform, f"memory-blastn-{platform}", version, "sklearn", names or NAMES, model, tags, envelope
    )


def memory_oracle(
    catalog: Catalog, time: list[Champion], memory: list[Champion], profile=None, memory_limit_quantile=None
) -> RuntimeOracle:
    return RuntimeOracle(
        catalog,
        {(c.algorithm, c.platform): c for c in time},
        profile,
        coverage=0.9,
        limit_quantile=0.95,
        memory_limit_quantile=memory_limit_quantile,
        memory_champions={(c.algorithm, c.platform): c for c in memory},
    )


def test_a_memory_champion_fills_the_memory_fields_and_its_absence_leaves_them_null(catalog):
    o = memory_oracle(
        catalog,
        [champion(Counting(), quantiles=QUANTILES), champion(Counting(), "gpu-a100", quantiles=QUANTILES)],
        [memory_champion(Counting(MIB), quantiles={0.05: -0.1, 0.5: 0.0, 0.95: 0.2})],
    )
    e = o.estimate("blastn", {}, None, features(2))
    cpu, gpu = e["cpu-small"], e["gpu-a100"]
    assert cpu.memory == pytest.approx(sum(features(2).values()) * MIB)
    assert cpu.memory_limit == pytest.approx(cpu.memory * math.exp(0.2)) and cpu.memory <= cpu.memory_limit
    assert cpu.memory_lower == pytest.approx(cpu.memory * math.exp(-0.1)) and cpu.memory_upper == pytest.approx(
        cpu.memory_limit
    )
    assert (cpu.memory_model_name, cpu.memory_model_version, cpu.memory_limit_quantile) == (
        "memory-blastn-cpu-small",
        "1",
        0.95,
    )
    assert cpu.limit == pytest.approx(cpu.seconds * math.exp(0.4)), "the time answer is unchanged"
    assert (
        gpu.seconds is not None
        and (gpu.memory, gpu.memory_limit, gpu.memory_model_name, gpu.memory_limit_quantile) == (None,) * 4
    )
    median = o.estimate_jobs([o.prepare("blastn", {}, ["cpu-small"], features(2))], memory_limit_quantile=0.5)[0][
        "cpu-small"
    ]
    assert median.memory_limit == pytest.approx(median.memory_upper), "a limit is never below the interval's upper end"


def test_the_memory_limit_has_its_own_quantile_overridable_per_call(catalog):
    """Issue 31: the memory limit at ``memory_limit_quantile`` (0.99 here), the time limit at ``limit_quantile`` (0.95);
    a call may move either alone; matrices answer as jobs do."""
    memory_quantiles = {0.05: -0.1, 0.5: 0.0, 0.95: 0.2, 0.99: 0.5}
    o = memory_oracle(
        catalog,
        [champion(Counting(), quantiles=QUANTILES)],
        [memory_champion(Counting(MIB), quantiles=memory_quantiles)],
        memory_limit_quantile=0.99,
    )
    job = o.prepare("blastn", {}, ["cpu-small"], features(2))
    served = o.estimate_jobs([job])[0]["cpu-small"]
    assert served.memory_limit == pytest.approx(served.memory * math.exp(0.5)) and served.memory_limit_quantile == 0.99
    assert served.limit == pytest.approx(served.seconds * math.exp(0.4)) and served.limit_quantile == 0.95
    at_95 = o.estimate_jobs([job], memory_limit_quantile=0.95)[0]["cpu-small"]
    assert at_95.memory_limit == pytest.approx(at_95.memory * math.exp(0.2)) and at_95.memory_limit_quantile == 0.95
    assert served.memory_limit >= at_95.memory_limit and at_95.limit == served.limit, (
        "the same job: 0.99 is at least 0.95"
    )
    time_moved = o.estimate_jobs([job], limit_quantile=0.5)[0]["cpu-small"]
    assert time_moved.memory_limit == served.memory_limit and time_moved.limit_quantile == 0.5, (
        "the time quantile alone"
    )
    row = [[features(2)[n] for n in NAMES]]
    (column,) = o.estimate_matrix("blastn", NAMES, row, ["cpu-small"], memory_limit_quantile=0.95)
    assert (
        column.memory_limit == [at_95.memory_limit]
        and column.memory_limit_quantile == 0.95
        and column.limit == [served.limit]
    )
    same = memory_oracle(catalog, [], [memory_champion(Counting(MIB), quantiles=memory_quantiles)]).estimate_jobs(
        [job]
    )[0]["cpu-small"]
    assert same.memory_limit_quantile == 0.95, "without its own quantile the memory limit takes the walltime limit's"


def test_memory_is_served_beside_a_fallback_time_and_matrices_agree_with_jobs(catalog):
    o = memory_oracle(catalog, [], [memory_champion(Counting(MIB))], profile={("blastn", "cpu-small"): (12.5, 4)})
    alone = o.estimate("blastn", {}, ["cpu-small"], features(1))["cpu-small"]
    assert alone.fallback and alone.seconds == 12.5 and alone.memory == pytest.approx(sum(features(1).values()) * MIB)
    assert alone.memory_limit is None, "no residual quantiles: no memory limit"
    rows = [[features(i)[n] for n in NAMES] for i in range(4)]
    (column,) = o.estimate_matrix("blastn", NAMES, rows, ["cpu-small"])
    jobs = o.estimate_jobs([o.prepare("blastn", {}, ["cpu-small"], features(i)) for i in range(4)])
    assert (
        column.memory == [j["cpu-small"].memory for j in jobs] and column.memory_model_name == "memory-blastn-cpu-small"
    )
    missing = o.estimate("blastn", {}, ["cpu-small"], {"a": 1.0})["cpu-small"]
    assert missing.memory is None, "a memory champion whose features are missing answers nothing"


def test_a_job_outside_the_memory_champions_envelope_extrapolates(catalog):
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.uniform(10, 100, size=(60, 3)), columns=NAMES)
    y = 1e6 * X["a"].to_numpy()
    envelope = TrainingEnvelope.fit(X, y)
    o = memory_oracle(catalog, [champion(Counting())], [memory_champion(Counting(MIB), envelope=envelope)])
    inside, outside = {"a": 50.0, "b": 50.0, "c": 50.0}, {"a": 1e6, "b": 50.0, "c": 50.0}
    for job, expected in ((inside, False), (outside, True)):
        e = o.estimate("blastn", {}, ["cpu-small"], job)["cpu-small"]
        assert e.extrapolating is expected and ("a" in e.out_of_domain) is expected, e
    column = o.estimate_matrix(
        "blastn", NAMES, [[inside[n] for n in NAMES], [outside[n] for n in NAMES]], ["cpu-small"]
    )[0]
    assert column.extrapolating == [False, True] and column.out_of_domain[1] == ["a"]


def test_a_swap_replaces_time_and_memory_champions_together(catalog):
    o = memory_oracle(catalog, [champion(Counting())], [])
    assert o.estimate("blastn", {}, ["cpu-small"], features(1))["cpu-small"].memory is None
    o.swap(o.models, memory={("blastn", "cpu-small"): serve_model(memory_champion(Counting(MIB), version="2"))})
    assert o.estimate("blastn", {}, ["cpu-small"], features(1))["cpu-small"].memory_model_version == "2"
    o.swap(o.models)  # time alone: the memory champions stay
    assert o.estimate("blastn", {}, ["cpu-small"], features(1))["cpu-small"].memory_model_version == "2"


@pytest.mark.parametrize("value", [1e15, 1e300])
def test_absurd_features_get_answers_capped_at_what_a_platform_can_run_and_say_so(catalog, value):
    """Issues 41 and 42: every feature at 1e15 or 1e300 is answered at most a year of run time and the platform's memory
    (cpu-small: 32 GB), as jobs and as matrices, each answer saying it was capped; Slurm strings stay readable."""
    o = memory_oracle(
        catalog,
        [champion(Counting(), quantiles=QUANTILES)],
        [memory_champion(Counting(MIB), quantiles={0.05: -0.1, 0.5: 0.0, 0.95: 0.2})],
    )
    absurd = dict.fromkeys(NAMES, value)
    served = o.estimate("blastn", {}, ["cpu-small"], absurd)["cpu-small"]
    year, memory = float(MAX_WALL_SECONDS), 32 * 1024**3
    assert (served.seconds, served.lower, served.upper, served.limit) == (year,) * 4
    assert (served.memory, served.memory_lower, served.memory_upper, served.memory_limit) == (memory,) * 4
    assert served.reason is not None and "capped at a year" in served.reason and "memory capped" in served.reason
    answered = AnsweredEstimate.model_validate(served.model_dump())
    assert answered.limit_walltime == "366-00:00:00" and answered.memory_limit_slurm == "32768M"
    (column,) = o.estimate_matrix("blastn", NAMES, [[value] * 3, [1.0] * 3], ["cpu-small"])
    assert column.limit is not None and column.limit[0] == year and column.limit[1] < year
    assert column.memory_limit is not None and column.memory_limit[0] == memory
    assert column.reason is not None and "1 row(s) capped at a year" in column.reason
    plain = o.estimate("blastn", {}, ["cpu-small"], features(2))["cpu-small"]
    assert plain.reason is None and plain.limit is not None and plain.limit < year


def test_a_job_class_is_never_served_past_its_request_and_its_limit_is_the_request(catalog) -> None:
    """Issue 39: a job class's answers stop at the job's own request, and its limit is the request (the prediction
    plans, the request kills): limits tightened below it were outlived more often than the requests on wagap-2013."""
    names = ["request.time", "b"]
    tags = {"residual_log_quantiles": json.dumps(QUANTILES)}

    class Doubling:
        def predict(self, X: pd.DataFrame) -> np.ndarray:
            return 2.0 * X["request.time"].to_numpy() * X["b"].to_numpy()

    served = oracle(
        catalog, Champion("blastn", "cpu-small", "runtime-blastn-cpu-small", "1", "sklearn", names, Doubling(), tags)
    )
    short, long_ = (
        served.estimate("blastn", features={"request.time": 100.0, "b": b}, platforms=["cpu-small"])["cpu-small"]
        for b in (0.1, 1.0)
    )
    assert (short.seconds, long_.seconds) == (pytest.approx(20.0), 100.0)  # 200 s asked for a job killed at 100 s
    assert long_.limit == long_.upper == 100.0
    assert short.limit == 100.0 and short.upper is not None and short.upper < 100.0
