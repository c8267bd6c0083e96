"""``python -m predictor`` is the ``predictor`` command (the CLI lives above the core: the one import the layers allow up)."""

from cli.app import app

app(prog_name="predictor")
