"""The champion-challenger guard: nothing worse than the serving champion takes the alias, unless forced."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.dummy import DummyRegressor
from typer.testing import CliRunner

from cli.app import app
from predictor.domain import Measurement, Target
from predictor.registry import registered_name, registry_client
from predictor.store import MeasurementStore
from training.dataset import TrainingSet, load_training_sets
from training.guard import GuardSettings, Incumbent, Serve, Verdict, judge
from training.memory import MemoryChampions, MemoryTracker
from training.pipeline import train
from training.settings import TrainingSettings

GUARD = GuardSettings(n_resamples=500)


def _rows(n: int = 60, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """True seconds, a constant prior, one job per row, run ids."""
    rng = np.random.default_rng(seed)
    y = rng.uniform(1.0, 100.0, n)
    return y, np.full(n, y.mean()), np.arange(n), [f"r{i}" for i in range(n)]


def _incumbent(composition: dict[str, int], trained: list[str] | None, predict=None) -> Incumbent:
    return Incumbent("1", composition, None if trained is None else frozenset(trained), ["x"], predict)


def test_the_first_champion_is_promoted_and_force_overrides_the_guard() -> None:
    y, prior, jobs, ids = _rows()
    first = judge(
        y=y,
        priors=prior,
        jobs=jobs,
        run_ids=ids,
        X=None,
        challenger={"mean": 1},
        challenger_predictions=prior,
        incumbent=None,
        incumbent_predictions=None,
        settings=GUARD,
    )
    assert (first.verdict, first.serve, first.register_challenger) == (Verdict.PROMOTED, Serve.CHALLENGER, True)
    forced = judge(
        y=y,
        priors=prior,
        jobs=jobs,
        run_ids=ids,
        X=None,
        challenger={"mean": 1},
        challenger_predictions=prior,
        incumbent=_incumbent({"linear_log": 1}, ids),
        incumbent_predictions=y,
        settings=GUARD,
        force=True,
    )
    assert forced.verdict is Verdict.FORCED and forced.serve is Serve.CHALLENGER and "forced" in forced.reason


def test_a_challenger_takes_over_only_with_a_lead_the_bootstrap_trusts() -> None:
    y, prior, jobs, ids = _rows()
    rng = np.random.default_rng(1)
    good, rough = y * rng.lognormal(0, 0.05, len(y)), y * rng.lognormal(0, 0.5, len(y))
    incumbent = _incumbent({"lad": 1}, ids)
    better = judge(
        y=y,
        priors=prior,
        jobs=jobs,
        run_ids=ids,
        X=None,
        challenger={"svr_log": 1},
        challenger_predictions=good,
        incumbent=incumbent,
        incumbent_predictions=rough,
        settings=GUARD,
    )
    assert better.verdict is Verdict.PROMOTED and better.serve is Serve.CHALLENGER
    assert better.details["high"] < 0 and better.reason.startswith("svr_log beats lad: RAE -")
    tie = judge(
        y=y,
        priors=prior,
        jobs=jobs,
        run_ids=ids,
        X=None,
        challenger={"svr_log": 1},
        challenger_predictions=good * 1.001,
        incumbent=incumbent,
        incumbent_predictions=good,
        settings=GUARD,
    )
    assert tie.verdict is Verdict.KEPT and tie.serve is None and tie.register_challenger
    assert "no runs since version 1 was trained" in tie.reason
    margin = judge(
        y=y,
        priors=prior,
        jobs=jobs,
        run_ids=ids,
        X=None,
        challenger={"svr_log": 1},
        challenger_predictions=good,
        incumbent=incumbent,
        incumbent_predictions=rough,
        settings=GuardSettings(margin=500.0, n_resamples=500),
    )
    assert margin.verdict is Verdict.KEPT  # a lead must exceed the margin


def test_a_losing_challenger_leaves_the_incumbent_refreshed_when_runs_arrived() -> None:
    y, prior, jobs, ids = _rows()
    X = y[:, None]
    incumbent = _incumbent({"lad": 1}, ids[:40], predict=lambda rows: rows[:, 0] * 1.10)  # trained on fewer runs
    decision = judge(
        y=y,
        priors=prior,
        jobs=jobs,
        run_ids=ids,
        X=X,
        challenger={"mean": 1},
        challenger_predictions=prior,
        incumbent=incumbent,
        incumbent_predictions=y * 1.02,
        settings=GUARD,
    )
    assert decision.verdict is Verdict.REFRESHED and decision.serve is Serve.INCUMBENT and decision.register_challenger
    assert decision.reason.startswith("mean does not beat lad") and "on 20 new run(s)" in decision.reason


def test_a_refresh_shown_worse_than_the_served_version_is_not_promoted() -> None:
    y, prior, jobs, ids = _rows()
    X = y[:, None]
    served = _incumbent({"lad": 1}, ids[:30], predict=lambda rows: rows[:, 0])  # perfect on the new runs
    worse = judge(
        y=y,
        priors=prior,
        jobs=jobs,
        run_ids=ids,
        X=X,
        challenger={"lad": 1},
        challenger_predictions=y * 2.0,
        incumbent=served,
        incumbent_predictions=None,
        settings=GUARD,
    )
    assert worse.verdict is Verdict.KEPT and worse.serve is None and not worse.register_challenger
    assert "refresh is worse" in worse.reason and worse.details["refresh_low"] > 0
    few = judge(
        y=y,
        priors=prior,
        jobs=jobs,
        run_ids=ids,
        X=X,
        challenger={"lad": 1},
        challenger_predictions=y * 2.0,
        incumbent=_incumbent({"lad": 1}, ids[:58], lambda rows: rows[:, 0]),
        incumbent_predictions=None,
        settings=GUARD,
    )
    assert few.verdict is Verdict.KEPT and few.serve is None and "2 new job(s) are too few to compare" in few.reason


def test_a_refresh_the_guard_cannot_compare_or_that_disagrees_wildly_is_not_promoted() -> None:
    """Issue 30 item 3: an uncomparable refresh was promoted unchecked; new runs far from what serves are flagged."""
    y, prior, jobs, ids = _rows()
    X = y[:, None]
    unscorable = judge(
        y=y,
        priors=prior,
        jobs=jobs,
        run_ids=ids,
        X=None,
        challenger={"lad": 1},
        challenger_predictions=y,
        incumbent=_incumbent({"lad": 1}, ids[:30], lambda rows: rows[:, 0]),
        incumbent_predictions=None,
        settings=GUARD,
    )
    assert unscorable.verdict is Verdict.KEPT and "cannot be compared" in unscorable.reason
    unknown = judge(
        y=y,
        priors=prior,
        jobs=jobs,
        run_ids=ids,
        X=X,
        challenger={"lad": 1},
        challenger_predictions=y * 2.0,
        incumbent=_incumbent({"lad": 1}, None, lambda rows: rows[:, 0]),
        incumbent_predictions=None,
        settings=GUARD,
    )
    assert (
        unknown.verdict is Verdict.KEPT and "refresh is worse" in unknown.reason
    )  # every run compared, none waved through
    one_input = np.concatenate(
        [y, np.full(300, 3600.0)]
    )  # one input run 300 times at 3,600 s where ~its size was served
    many = judge(
        y=one_input,
        priors=np.full(len(one_input), one_input.mean()),
        jobs=np.concatenate([jobs, np.full(300, 999)]),
        run_ids=[*ids, *(f"slow{i}" for i in range(300))],
        X=np.concatenate([X, np.full((300, 1), 0.26)]),
        challenger={"lad": 1},
        challenger_predictions=one_input,
        incumbent=_incumbent({"lad": 1}, ids, lambda rows: rows[:, 0]),
        incumbent_predictions=None,
        settings=GUARD,
    )
    assert (
        many.verdict is Verdict.KEPT
        and many.serve is None
        and many.reason.startswith("flagged: the 300 new run(s) of 1 job(s)")
    )
    assert many.details["flag_disagreement"] == pytest.approx(3600 / 0.26)


def _power_law_set(n: int, seed: int = 0, start: int = 0) -> TrainingSet:
    rng = np.random.default_rng(seed)
    size = rng.uniform(10, 1000, n)
    y = 0.01 * size**1.2 * rng.lognormal(0, 0.05, n)
    X = pd.DataFrame({"input.size": size})
    return TrainingSet("tool", "cpu", X, y, ["input.size"], [f"run-{start + i:04d}" for i in range(n)])


@pytest.fixture
def memory_settings(tmp_path) -> TrainingSettings:
    return TrainingSettings(home=tmp_path, cv_folds=5, n_jobs=1)


def test_in_memory_the_guard_runs_the_same_pipeline(memory_settings: TrainingSettings) -> None:
    book, tracker = MemoryChampions(), MemoryTracker(0.9)
    data = _power_law_set(60)

    def session(models: list[str], ts: TrainingSet = data, **options):
        return train(memory_settings, [ts], models=models, tracker=tracker, champions=book, **options)[0]

    assert session(["mean"]).decision.verdict is Verdict.PROMOTED
    better = session(["mean", "linear_log"])
    assert better.challenger == "linear_log" and better.decision.verdict is Verdict.PROMOTED and better.version == "2"
    newcomer = session(["mean"])
    assert newcomer.decision.verdict is Verdict.KEPT and newcomer.registered == ["3"] and newcomer.version == "2"
    assert book.alias[("tool", "cpu", Target.TIME)].champion.tags["model_kind"] == "linear_log"
    dry = session(["mean"], force=True, dry_run=True)
    assert (
        dry.decision.verdict is Verdict.FORCED
        and dry.registered == []
        and len(book.versions[("tool", "cpu", Target.TIME)]) == 3
    )
    forced = session(["mean"], force=True)
    assert forced.decision.verdict is Verdict.FORCED and forced.version == "4"
    assert book.alias[("tool", "cpu", Target.TIME)].champion.tags["model_kind"] == "mean"


def _store_runs(store: MeasurementStore, n: int, seed: int) -> None:
    data = _power_law_set(n, seed)
    store.add(
        Measurement(
            run_id=r, algorithm="mafft", platform="cpu1", features={"input.residues": float(x)}, wall_seconds=float(t)
        )
        for r, x, t in zip(data.run_ids, data.X["input.size"], data.y, strict=True)
    )


def test_the_cli_keeps_the_champion_from_the_mean_unless_forced(tmp_path) -> None:
    """The newcomer's case: `predictor train --model mean` must not replace a far better champion."""
    env = {"PREDICTOR_HOME": str(tmp_path), "PREDICTOR_CV_FOLDS": "5", "PREDICTOR_N_JOBS": "1"}
    store = MeasurementStore(f"sqlite:///{tmp_path / 'store.db'}")
    store.migrate()
    _store_runs(store, 60, seed=2)
    runner = CliRunner()
    first = runner.invoke(app, ["train", "--model", "linear_log"], env=env)
    assert first.exit_code == 0, first.output
    dry = runner.invoke(app, ["train", "--model", "mean", "--dry-run"], env=env)
    assert dry.exit_code == 0 and "Dry run" in dry.output and "kept" in dry.output, dry.output
    kept = runner.invoke(app, ["train", "--model", "mean"], env=env)
    assert kept.exit_code == 0 and "kept" in kept.output and "mean does not beat linear_log" in kept.output, kept.output
    forced = runner.invoke(app, ["train", "--model", "mean", "--promote"], env=env)
    assert forced.exit_code == 0 and "forced" in forced.output and "guard was overridden" in forced.output, (
        forced.output
    )
    history = runner.invoke(app, ["models", "history"], env=env)
    assert history.exit_code == 0, history.output
    decisions = [row["decision"] for row in store.decisions()]
    assert decisions == ["forced", "kept", "promoted"]  # newest first; the dry run recorded nothing
    assert "predictor train --promote" in history.output and "no champion served before" in history.output
    assert len(load_training_sets(store)) == 1
    store.dispose()


