"""The ``predictor`` command: one entry point, its subcommands gathered from one module per group.

Every module imports what its commands need inside them, so ``--help``, ``--version`` and a command that asks a
service start without loading pandas, the model zoo, MLflow or the web server (tests/cli/test_app.py checks it).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from rich.text import Text
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
from typer.core import TyperGroup

from cli import learn, measure, plan, probe, serve, simulate, slurm
from cli.common import err_console, plain, settings_error
from predictor import __version__
from predictor.addresses import RedactingFormatter


class OneLineErrors(TyperGroup):
    """The top group: a bad option, value or command is one ``error:`` line, as every command's own errors are."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the command line; click's boxed usage error becomes one line naming the command's --help, and a
        ``PREDICTOR_*`` value a settings class refuses one line naming the variable; exit status 2."""
        # what a command logs without a handler of its own: addresses redacted
        if logging.lastResort is not None:
            logging.lastResort.setFormatter(RedactingFormatter())
        try:
            code = super().main(
                args, prog_name, complete_var, standalone_mode=False, windows_expand_args=windows_expand_args, **extra
            )
        except NoArgsIsHelpError as exc:
            exc.show()
            code = exc.exit_code
        except ClickException as exc:
            ctx = exc.ctx if isinstance(exc, UsageError) else None
            where = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
            err_console.print(Text.assemble(("error:", "red"), " ", plain(exc.format_message() + where)))
            code = exc.exit_code
        except typer.Abort:
            err_console.print("aborted")
            code = 1
        # a bad PREDICTOR_* value is one line too; anything else stays its traceback
        except Exception as exc:
            if (refused := settings_error(exc)) is None:
                raise
            err_console.print(Text.assemble(("error:", "red"), " ", plain(refused)))
            code = 2
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    cls=OneLineErrors, help="Runtime prediction for heterogeneous clusters.", no_args_is_help=True, add_completion=False
)
for group in (measure, learn, serve, simulate, plan, slurm):
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
