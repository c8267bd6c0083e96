"""Run FANN's own Cascade2 (Debian ``libfann-dev``) on train/test data through a small C driver.

The driver (``fann_cascade.c``) is compiled on first use with gcc into a cache folder,
keyed by its source's hash. Inputs and targets are z-scored with the training rows'
statistics before FANN sees them (the per-column scaling ``CascadeNetRegressor`` does
itself), and FANN trains a LINEAR output with the LINEAR error function; every other
setting is FANN's default. Per-step MSEs are of the scaled target, as FANN reports them.

    from benchmarks.fann.driver import run_cascade2, run_cascade2_csv
    result = run_cascade2_csv("train.csv", "test.csv", target="wall_seconds", max_neurons=30, seed=1)
    result.predictions, result.hidden_units, result.steps, result.fit_seconds
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

SOURCE = Path(__file__).with_name("fann_cascade.c")
HEADER = Path("/usr/include/fann.h")


class FannUnavailable(RuntimeError):
    """FANN's headers or gcc are missing, or the driver does not build."""


@dataclass(frozen=True)
class GrowthStep:
    """FANN's report after one output phase: hidden units, training and test MSE, epochs so far."""

    hidden_units: int
    train_mse: float
    test_mse: float
    epochs: int


@dataclass(frozen=True)
class Cascade2Result:
    """What one Cascade2 run gave: test predictions (target units), final size, growth steps, fit seconds."""

    predictions: np.ndarray
    hidden_units: int
    steps: list[GrowthStep]
    train_mse: float
    test_mse: float
    fit_seconds: float


def fann_available() -> bool:
    """Whether libfann-dev's headers and gcc are installed."""
    return HEADER.exists() and shutil.which("gcc") is not None


def cache_dir() -> Path:
    """Where compiled drivers live: ``$XDG_CACHE_HOME/runtime-predictor/fann`` (``~/.cache`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "runtime-predictor" / "fann"


def driver_binary(directory: Path | None = None) -> Path:
    """The compiled driver, built now if this source version has not been built yet."""
    if not fann_available():
        raise FannUnavailable(f"need {HEADER} (apt-get install libfann-dev) and gcc")
    source = SOURCE.read_bytes()
    directory = directory or cache_dir()
    binary = directory / f"fann_cascade-{hashlib.sha256(source).hexdigest()[:16]}"
    if binary.exists():
        return binary
    directory.mkdir(parents=True, exist_ok=True)
    partial = directory / f"{binary.name}.{os.getpid()}.tmp"
    build = subprocess.run(
        ["gcc", "-O2", "-o", str(partial), str(SOURCE), "-lfann", "-lm"], capture_output=True, text=True, check=False
    )
    if build.returncode != 0:
        raise FannUnavailable(f"gcc could not build {SOURCE.name}:\n{build.stderr}")
    partial.replace(binary)
    return binary


def _write_fann_data(path: Path, X: np.ndarray, Y: np.ndarray) -> None:
    """Write rows in FANN's training-file format."""
    lines = [f"{X.shape[0]} {X.shape[1]} {Y.shape[1]}"]
    for x, y in zip(X, Y, strict=True):
        lines.append(" ".join(f"{v:.9g}" for v in x))
        lines.append(" ".join(f"{v:.9g}" for v in y))
    path.write_text("\n".join(lines) + "\n")


def _zscores(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and standard deviation (1 for a constant column)."""
    scale = A.std(0)
    return A.mean(0), np.where(scale > 0, scale, 1.0)


def run_cascade2(
    X_train: ArrayLike,
    y_train: ArrayLike,
    X_test: ArrayLike,
    y_test: ArrayLike | None = None,
    *,
    max_neurons: int = 30,
    seed: int = 0,
    desired_error: float = 0.0,
    output_steepness: float = 0.5,
    timeout: float | None = None,
) -> Cascade2Result:
    """Grow FANN's Cascade2 on the training rows to ``max_neurons`` hidden units and predict the test rows."""
    X_tr, X_te = np.asarray(X_train, dtype=float), np.asarray(X_test, dtype=float)
    y_tr = np.asarray(y_train, dtype=float)
    Y_tr = y_tr.reshape(len(y_tr), -1)
    Y_te = np.zeros((len(X_te), Y_tr.shape[1])) if y_test is None else np.asarray(y_test, float).reshape(len(X_te), -1)
    x_mean, x_scale = _zscores(X_tr)
    y_mean, y_scale = _zscores(Y_tr)
    binary = driver_binary()
    with tempfile.TemporaryDirectory(prefix="fann-") as work:
        train_file, test_file = Path(work) / "train.data", Path(work) / "test.data"
        _write_fann_data(train_file, (X_tr - x_mean) / x_scale, (Y_tr - y_mean) / y_scale)
        _write_fann_data(test_file, (X_te - x_mean) / x_scale, (Y_te - y_mean) / y_scale)
        command = [
            str(binary),
            str(train_file),
            str(test_file),
            str(seed),
            str(max_neurons),
            repr(float(desired_error)),
            "FANN_LINEAR",
            "FANN_ERRORFUNC_LINEAR",
            repr(float(output_steepness)),
        ]
        run = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if run.returncode != 0:
        raise RuntimeError(f"{binary.name} failed ({run.returncode}): {run.stderr.strip()}")
    return _parse(run.stdout, y_mean, y_scale, y_tr.ndim == 1)


def _parse(output: str, y_mean: np.ndarray, y_scale: np.ndarray, single: bool) -> Cascade2Result:
    """Read the driver's records back into a result, predictions in target units."""
    steps, predictions = [], []
    final: list[str] = []
    seconds = float("nan")
    for line in output.splitlines():
        kind, *fields = line.split()
        if kind == "step":
            steps.append(GrowthStep(int(fields[0]), float(fields[1]), float(fields[2]), int(fields[3])))
        elif kind == "final":
            final = fields
        elif kind == "seconds":
            seconds = float(fields[0])
        elif kind == "pred":
            predictions.append([float(v) for v in fields])
    Y = np.array(predictions).reshape(len(predictions), len(y_mean)) * y_scale + y_mean
    return Cascade2Result(
        predictions=Y[:, 0] if single else Y,
        hidden_units=int(final[0]),
        steps=steps,
        train_mse=float(final[1]),
        test_mse=float(final[2]),
        fit_seconds=seconds,
    )


def run_cascade2_csv(train_csv: str | Path, test_csv: str | Path, target: str, **settings: Any) -> Cascade2Result:
    """:func:`run_cascade2` on two CSV files: every numeric column but ``target`` is an input."""
    train, test = pd.read_csv(train_csv), pd.read_csv(test_csv)
    inputs = [c for c in train.columns if c != target and pd.api.types.is_numeric_dtype(train[c])]
    y_test = test[target].to_numpy(float) if target in test else None
    return run_cascade2(train[inputs], train[target].to_numpy(float), test[inputs], y_test, **settings)
