"""CascadeNetRegressor: FANN's Cascade2 in PyTorch, with what regression needs and FANN lacks."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from models._cascade_values import AFFINE, CANDIDATE_ACTIVATIONS, forward

if TYPE_CHECKING:
    from models._cascade_grow import Growth

# Growing a network runs in torch, imported then (fit); predicting is NumPy's (models._cascade_values), so loading and
# serving a fitted network does not import torch. Both compute in single precision.
DTYPE = np.float32
# A bounded output activation learns targets mapped into this share of its range.
BOUNDED_TARGET_SHARE = 0.8


class CascadeNetRegressor(RegressorMixin, BaseEstimator):
    """A network that grows its own hidden units by Cascade2 (FANN's cascade-grown network).

    The facility of Brandstätter-Müller et al. (2011), *Improving job scheduling on a heterogeneous cluster by
    predicting job execution times using heuristics*, moved from Weka's MLP to FANN's Cascade2 so that no one picks
    a network size per algorithm. This is Cascade2 as FANN 2.2.0 (the Fast Artificial Neural Network library, its
    ``src/fann_cascade.c``) implements it, with its defaults: a shortcut network whose output weights
    train with iRPROP-; a pool of candidates (``activation_functions`` x
    ``activation_steepnesses`` x ``candidate_groups``) trained together as one batched
    tensor to fit the residual; the winner installed with frozen incoming weights and
    ``weight_multiplier`` x its output weights; FANN's stagnation, epoch and size limits.

    What FANN lacks, as options: a linear output and linear error (the defaults here),
    per-column input and target scaling, a held-out stopping rule (``validation_fraction``
    of the rows; growth stops after ``n_iter_no_change`` units without a lower held-out
    ``validation_metric``, MAE by default as it is robust to heavy-tailed runtimes; the
    best size is kept and its outputs retrained on every row; ``None`` grows like FANN),
    seeded determinism (``random_state``) and a thread cap (``n_threads``, restored after
    fit). ``learning_curve_`` maps ``hidden_units`` to ``train_mse``, ``validation_mse``,
    ``validation_mae`` (of scaled targets) and cumulative ``epochs``, one entry per size tried.
    """

    def __init__(
        self,
        *,
        max_hidden_units: int = 30,
        validation_fraction: float | None = 0.15,
        n_iter_no_change: int = 2,
        validation_metric: str = "mae",
        desired_error: float = 0.0,
        activation_functions: Sequence[str] = CANDIDATE_ACTIVATIONS,
        activation_steepnesses: Sequence[float] = (0.25, 0.5, 0.75, 1.0),
        candidate_groups: int = 2,
        weight_multiplier: float = 0.4,
        candidate_limit: float = 1000.0,
        output_activation: str = "linear",
        output_steepness: float = 0.5,
        error_function: str = "linear",
        output_change_fraction: float = 0.01,
        output_stagnation_epochs: int = 12,
        min_output_epochs: int = 50,
        max_output_epochs: int = 150,
        candidate_change_fraction: float = 0.01,
        candidate_stagnation_epochs: int = 12,
        min_candidate_epochs: int = 50,
        max_candidate_epochs: int = 150,
        rprop_increase: float = 1.2,
        rprop_decrease: float = 0.5,
        rprop_delta_min: float = 0.0,
        rprop_delta_max: float = 50.0,
        rprop_delta_zero: float = 0.1,
        scale_inputs: bool = True,
        scale_target: bool = True,
        random_state: int | np.random.RandomState | None = None,
        n_threads: int | None = 1,
    ) -> None:
        self.max_hidden_units = max_hidden_units
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.validation_metric = validation_metric
        self.desired_error = desired_error
        self.activation_functions = activation_functions
        self.activation_steepnesses = activation_steepnesses
        self.candidate_groups = candidate_groups
        self.weight_multiplier = weight_multiplier
        self.candidate_limit = candidate_limit
        self.output_activation = output_activation
        self.output_steepness = output_steepness
        self.error_function = error_function
        self.output_change_fraction = output_change_fraction
        self.output_stagnation_epochs = output_stagnation_epochs
        self.min_output_epochs = min_output_epochs
        self.max_output_epochs = max_output_epochs
        self.candidate_change_fraction = candidate_change_fraction
        self.candidate_stagnation_epochs = candidate_stagnation_epochs
        self.min_candidate_epochs = min_candidate_epochs
        self.max_candidate_epochs = max_candidate_epochs
        self.rprop_increase = rprop_increase
        self.rprop_decrease = rprop_decrease
        self.rprop_delta_min = rprop_delta_min
        self.rprop_delta_max = rprop_delta_max
        self.rprop_delta_zero = rprop_delta_zero
        self.scale_inputs = scale_inputs
        self.scale_target = scale_target
        self.random_state = random_state
        self.n_threads = n_threads

    def fit(self, X: ArrayLike, y: ArrayLike) -> CascadeNetRegressor:
        """Grow and train the network on ``X`` and ``y`` (one target, or several as columns)."""
        growth = self._growth()
        rows, target = validate_data(self, X, y, multi_output=True, y_numeric=True, dtype=np.float64)
        self._single_output = target.ndim == 1
        Y = target.reshape(len(target), -1)
        self.n_outputs_ = Y.shape[1]
        self.x_mean_, self.x_scale_ = _column_scaling(rows) if self.scale_inputs else _identity(rows.shape[1])
        self.y_offset_, self.y_scale_ = self._target_scaling(Y) if self.scale_target else _identity(Y.shape[1])
        import torch

        from models._cascade_grow import grow

        rng = check_random_state(self.random_state)
        order = rng.permutation(len(rows))
        generator = torch.Generator().manual_seed(int(rng.randint(np.iinfo(np.int32).max)))
        n_val = self._n_validation(len(rows))
        val, train = order[:n_val], np.sort(order[n_val:])
        inputs = torch.from_numpy((rows - self.x_mean_) / self.x_scale_).to(torch.float32)
        targets = torch.from_numpy((Y - self.y_offset_) / self.y_scale_).to(torch.float32)
        with _threads(self.n_threads):
            net, curve = grow(inputs[train], targets[train], inputs[val], targets[val], growth, generator)
        self.hidden_weights_ = [w.numpy() for w in net.hidden_weights]
        self.hidden_activations_ = list(net.hidden_activations)
        self.hidden_steepnesses_ = np.array(net.hidden_steepnesses, dtype=np.float64)
        self.output_weights_ = net.output_weights.numpy()
        self.output_activation_, self.output_steepness_ = self.output_activation, float(self.output_steepness)
        self.n_hidden_units_ = len(net.hidden_weights)
        self.learning_curve_ = {
            "hidden_units": np.array(curve.hidden_units),
            "train_mse": np.array(curve.train_mse),
            "validation_mse": np.array(curve.validation_mse),
            "validation_mae": np.array(curve.validation_mae),
            "epochs": np.array(curve.epochs),
        }
        self.n_epochs_ = int(curve.epochs[-1])
        return self

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Predicted targets for the rows of ``X``."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        inputs = ((X - self.x_mean_) / self.x_scale_).astype(DTYPE)
        outputs = forward(
            inputs,
            self.hidden_weights_,
            self.hidden_activations_,
            list(self.hidden_steepnesses_),
            self.output_weights_,
            self.output_activation_,
            self.output_steepness_,
        )
        outputs = outputs.T.astype(np.float64)
        Y = outputs * self.y_scale_ + self.y_offset_
        return Y[:, 0] if self._single_output else Y

    def __sklearn_tags__(self) -> Any:
        """Regressor tags: several targets at once are supported."""
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def _growth(self) -> Growth:
        """The run's settings, checked."""
        from models._cascade_grow import Growth
        from models._cascade_train import Phase, Rprop

        unknown = sorted({*self.activation_functions, self.output_activation} - set(AFFINE))
        if unknown:
            raise ValueError(f"unknown activation(s) {', '.join(unknown)}; known: {', '.join(AFFINE)}")
        if self.validation_metric not in ("mae", "mse"):
            raise ValueError(f"validation_metric must be 'mae' or 'mse', got {self.validation_metric!r}")
        if self.error_function not in ("linear", "tanh"):
            raise ValueError(f"error_function must be 'linear' or 'tanh', got {self.error_function!r}")
        if self.max_hidden_units < 0 or self.candidate_groups < 1 or self.n_iter_no_change < 1:
            raise ValueError("need max_hidden_units >= 0, candidate_groups >= 1 and n_iter_no_change >= 1")
        if not self.activation_functions or not self.activation_steepnesses:
            raise ValueError("need at least one candidate activation function and steepness")
        if not 0.0 <= (self.validation_fraction or 0.0) < 1.0:
            raise ValueError(f"validation_fraction must lie in [0, 1), got {self.validation_fraction}")
        return Growth(
            max_hidden=self.max_hidden_units,
            desired_error=self.desired_error,
            n_iter_no_change=self.n_iter_no_change,
            validation_metric=self.validation_metric,
            candidate_activations=tuple(self.activation_functions),
            candidate_steepnesses=tuple(self.activation_steepnesses),
            candidate_groups=self.candidate_groups,
            weight_multiplier=self.weight_multiplier,
            candidate_limit=self.candidate_limit,
            output_activation=self.output_activation,
            output_steepness=self.output_steepness,
            tanh_error=self.error_function == "tanh",
            output_phase=Phase(
                self.output_change_fraction,
                self.output_stagnation_epochs,
                self.min_output_epochs,
                self.max_output_epochs,
            ),
            candidate_phase=Phase(
                self.candidate_change_fraction,
                self.candidate_stagnation_epochs,
                self.min_candidate_epochs,
                self.max_candidate_epochs,
            ),
            rprop=Rprop(
                self.rprop_increase,
                self.rprop_decrease,
                self.rprop_delta_min,
                self.rprop_delta_max,
                self.rprop_delta_zero,
            ),
        )

    def _n_validation(self, n_rows: int) -> int:
        """Held-out rows: the fraction, rounded down; none when it would leave fewer than two to train on."""
        n_val = int((self.validation_fraction or 0.0) * n_rows)
        return n_val if n_rows - n_val >= 2 else 0

    def _target_scaling(self, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """z-scores for a linear output; for a bounded one, the targets' span onto the middle of its range."""
        if self.output_activation == "linear":
            return _column_scaling(Y)
        from models._cascade_activations import value_range

        low, high = value_range(self.output_activation)
        middle, half = (low + high) / 2, BOUNDED_TARGET_SHARE * (high - low) / 2
        y_middle = (Y.max(0) + Y.min(0)) / 2
        y_half = (Y.max(0) - Y.min(0)) / 2
        scale = np.where(y_half > 0, y_half, 1.0) / half
        return y_middle - middle * scale, scale


def _column_scaling(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and standard deviation (1 for a constant column)."""
    scale = A.std(0)
    return A.mean(0), np.where(scale > 0, scale, 1.0)


def _identity(n_columns: int) -> tuple[np.ndarray, np.ndarray]:
    """Offsets 0 and scales 1: no scaling."""
    return np.zeros(n_columns), np.ones(n_columns)


@contextmanager
def _threads(n: int | None) -> Iterator[None]:
    """Torch runs on ``n`` threads inside (unchanged when ``n`` is None); the previous count is restored."""
    import torch

    previous = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
