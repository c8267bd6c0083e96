"""The ``predictor`` command: one entry point, its subcommands gathered from one module per group."""

from __future__ import annotations

from typing import Annotated

import typer

from cli import learn, measure, probe, serve, simulate, slurm
from predictor import __version__

app = typer.Typer(help="Runtime prediction for heterogeneous clusters.", no_args_is_help=True, add_completion=False)
for group in (measure, learn, serve, simulate, slurm):
    app.add_typer(group.commands)
app.add_typer(probe.commands, name="probe")


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"predictor {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Runtime prediction for heterogeneous clusters."""
