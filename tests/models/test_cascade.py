"""CascadeNetRegressor: the scikit-learn contract, Cascade2's parts against the spec, and FANN's own Cascade2."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.utils.estimator_checks import parametrize_with_checks

import models._cascade_grow as grow_module
from benchmarks.fann.driver import fann_available, run_cascade2
from models import make_model
from models._cascade_activations import (
    AFFINE,
    CANDIDATE_ACTIVATIONS,
    Activations,
    by_base,
)
from models._cascade_train import (
    IRpropMinus,
    OutputError,
    Phase,
    Rprop,
    Stagnation,
    _direct_epoch,
    _gram_epoch,
    initial_candidates,
    train_candidates,
)
from models.cascade import CascadeNetRegressor
from tests.required import required

# FANN's formulas, written out independently of the implementation (cascade2.md, "Network").
FANN_FORMULAS = {
    "sigmoid": lambda x: 1 / (1 + torch.exp(-2 * x)),
    "sigmoid_symmetric": torch.tanh,
    "gaussian": lambda x: torch.exp(-(x**2)),
    "gaussian_symmetric": lambda x: 2 * torch.exp(-(x**2)) - 1,
    "elliot": lambda x: (x / 2) / (1 + torch.abs(x)) + 0.5,
    "elliot_symmetric": lambda x: x / (1 + torch.abs(x)),
    "sin_symmetric": torch.sin,
    "cos_symmetric": torch.cos,
    "sin": lambda x: torch.sin(x) / 2 + 0.5,
    "cos": lambda x: torch.cos(x) / 2 + 0.5,
    "linear": lambda x: x,
}


def smooth_problem(seed: int = 7, n_train: int = 300, n_test: int = 200) -> tuple[np.ndarray, ...]:
    """y = sin(2 x0) x1 + 0.5 x2^2 + 0.3 x1 + noise (sd 0.05) on the cube [-1, 1]^3."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n_train + n_test, 3))
    y = np.sin(2 * X[:, 0]) * X[:, 1] + 0.5 * X[:, 2] ** 2 + 0.3 * X[:, 1] + rng.normal(0, 0.05, len(X))
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def quick(**settings: object) -> CascadeNetRegressor:
    """A small network with short phases: the contract does not depend on size."""
    return CascadeNetRegressor(
        **{"max_hidden_units": 3, "max_output_epochs": 60, "max_candidate_epochs": 60, **settings}
    )


@parametrize_with_checks([quick()])
def test_scikit_learn_contract(estimator: CascadeNetRegressor, check: object) -> None:
    check(estimator)  # type: ignore[operator]