def test_make_run_again_on_unchanged_data_trains_nothing_and_says_how_to_force(tmp_path) -> None:
    """Issue 17 #13: `make run` ingests the same files and trains again; the second `predictor train` must not retrain."""
    env = {"PREDICTOR_HOME": str(tmp_path / "home"), "PREDICTOR_CV_FOLDS": "3", "PREDICTOR_N_JOBS": "1"}
    data = _power_law_set(40, seed=3)
    runs = tmp_path / "runs.csv"
    runs.write_text(
        "run_id,algorithm,platform,wall_seconds,feature.input.residues\n"
        + "".join(
            f"{r},mafft,cpu1,{t:.6f},{x:.3f}\n"
            for r, x, t in zip(data.run_ids, data.X["input.size"], data.y, strict=True)
        )
    )
    runner = CliRunner()

    def make_run() -> str:
        ingested = runner.invoke(app, ["ingest", str(runs)], env=env)
        assert ingested.exit_code == 0, ingested.output
        trained = runner.invoke(app, ["train", "--model", "mean", "--model", "linear_log"], env=env)
        assert trained.exit_code == 0, trained.output
        return trained.output

    settings = TrainingSettings(home=tmp_path / "home")

    def versions() -> list[str]:
        registry = registry_client(settings.resolved_tracking_uri)
        return sorted(
            str(v.version) for v in registry.search_model_versions(f"name='{registered_name('mafft', 'cpu1')}'")
        )

    first = make_run()
    assert versions() == ["1"], first
    again = make_run()  # the same file: every row a duplicate, the same zoo
    assert versions() == ["1"], again  # nothing new was registered
    assert "mafft/cpu1 promoted: no champion served before" in first, first
    assert (
        "mafft/cpu1 unchanged: same runs, members and settings" in again and "not trained (--force retrains)" in again
    ), again
    assert "fold 1/3" not in again  # no member was cross-validated
    store = MeasurementStore(settings.resolved_store_url)
    assert [row["decision"] for row in store.decisions()] == ["promoted"]  # the skipped session recorded no decision
    store.dispose()


