"""What every command shares: the consoles, settings, the store, the one-line error, ``KEY=VALUE`` options, a service."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer._click import Context, Parameter
from typer.core import TyperArgument, TyperCommand

if TYPE_CHECKING:
    from predictor.catalog import Catalog
    from predictor.oracle import RuntimeOracle
    from predictor.settings import Settings
    from predictor.store import MeasurementStore
    from serving.client import PredictorClient

T = TypeVar("T")
console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)


class PathsArgument(TyperArgument):
    """A repeated path argument whose help types it as ``<file>...``, where typer prints ``<list[Path]>``."""

    def display_type_rich(self, ctx: Context) -> str | None:
        return f"<{self.type_descriptor.path_type}>..."


class PathsCommand(TyperCommand):
    """A command whose repeated path arguments are :class:`PathsArgument` in its help."""

    def get_params(self, ctx: Context) -> list[Parameter]:
        params = super().get_params(ctx)
        for param in params:
            if isinstance(param, TyperArgument) and param.type_descriptor.is_list:
                # typer builds the argument and takes no class for it: it becomes the subclass, which only adds help.
                param.__class__ = PathsArgument
        return params


def load_settings() -> Settings:
    """The settings from the environment (``PREDICTOR_*``), read anew by each command (imported here: pydantic is slow)."""
    from predictor.settings import Settings

    return Settings()


def settings_error(exc: BaseException) -> str | None:
    """One line for ``PREDICTOR_*`` values a settings class of :data:`cli.settings.GROUPS` refused (each variable and
    why, never its value: it may be a token); None for any other error, which stays the error it is."""
    # loaded by whoever built the settings; not imported here (slow)
    validation = sys.modules.get("pydantic_core")
    if validation is None or not isinstance(exc, validation.ValidationError):
        return None
    from cli.settings import GROUPS

    refused = next((g.settings for g in GROUPS if g.settings.__name__ == exc.title), None)
    if refused is None:
        return None
    prefix = str(refused.model_config.get("env_prefix", ""))
    reasons = [
        f"{(prefix + str(e['loc'][0])).upper() if e['loc'] else refused.__name__}: {e['msg'].removeprefix('Value error, ')}"
        for e in exc.errors()
    ]
    return "; ".join(reasons)


def parse_pairs(items: list[str] | None, what: str) -> dict[str, str]:
    """Parse repeated ``key=value`` options."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint=what)
        out[key] = value
    return out


def parse_duration(text: str, what: str) -> float:
    """Seconds in ``90s``, ``30m``, ``2h`` or a bare number of seconds (option ``what``)."""
    units = {"s": 1, "m": 60, "h": 3600}
    try:
        if text[-1] in units:
            return float(text[:-1]) * units[text[-1]]
        return float(text)
    except (ValueError, IndexError):
        raise typer.BadParameter(f"not a duration: {text!r} (use e.g. 90s, 30m, 2h)", param_hint=what) from None


def typed_params(raw: dict[str, str], algorithm: str, catalog: Any) -> dict[str, Any]:
    """Convert ``--param`` strings to the types the catalog declares."""
    schema = catalog.algorithm(algorithm).parameters
    converters = {"int": int, "float": float}
    out: dict[str, Any] = {}
    for key, value in raw.items():
        kind = schema[key].type if key in schema else "string"
        try:
            out[key] = converters[kind](value) if kind in converters else value
        except ValueError:
            raise typer.BadParameter(f"{key}={value!r} is not a valid {kind}", param_hint="--param") from None
    return out


def open_store(settings: Settings) -> MeasurementStore:
    """The settings' measurement store, migrated to the newest schema."""
    from predictor.store import MeasurementStore

    store = MeasurementStore(settings.resolved_store_url)
    store.migrate()
    return store


def print_table(table: Table) -> None:
    """Print ``table`` whole on standard output, as wide as its widest row: no cell cut to ``…`` at a terminal's or a pipe's 80;
    a title wider than the table is printed on its own line above it rather than wrapped."""
    natural = Console(width=1_000_000).measure(table).maximum
    out = Console(width=max(console.width, natural, len(str(table.title or ""))))
    if table.title is not None and len(str(table.title)) > natural:
        out.print(Text(str(table.title), style="italic"), no_wrap=True)
        table.title = None
    out.print(table)


def plain(value: object) -> Text:
    """``value`` as literal text: no markup read in it, and control characters (a stored terminal escape) shown as ``\\x1b``."""
    text = str(value)
    return Text("".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text))


def fail(message: str) -> typer.Exit:
    """Print ``message`` as one error line: literal (no markup read in it, control characters such as a terminal escape
    in a name someone typed shown as ``\x1b``), every address in it as its scheme, host and port only (a registry's or
    a service's URL may carry a password or a token); raise what it returns to exit with status 2."""
    from predictor.addresses import redact_addresses

    err_console.print(Text.assemble(("error:", "red"), " ", plain(redact_addresses(message))))
    return typer.Exit(code=2)


def from_service(url: str, ask: Callable[[PredictorClient], T]) -> T:
    """``ask`` a running service; an error answer, no answer or a foreign one is one CLI error line naming the URL."""
    import httpx

    from serving.client import PredictorClient, PredictorError

    try:
        with PredictorClient(url) as client:
            return ask(client)
    except PredictorError as exc:
        raise fail(f"{url} answered {exc}") from None
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise fail(f"cannot reach {url}: {exc or type(exc).__name__}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise fail(f"{url} did not answer like a runtime-predictor service ({type(exc).__name__}: {exc})") from None


def local_oracle(settings: Settings, catalog: Catalog, algorithms: Collection[str] | None = None) -> RuntimeOracle:
    """The runtime oracle of the registered champions (of ``algorithms`` alone, if given), built here as the service
    would build it."""
    from predictor.oracle import build_oracle

    return build_oracle(catalog, settings, open_store(settings).profile_table(), algorithms)


def repeat_passes(
    step: Callable[[], T], run: Callable[[threading.Event], None], report: Callable[[T], None], once: bool, doing: str
) -> None:
    """One pass reported (``--once``), or passes until Ctrl-C."""
    if once:
        report(step())
        return
    console.print(f"{doing} (Ctrl-C stops)")
    try:
        run(threading.Event())
    except KeyboardInterrupt:
        console.print("stopped")