@pytest.mark.parametrize("name", sorted(FANN_FORMULAS))
def test_activations_match_fanns_formulas_and_their_derivatives(name: str) -> None:
    steepness = 0.75
    net = torch.linspace(-4, 4, 41, dtype=torch.float64, requires_grad=True)
    values, slopes = Activations.build([name], [steepness], torch.float64)(net.detach()[None, :])
    expected = FANN_FORMULAS[name](steepness * net)
    (autograd,) = torch.autograd.grad(expected.sum(), net)
    np.testing.assert_allclose(values[0].numpy(), expected.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(slopes[0].numpy(), autograd.numpy(), atol=1e-9)


def test_a_mixed_block_evaluates_each_row_with_its_own_activation() -> None:
    names = [CANDIDATE_ACTIVATIONS[i] for i in by_base(CANDIDATE_ACTIVATIONS)]
    steepnesses = [0.25 + 0.05 * i for i in range(len(names))]
    net = torch.linspace(-3, 3, 25, dtype=torch.float64).repeat(len(names), 1)
    values, _ = Activations.build(names, steepnesses, torch.float64)(net)
    for row, (name, s) in enumerate(zip(names, steepnesses, strict=True)):
        np.testing.assert_allclose(values[row].numpy(), FANN_FORMULAS[name](s * net[row]).numpy(), atol=1e-12)


def test_sums_are_clamped_at_150_over_the_steepness() -> None:
    values, _ = Activations.build(["linear"], [0.5], torch.float64)(torch.tensor([[1000.0, -1000.0]]))
    assert values.tolist() == [[150.0, -150.0]]


def test_irprop_minus_follows_fanns_step_rule() -> None:
    weights = torch.zeros(3, dtype=torch.float64)
    optimiser = IRpropMinus(weights, Rprop())
    optimiser.step(weights, torch.tensor([1.0, -1.0, 0.0], dtype=torch.float64))
    # First step: previous gradient 0 counts as the same sign, so 0.1 * 1.2; a zero gradient does not move.
    np.testing.assert_allclose(weights.numpy(), [-0.12, 0.12, 0.0])
    optimiser.step(weights, torch.tensor([1.0, 1.0, 0.0], dtype=torch.float64))
    # Same sign again: 0.144; a sign flip halves the step (0.06), forgets the gradient and does not move.
    np.testing.assert_allclose(weights.numpy(), [-0.264, 0.12, 0.0])
    np.testing.assert_allclose(optimiser.steps.numpy(), [0.144, 0.06, 0.144])
    optimiser.step(weights, torch.tensor([1.0, 1.0, 0.0], dtype=torch.float64))
    # After a flip the forgotten gradient counts as "same sign": the step grows again, 0.06 * 1.2.
    np.testing.assert_allclose(weights.numpy(), [-0.264 - 0.1728, 0.12 - 0.072, 0.0])


def test_irprop_steps_and_weights_are_bounded() -> None:
    weights = torch.tensor([1499.0], dtype=torch.float64)
    optimiser = IRpropMinus(weights, Rprop(delta_zero=45.0))
    for _ in range(5):
        optimiser.step(weights, torch.tensor([-1.0], dtype=torch.float64))
    assert optimiser.steps.item() == 50.0 and weights.item() == 1500.0


def test_stagnation_extends_patience_on_change_and_respects_the_minimum() -> None:
    rule = Stagnation(Phase(change_fraction=0.01, stagnation_epochs=12, min_epochs=50, max_epochs=150))
    assert not rule.stalled(1.0, 1)  # leaves [-1e20, 0]: new goal, deadline 13
    assert not any(rule.stalled(1.005, epoch) for epoch in range(2, 50))  # inside [0.99, 1.01] from epoch 13 on
    assert rule.stalled(1.005, 50)
    rule = Stagnation(Phase())
    assert not rule.stalled(2.0, 60) and not rule.stalled(3.0, 72)  # each change moves the deadline
    assert rule.stalled(3.0, 84)


def test_candidates_start_as_fann_draws_them() -> None:
    generator = torch.Generator().manual_seed(0)
    weights = initial_candidates(4000, 3, 2, 1, torch.float64, generator)
    sigma = 2.0 * (0.7 * 3) ** (1 / 3)
    bias, others = weights[:, 3], torch.cat([weights[:, :3], weights[:, 4:]], 1)
    assert weights.shape == (4000, 3 + 1 + 2 + 1)
    assert others.min() >= 0 and others.max() < sigma and others.max() > 0.99 * sigma
    assert bias.min() >= -sigma and bias.min() < -0.99 * sigma and bias.max() < sigma
    assert initial_candidates(10, 1, 40, 1, torch.float64, generator)[:, 0].max() < 8.0  # sigma capped at 8


def test_candidate_gradients_are_those_of_the_cascade2_loss() -> None:
    """One candidate epoch moves each weight against the sign of d/dw sum_p sum_j (v_p u_j - e_pj)^2."""
    generator = torch.Generator().manual_seed(3)
    names = [CANDIDATE_ACTIVATIONS[i] for i in by_base(CANDIDATE_ACTIVATIONS)]
    pool = Activations.build(names, [0.5] * len(names), torch.float64)
    At = torch.cat([torch.randn(2, 30, generator=generator, dtype=torch.float64), torch.ones(1, 30)], 0)
    residual = torch.randn(2, 30, generator=generator, dtype=torch.float64)
    start = initial_candidates(len(names), 2, 0, 2, torch.float64, generator)
    weights = start.clone().requires_grad_(True)
    net = weights[:, :3] @ At
    values = torch.stack([FANN_FORMULAS[name](0.5 * net[row]) for row, name in enumerate(names)])
    loss = ((values[:, None, :] * weights[:, 3:, None] - residual[None]) ** 2).sum()
    (gradient,) = torch.autograd.grad(loss, weights)
    trained = start.clone()
    one_epoch = Phase(min_epochs=0, max_epochs=1)
    train_candidates(At, residual, float((residual**2).sum()), trained, pool, one_epoch, Rprop(), 1000.0)
    np.testing.assert_array_equal(torch.sign(start - trained).numpy(), torch.sign(gradient).numpy())


def test_candidate_score_is_the_error_a_candidate_removes() -> None:
    generator = torch.Generator().manual_seed(4)
    pool = Activations.build(["sigmoid_symmetric"], [1.0], torch.float64)
    At = torch.cat([torch.randn(1, 50, generator=generator, dtype=torch.float64), torch.ones(1, 50)], 0)
    weights = torch.tensor([[1.0, 0.0, 0.7]], dtype=torch.float64)
    residual = torch.tanh(At[:1]) * 0.7  # exactly what this candidate outputs
    sse = float((residual**2).sum())
    result = train_candidates(At, residual, sse, weights, pool, Phase(min_epochs=0, max_epochs=1), Rprop(), 1000.0)
    assert result.score == pytest.approx(sse, rel=1e-9)


def test_linear_outputs_use_moments_equal_to_a_forward_pass() -> None:
    generator = torch.Generator().manual_seed(5)
    At = torch.randn(6, 40, generator=generator, dtype=torch.float64)
    targets = torch.randn(2, 40, generator=generator, dtype=torch.float64)
    weights = torch.randn(2, 6, generator=generator, dtype=torch.float64)
    linear = Activations.build(["linear", "linear"], [0.5, 0.5], torch.float64)
    direct = _direct_epoch(At, targets, linear, OutputError(halve=False, tanh=False))(weights)
    moments = _gram_epoch(At, targets, linear.steepness)(weights)
    assert moments[0] == pytest.approx(direct[0], rel=1e-10)
    np.testing.assert_allclose(moments[1].numpy(), direct[1].numpy(), rtol=1e-10, atol=1e-12)


def test_the_winner_is_installed_frozen_with_0_4_times_its_output_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, object] = {}
    train_candidates_ = grow_module.train_candidates

    def spy(*args: object) -> object:
        result = train_candidates_(*args)  # type: ignore[arg-type]
        seen["candidates"], seen["best"] = args[3].clone(), result.best  # type: ignore[attr-defined]
        return result

    monkeypatch.setattr(grow_module, "train_candidates", spy)
    X, y, _, _ = smooth_problem(n_train=80)
    model = CascadeNetRegressor(max_hidden_units=1, validation_fraction=None, max_output_epochs=1, random_state=0)
    model.fit(X, y)
    candidates, best = seen["candidates"], seen["best"]
    np.testing.assert_allclose(model.hidden_weights_[0], candidates[best, :4].numpy())  # type: ignore[index]
    # One output epoch after installing moves each weight by 0.12 at most (iRPROP-'s first step).
    installed = 0.4 * candidates[best, 4].item()  # type: ignore[index]
    assert abs(model.output_weights_[0, 4] - installed) <= 0.12 + 1e-6


