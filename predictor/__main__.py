"""``python -m predictor`` is the ``predictor`` command (the CLI lives above the core: the one import the layers allow up)."""

from cli.app import app

# not when a worker process started by spawn (``predictor serve --workers N``) imports this module
if __name__ == "__main__":
    app(prog_name="predictor")
