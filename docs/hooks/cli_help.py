"""MkDocs hook: fills the CLI page with every command's ``--help``, read from the installed ``predictor`` command.

The page keeps a marker line ``<!-- predictor --help -->``; the hook replaces it with one section per
command (``predictor``, ``predictor ingest``, ..., ``predictor models list``), each the plain-text help
click prints (``TYPER_USE_RICH=0``), so the page never drifts from the code. The command is found through
its console-script entry point, wherever the package that defines it lives.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

MARKER = "<!-- predictor --help -->"

_WALK = r"""
import json, sys
from importlib.metadata import entry_points
import typer

(script,) = entry_points(group="console_scripts", name="predictor")
command = typer.main.get_command(script.load())
out = []

def walk(cmd, name, parent):
    ctx = cmd.context_class(cmd, info_name=name, parent=parent, terminal_width=100, max_content_width=100)
    out.append([ctx.command_path, cmd.get_help(ctx)])
    if hasattr(cmd, "list_commands"):  # a group (typer vendors its own click: duck-typed)
        for sub in cmd.list_commands(ctx):
            walk(cmd.get_command(ctx, sub), sub, ctx)

walk(command, "predictor", None)
json.dump(out, sys.stdout)
"""


def _helps() -> list[tuple[str, str]]:
    """Every command's path and plain help text, from a fresh interpreter (typer reads TYPER_USE_RICH at import)."""
    env = {**os.environ, "TYPER_USE_RICH": "0", "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _WALK], env=env, capture_output=True, text=True, check=True, timeout=120
    )
    return [(path, text) for path, text in json.loads(done.stdout)]


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ANN001 (MkDocs' hook signature)
    if MARKER not in markdown:
        return markdown
    sections = [f"### `{path}`\n\n```text\n{text.rstrip()}\n```\n" for path, text in _helps()]
    return markdown.replace(MARKER, "\n".join(sections))