def test_grows_to_the_cap_without_held_out_rows_and_training_error_falls() -> None:
    X, y, _, _ = smooth_problem()
    model = CascadeNetRegressor(max_hidden_units=6, validation_fraction=None, random_state=1).fit(X, y)
    curve = model.learning_curve_
    assert model.n_hidden_units_ == 6 and len(model.hidden_weights_) == 6
    assert curve["hidden_units"].tolist() == list(range(7))
    assert np.all(np.diff(curve["train_mse"]) < 0) and curve["train_mse"][-1] < 0.1 * curve["train_mse"][0]
    assert np.isnan(curve["validation_mse"]).all() and np.isnan(curve["validation_mae"]).all()
    assert [len(w) for w in model.hidden_weights_] == [4, 5, 6, 7, 8, 9]  # inputs, bias, earlier units
    assert set(model.hidden_activations_) <= set(CANDIDATE_ACTIVATIONS)


@pytest.mark.parametrize("metric", ["mae", "mse"])
def test_held_out_rule_keeps_the_size_with_the_lowest_validation_error(metric: str) -> None:
    X, y, _, _ = smooth_problem()
    model = CascadeNetRegressor(max_hidden_units=12, n_iter_no_change=2, validation_metric=metric, random_state=2)
    curve = model.fit(X, y).learning_curve_
    best = int(curve["hidden_units"][np.argmin(curve[f"validation_{metric}"])])
    assert model.n_hidden_units_ == best
    assert curve["hidden_units"][-1] - best == 2 or curve["hidden_units"][-1] == 12
    assert model.output_weights_.shape == (1, 3 + 1 + best)