def test_a_member_that_raises_is_left_out_and_training_goes_on(memory_settings: TrainingSettings) -> None:
    from models.zoo import NEEDS, ZOO, register

    class Broken(DummyRegressor):
        def fit(self, X, y, sample_weight=None):
            raise ValueError("operands could not be broadcast together")

    register("broken_for_test")(Broken)
    try:
        book = MemoryChampions()
        outcome = train(
            memory_settings,
            [_power_law_set(60)],
            models=["broken_for_test", "linear_log"],
            tracker=MemoryTracker(0.9),
            champions=book,
        )[0]
        assert outcome.challenger == "linear_log" and outcome.decision.verdict is Verdict.PROMOTED
        assert "broken_for_test" not in outcome.metrics and outcome.version == "1"
        served = train(
            memory_settings,
            [_power_law_set(60)],
            models=["linear_log"],
            tracker=MemoryTracker(0.9),
            champions=book,
            force=True,
        )[0]
        assert served.version == "2"
        incumbent_broken = train(
            memory_settings,
            [_power_law_set(60)],
            models=["broken_for_test"],
            tracker=MemoryTracker(0.9),
            champions=book,
        )
        # every chosen member failed: the site's rule (the measured median) is still a candidate, and loses
        assert [(o.challenger, o.decision.verdict, o.serving) for o in incumbent_broken] == [
            ("median", Verdict.KEPT, "linear_log")
        ]
    finally:
        ZOO.pop("broken_for_test")
        NEEDS.pop("broken_for_test")


