"""``python -m predictor`` is the ``predictor`` command."""

from predictor.cli import app

app(prog_name="predictor")