def test_desired_error_stops_growth() -> None:
    X, y, _, _ = smooth_problem()
    model = CascadeNetRegressor(max_hidden_units=10, validation_fraction=None, desired_error=0.05, random_state=0)
    model.fit(X, y)
    assert model.learning_curve_["train_mse"][-1] <= 0.05 < model.learning_curve_["train_mse"][-2]
    assert model.n_hidden_units_ < 10


def test_same_seed_same_predictions_other_seed_others() -> None:
    X, y, X_test, _ = smooth_problem(n_train=120)
    first = quick(random_state=11).fit(X, y).predict(X_test)
    np.testing.assert_array_equal(first, quick(random_state=11).fit(X, y).predict(X_test))
    assert not np.array_equal(first, quick(random_state=12).fit(X, y).predict(X_test))


def test_fits_a_smooth_function_and_predicts_in_target_units() -> None:
    X, y, X_test, y_test = smooth_problem()
    model = CascadeNetRegressor(max_hidden_units=8, random_state=0).fit(X * 1000 + 5, y * 300 + 40)
    error = np.mean((model.predict(X_test * 1000 + 5) - (y_test * 300 + 40)) ** 2)
    assert error < 0.1 * np.var(y_test * 300)


def test_several_targets_at_once() -> None:
    X, y, X_test, y_test = smooth_problem(n_train=200)
    Y = np.column_stack([y, -2 * y + 1])
    predictions = quick(max_hidden_units=4, random_state=0).fit(X, Y).predict(X_test)
    assert predictions.shape == (len(X_test), 2)
    assert np.mean((predictions[:, 1] - (-2 * y_test + 1)) ** 2) < 0.5 * np.var(-2 * y_test)


@pytest.mark.parametrize("activation", ["sigmoid_symmetric", "sigmoid"])
def test_fanns_bounded_output_and_tanh_error_remain_available(activation: str) -> None:
    X, y, X_test, _ = smooth_problem(n_train=150)
    model = quick(output_activation=activation, error_function="tanh", random_state=0).fit(X, y)
    assert np.isfinite(model.predict(X_test)).all()
    assert model.learning_curve_["train_mse"][-1] < model.learning_curve_["train_mse"][0]


def test_torch_thread_count_is_restored_after_fit() -> None:
    before = torch.get_num_threads()
    X, y, _, _ = smooth_problem(n_train=40)
    quick(max_hidden_units=1, n_threads=1).fit(X, y)
    assert torch.get_num_threads() == before


@pytest.mark.parametrize(
    "setting",
    [
        {"activation_functions": ("sigmoid", "relu")},
        {"output_activation": "softmax"},
        {"error_function": "huber"},
        {"validation_fraction": 1.0},
        {"validation_metric": "rmse"},
        {"candidate_groups": 0},
        {"n_iter_no_change": 0},
        {"activation_steepnesses": ()},
    ],
)
def test_bad_settings_are_refused_at_fit(setting: dict[str, object]) -> None:
    X, y, _, _ = smooth_problem(n_train=20)
    with pytest.raises(ValueError):
        CascadeNetRegressor(**setting).fit(X, y)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["cascade", "cascade_log"])
def test_zoo_members(name: str) -> None:
    X, y, X_test, _ = smooth_problem(n_train=60)
    model = make_model(name, seed=3, **{f"{'regressor__' if name.endswith('_log') else ''}max_hidden_units": 2})
    predictions = model.fit(X, np.exp(y)).predict(X_test)
    assert predictions.shape == (len(X_test),) and np.isfinite(predictions).all()


def test_every_activation_name_is_known_to_fann() -> None:
    assert set(AFFINE) == set(FANN_FORMULAS)


# Against FANN's own Cascade2 ----------------------------------------------------------------------

SEEDS = (11, 12, 13)
HIDDEN = 8
# Both runs use different random streams (glibc rand vs torch), so which candidate wins differs; across
# FANN's own seeds the test MSE on this problem spreads by about 1.5x. Ours, averaged over three seeds,
# must stay within that spread of FANN's average, at every size and at the end.
TOLERANCE = 1.5