def test_a_pair_judged_on_the_same_runs_and_settings_is_not_trained_again(memory_settings: TrainingSettings) -> None:
    book, tracker = MemoryChampions(), MemoryTracker(0.9)
    data = _power_law_set(40)
    first = train(memory_settings, [data], models=["linear_log"], tracker=tracker, champions=book)[0]
    again = train(memory_settings, [_power_law_set(40)], models=["linear_log"], tracker=tracker, champions=book)[0]
    assert (
        again.decision.verdict is Verdict.UNCHANGED and again.version == first.version == "1" and again.registered == []
    )
    assert "not trained (--force retrains)" in again.decision.reason
    other_members = train(memory_settings, [data], models=["linear_log", "mean"], tracker=tracker, champions=book)[0]
    assert other_members.decision.verdict is not Verdict.UNCHANGED  # another zoo is another session
    more = train(memory_settings, [_power_law_set(45)], models=["linear_log"], tracker=tracker, champions=book)[0]
    assert (
        more.decision.verdict is Verdict.KEPT and "5 new job(s) are too few to compare" in more.decision.reason
    )  # judged again
    forced = train(
        memory_settings, [_power_law_set(45)], models=["linear_log"], tracker=tracker, champions=book, force=True
    )[0]
    assert forced.decision.verdict is Verdict.FORCED