@pytest.fixture(scope="module")
def fann_and_ours() -> tuple[list, list[CascadeNetRegressor], tuple[np.ndarray, ...]]:
    required(
        fann_available(),
        "libfann-dev (/usr/include/fann.h) or gcc is not installed",
        "`make test` installs them (make system-deps)",
    )
    data = smooth_problem()
    X, y, X_test, y_test = data
    fann = [run_cascade2(X, y, X_test, y_test, max_neurons=HIDDEN, seed=seed) for seed in SEEDS]
    ours = [
        CascadeNetRegressor(max_hidden_units=HIDDEN, validation_fraction=None, random_state=seed).fit(X, y)
        for seed in SEEDS
    ]
    return fann, ours, data


def test_growth_matches_fann(fann_and_ours: tuple) -> None:
    fann, ours, _ = fann_and_ours
    for run in fann:
        assert [step.hidden_units for step in run.steps] == list(range(HIDDEN)) and run.hidden_units == HIDDEN
    for model in ours:
        assert model.learning_curve_["hidden_units"].tolist() == list(range(HIDDEN + 1))
    fann_curve = np.mean([[s.train_mse for s in run.steps] + [run.train_mse] for run in fann], axis=0)
    our_curve = np.mean([model.learning_curve_["train_mse"] for model in ours], axis=0)
    # Every addition lowers the training error, for both, and by similar amounts.
    assert np.all(np.diff(fann_curve) < 0) and np.all(np.diff(our_curve) < 0)
    ratio = our_curve / fann_curve
    assert np.all((ratio > 1 / TOLERANCE) & (ratio < TOLERANCE)), ratio


def test_final_error_matches_fann(fann_and_ours: tuple) -> None:
    fann, ours, (_, _, X_test, y_test) = fann_and_ours
    fann_error = np.mean([np.mean((run.predictions - y_test) ** 2) for run in fann])
    our_error = np.mean([np.mean((model.predict(X_test) - y_test) ** 2) for model in ours])
    assert fann_error < 0.1 * np.var(y_test)  # FANN itself learned the function
    assert 1 / TOLERANCE < our_error / fann_error < TOLERANCE


def test_a_fitted_network_loads_and_predicts_without_torch_as_torch_computes(tmp_path) -> None:
    """Issue 42: a champion of this member made every process that served it import torch (1.4 s of a local
    predict). Predictions are NumPy's now: the same as the network computed in torch, to single-precision rounding."""
    import json
    import pickle
    import subprocess
    import sys

    from models._cascade_grow import Network

    rng = np.random.default_rng(3)
    X = rng.uniform(0, 10, (120, 3))
    model = quick(random_state=0).fit(X, np.sin(X[:, 0]) + np.sqrt(X[:, 1]) + 0.1 * X[:, 2])
    X_test = rng.uniform(0, 10, (40, 3))
    net = Network(
        n_inputs=3,
        hidden_weights=[torch.from_numpy(w) for w in model.hidden_weights_],
        hidden_activations=model.hidden_activations_,
        hidden_steepnesses=list(model.hidden_steepnesses_),
        output_weights=torch.from_numpy(model.output_weights_),
        output=Activations.build([model.output_activation_], [model.output_steepness_], torch.float32),
    )
    scaled = torch.from_numpy((X_test - model.x_mean_) / model.x_scale_).to(torch.float32)
    in_torch = (
        net.outputs(net.activations(scaled))[0].numpy().astype(np.float64) * model.y_scale_[0] + model.y_offset_[0]
    )
    np.testing.assert_allclose(model.predict(X_test), in_torch, rtol=1e-5, atol=1e-6)
    (tmp_path / "model.pickle").write_bytes(pickle.dumps(model))
    np.save(tmp_path / "rows.npy", X_test)
    probe = (
        "import json, pickle, sys, numpy as np; "
        f"model = pickle.loads(open({str(tmp_path / 'model.pickle')!r}, 'rb').read()); "
        f"print(json.dumps([model.predict(np.load({str(tmp_path / 'rows.npy')!r})).tolist(), 'torch' in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True)
    predictions, torch_loaded = json.loads(done.stdout)
    assert predictions == model.predict(X_test).tolist() and torch_loaded is False