def test_a_rule_serves_when_the_learned_challenger_does_not_beat_it() -> None:
    """Do no harm: the best learned candidate must beat the site's best rule by the margin, or the rule serves."""
    y, prior, jobs, ids = _rows()
    rng = np.random.default_rng(2)
    rule, rough = y * rng.lognormal(0, 0.05, len(y)), y * rng.lognormal(0, 0.5, len(y))
    first = judge(
        y=y,
        priors=prior,
        jobs=jobs,
        run_ids=ids,
        X=None,
        challenger={"lightgbm_log": 1},
        challenger_predictions=rough,
        incumbent=None,
        incumbent_predictions=None,
        settings=GUARD,
        rule={"last_two_mean": 1},
        rule_predictions=rule,
    )
    assert (first.verdict, first.challenger) == (Verdict.PROMOTED, "last_two_mean")
    assert "lightgbm_log does not beat the rule last_two_mean, which serves" in first.reason
    assert first.details["rule_low"] > 0  # the learned one is worse even at its best
    better = judge(
        y=y,
        priors=prior,
        jobs=jobs,
        run_ids=ids,
        X=None,
        challenger={"lightgbm_log": 1},
        challenger_predictions=rule,
        incumbent=None,
        incumbent_predictions=None,
        settings=GUARD,
        rule={"last_two_mean": 1},
        rule_predictions=rough,
    )
    assert better.challenger == "lightgbm_log" and "lightgbm_log beats the rule last_two_mean" in better.reason


def test_a_lead_over_the_rule_from_one_window_alone_does_not_serve() -> None:
    """Issue 39, wagap: class means that beat the last two runs on the forward windows overall then lost to them on the
    jobs after. A learned composition must beat the rule on most windows too, as a planning configuration must."""
    y, prior, jobs, ids = _rows(90)
    rng = np.random.default_rng(4)
    windows = np.repeat([0, 1, 2], 30)
    rule = y * rng.lognormal(0, 0.2, len(y))
    one_window = np.where(windows == 2, y, rule * rng.lognormal(0, 0.05, len(y)))  # exact on the last window only
    common = {"y": y, "priors": prior, "jobs": jobs, "run_ids": ids, "X": None, "incumbent": None}
    common |= {"incumbent_predictions": None, "settings": GUARD, "rule": {"last_two_mean": 1}, "rule_predictions": rule}
    alone = judge(**common, challenger={"mean": 1}, challenger_predictions=one_window)
    assert alone.details["rule_high"] < 0  # the bootstrap alone would promote it
    overall = judge(**common, challenger={"mean": 1}, challenger_predictions=one_window, windows=windows)
    assert overall.challenger == "last_two_mean" and "better on 1 of 3 window(s)" in overall.reason
    everywhere = judge(**common, challenger={"mean": 1}, challenger_predictions=y * 1.01, windows=windows)
    assert everywhere.challenger == "mean" and "better on 3 of 3 window(s)" in everywhere.reason


def test_a_serving_model_that_does_not_beat_the_rule_gives_way_to_it() -> None:
    y, prior, jobs, ids = _rows()
    rng = np.random.default_rng(3)
    rule, rough = y * rng.lognormal(0, 0.05, len(y)), y * rng.lognormal(0, 0.5, len(y))
    decision = judge(
        y=y,
        priors=prior,
        jobs=jobs,
        run_ids=ids,
        X=None,
        challenger={"lad_log": 1},
        challenger_predictions=rough,
        incumbent=_incumbent({"lightgbm_log": 1}, ids[:30]),
        incumbent_predictions=rough * 1.01,
        settings=GUARD,
        rule={"requested_time": 1},
        rule_predictions=rule,
    )
    assert (decision.verdict, decision.serve, decision.challenger) == (
        Verdict.PROMOTED,
        Serve.CHALLENGER,
        "requested_time",
    )
    assert "the serving lightgbm_log does not beat the rule" in decision.reason
    assert _incumbent({"requested_time": 1}, None).rule and not _incumbent({"lad_log": 1}, None).rule


def _poisoned(n_clean: int, n_poison: int, n_agreeing: int) -> tuple[np.ndarray, np.ndarray, list[str], Incumbent]:
    """Runs of 30 inputs at about 1 s (the served version trained on them), then ``n_poison`` runs of input 0 at 3,600 s
    and ``n_agreeing`` new runs of the other inputs at their usual time, ``n_poison`` more of input 0 at the end."""
    rng = np.random.default_rng(4)
    jobs = [i % 30 for i in range(n_clean)] + [0] * n_poison + [1 + i % 29 for i in range(n_agreeing)] + [0] * n_poison
    y = np.concatenate(
        [
            rng.lognormal(0, 0.1, n_clean),
            np.full(n_poison, 3600.0),
            rng.lognormal(0, 0.1, n_agreeing),
            np.full(n_poison, 3600.0),
        ]
    )
    ids = [f"r{i}" for i in range(len(y))]
    return y, np.array(jobs), ids, _incumbent({"linear_log": 1}, ids[:n_clean], lambda X: np.ones(len(X)))


def test_poison_diluted_by_agreeing_runs_is_flagged_by_its_input() -> None:
    """Issue 41 item 1: runs of one input at 3,600 s, diluted by more agreeing runs (150, 700 agreeing, 150 more): the
    median of all new runs agrees with what serves, but that input's own runs jumped 3,600x from its earlier ones."""
    y, jobs, ids, incumbent = _poisoned(60, 150, 700)
    decision = judge(
        y=y,
        priors=np.full(len(y), y.mean()),
        jobs=jobs,
        run_ids=ids,
        X=np.ones((len(y), 1)),
        challenger={"linear_log": 1},
        challenger_predictions=y,  # a refresh that learned the poison answers it perfectly
        incumbent=incumbent,
        incumbent_predictions=np.ones(len(y)),
        settings=GUARD,
        rule={"median": 1},
        rule_predictions=np.ones(len(y)),
    )
    assert decision.verdict is Verdict.KEPT and decision.serve is None
    assert "flagged: 300 new run(s) of an input version 1 was trained on (e.g. run r60)" in decision.reason
    assert decision.details["flag_jump"] > 1000
    assert decision.details.get("flag_disagreement") is None  # the median of the new runs alone saw nothing


def test_one_poisoned_run_on_each_of_many_inputs_is_flagged_by_their_share() -> None:
    rng = np.random.default_rng(6)
    jobs = np.concatenate([np.arange(100), np.arange(100)])  # 100 known inputs, each run once more
    y = np.concatenate([rng.lognormal(0, 0.1, 100), np.where(np.arange(100) < 20, 5000.0, 1.0)])
    ids = [f"r{i}" for i in range(200)]
    decision = judge(
        y=y,
        priors=np.full(200, y.mean()),
        jobs=jobs,
        run_ids=ids,
        X=np.ones((200, 1)),
        challenger={"linear_log": 1},
        challenger_predictions=y,
        incumbent=_incumbent({"linear_log": 1}, ids[:100], lambda X: np.ones(len(X))),
        incumbent_predictions=np.ones(200),
        settings=GUARD,
    )
    assert (
        decision.verdict is Verdict.KEPT
        and "20 of the 100 new runs of inputs version 1 was trained on" in decision.reason
    )


def test_a_learned_lead_gone_on_the_runs_since_the_serving_version_does_not_serve() -> None:
    """Issue 39, wagap: a class mean chosen on the forward windows kept serving while the last two runs beat it on the
    jobs after. The runs since the serving version was trained are the nearest to what comes next: a learned
    composition that scores worse than the rule there does not serve, however it did on the older windows."""
    y, prior, jobs, ids = _rows(150)
    rng = np.random.default_rng(6)
    windows = np.repeat([0, 1, 2], 50)
    rule = y * rng.lognormal(0, 0.5, len(y))
    good = y * rng.lognormal(0, 0.05, len(y))
    # exact on the first 110 runs, twice off on the 40 the serving version never saw
    faded = np.where(np.arange(len(y)) < 110, good, 2.0 * y)
    common = {"y": y, "priors": prior, "jobs": jobs, "run_ids": ids, "X": None, "windows": windows}
    common |= {"settings": GUARD, "rule": {"last_two_mean": 1}, "rule_predictions": rule}
    serving = _incumbent({"mean": 1}, ids[:110])
    before = judge(
        **common, challenger={"mean": 1}, challenger_predictions=faded, incumbent=None, incumbent_predictions=None
    )
    assert before.challenger == "mean"  # no serving version: nothing is recent, the windows and the bound decide
    after = judge(
        **common, challenger={"mean": 1}, challenger_predictions=faded, incumbent=serving, incumbent_predictions=faded
    )
    assert (after.verdict, after.serve, after.challenger) == (Verdict.PROMOTED, Serve.CHALLENGER, "last_two_mean")
    assert "mean does not beat the rule last_two_mean, which serves" in after.reason
    assert "on the 40 runs since" in after.reason and after.details["rule_recent_runs"] == 40
    assert after.details["rule_recent"] > after.details["rule_recent_rule"]
    few = _incumbent({"mean": 1}, ids[:130])  # 20 new runs: under recent_min_runs, no such test
    kept = judge(
        **common, challenger={"mean": 1}, challenger_predictions=faded, incumbent=few, incumbent_predictions=faded
    )
    assert kept.challenger == "mean" and "runs since" not in kept.reason
    held = judge(
        **common, challenger={"mean": 1}, challenger_predictions=good, incumbent=serving, incumbent_predictions=good
    )
    assert held.challenger == "mean" and "mean beats the rule last_two_mean" in held.reason


def test_a_decision_carries_the_metric_it_was_judged_by() -> None:
    """A job class is judged by its median log error, and its served version says so: the worker's drift compares
    the live error with the forward one on that metric (a version tagged ``rae`` by default drifted on a job class's
    RAE, thousands of % on wagap's queues, and retrained at nearly every check)."""
    y, prior, jobs, ids = _rows()
    common = {"y": y, "priors": prior, "jobs": jobs, "run_ids": ids, "X": None, "incumbent_predictions": None}
    for metric in ("mdale", "rae"):
        settings = GuardSettings(metric=metric, n_resamples=200)
        first = judge(**common, challenger={"mean": 1}, challenger_predictions=y, incumbent=None, settings=settings)
        kept = judge(
            **common,
            challenger={"mean": 1},
            challenger_predictions=y,
            incumbent=_incumbent({"mean": 1}, ids),
            settings=settings,
        )
        assert first.metric == kept.metric == metric
