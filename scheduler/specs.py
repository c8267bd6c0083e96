"""The one grammar of the scheduler's specs, and the parser that turns a policy's spec into a typed object.

The command line, the API (a policy by name) and the benchmarks name a policy by a short text. This module reads
that text and gives a :class:`~scheduler.policies.PolicyChoice`; the simulator's specs (an estimate source, a
workload, a cluster: ``simulator/scenarios.py``) follow the same grammar through :func:`name_and_options` and
:func:`bind_options`.

    SPEC    = NAME [ ":" OPTIONS ]
    OPTIONS = OPTION { "," OPTION }
    OPTION  = KEY "=" VALUE | VALUE

- NAME ends at the first colon. It names a registered policy, an estimate source, a workload or a cluster, or
  (workloads and clusters) a file by its suffix: ``.csv`` or ``.swf`` workloads, ``.machines`` or
  ``.yaml``/``.yml`` clusters. A path holding a colon cannot be named.
- KEY is a keyword parameter of what NAME builds (a policy's constructor, a generator, ...), so a thing's options
  are its parameters. A bare VALUE, first only, sets the one parameter that takes it: ``noisy:0.5`` (sigma),
  ``model:linear_log`` (member), ``catalog:4`` (per_platform).
- VALUE is read as the parameter's declared type: ``true`` or ``false`` for a flag (no other word), a whole number,
  a number, one of a choice's words, text; ``a+b`` for a list of names; ``ALG@PLATFORM:GAIN;...`` for warm gains.
- A list of specs (``--policies``, ``--estimates``) separates them with commas; a piece with ``=`` and no ``:``
  continues the spec before it: ``edf:objective=makespan,deferral=false,fcfs`` is two specs.

Every mistake is a :class:`SpecError` (a ValueError) naming what was parsed, the option, the value and what was
expected, e.g. ``policy 'edf': option 'objective' expects one of makespan, flowtime, got 'bogus'``.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from scheduler.policies import POLICIES, PolicyChoice
from scheduler.policies.profile_driven import WarmGain
from scheduler.policy import Policy

# a spec's options as (KEY, VALUE) text; KEY None for the bare first value
Items = list[tuple[str | None, str]]


class SpecError(ValueError):
    """A spec that does not parse: the message names the part at fault and what was expected."""


class _UnreadableSpec(ValueError):
    """A value that is not of its parameter's type; the message says what was expected."""


def parse_policy(text: str) -> PolicyChoice:
    """``NAME[:KEY=VALUE,...]``: a registered policy (``scheduler.policies.POLICIES``) and its options."""
    name, items = name_and_options(text, "policy")
    if name not in POLICIES:
        raise SpecError(f"unknown policy {name!r}; known: {', '.join(sorted(POLICIES))}")
    return PolicyChoice(name, bind_options("policy", name, POLICIES[name].factory, items))


def make_policy(text: str) -> Policy:
    """A new policy from its spec (``parse_policy(text).build()``)."""
    return parse_policy(text).build()


def split_specs(text: str) -> list[str]:
    """``a,b:k=1,j=2,c`` -> ``[a, b:k=1,j=2, c]``: a ``key=value`` piece continues the spec before it."""
    specs: list[str] = []
    for piece in (p.strip() for p in text.split(",")):
        if not piece:
            continue
        if specs and "=" in piece and ":" not in piece:
            specs[-1] += f",{piece}"
        else:
            specs.append(piece)
    return specs


def parse_warm_gain(text: str) -> dict[tuple[str, str], float]:
    """``"blastn@type6:0.21;blastp@type2:0.125"`` -> {("blastn", "type6"): 0.21, ...}: warm gains, each in [0, 1)."""
    out: dict[tuple[str, str], float] = {}
    for item in filter(None, (part.strip() for part in text.split(";"))):
        pair, sep, value = item.rpartition(":")
        algorithm, at, platform = pair.partition("@")
        if not sep or not at or not algorithm or not platform:
            raise ValueError(f"warm gain {item!r} is not ALGORITHM@PLATFORM:GAIN")
        try:
            gain = float(value)
        except ValueError:
            raise ValueError(f"warm gain {item!r}: {value!r} is not a number") from None
        if not 0.0 <= gain < 1.0:
            raise ValueError(f"warm gain {item!r}: the gain must be in [0, 1), got {gain}")
        out[(algorithm, platform)] = gain
    return out


def name_and_options(text: str, what: str) -> tuple[str, Items]:
    """NAME and its options, as text (the grammar of the module docstring)."""
    name, colon, tail = text.strip().partition(":")
    name = name.strip()
    if not name:
        raise SpecError(f"{what} spec {text!r} has no name")
    items: Items = []
    for index, piece in enumerate(p.strip() for p in tail.split(",")) if colon else ():
        key, equals, value = piece.partition("=")
        if equals and key.strip():
            items.append((key.strip(), value.strip()))
        elif piece and not equals and index == 0:
            items.append((None, piece))
        elif piece:
            raise SpecError(f"{what} {name!r}: option {piece!r} is not KEY=VALUE")
    return name, items


def bind_options(
    what: str,
    name: str,
    factory: Callable[..., Any],
    items: Items,
    positional: str | None = None,
    hidden: set[str] | None = None,
) -> dict[str, Any]:
    """The options ``items`` give ``factory``, each read as its parameter's type; unknown or unreadable ones are errors."""
    parameters = {
        p.name: p
        for p in inspect.signature(factory, eval_str=True).parameters.values()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in (hidden or set())
    }
    options: dict[str, Any] = {}
    for key, raw in items:
        if key is None:
            if positional is None:
                raise SpecError(f"{what} {name!r} takes no bare value ({raw!r}); give KEY=VALUE")
            key = positional
        if key not in parameters:
            known = f"its options: {', '.join(parameters)}" if parameters else "it takes no options"
            raise SpecError(f"{what} {name!r} has no option {key!r}; {known}")
        if key in options:
            raise SpecError(f"{what} {name!r}: option {key!r} is given twice")
        try:
            options[key] = _read(parameters[key].annotation, raw)
        except _UnreadableSpec as exc:
            raise SpecError(f"{what} {name!r}: option {key!r} expects {exc}, got {raw!r}") from None
    return options


def _read(annotation: Any, raw: str) -> Any:
    """``raw`` as a value of ``annotation`` (see the module docstring), or _UnreadableSpec saying what was expected."""
    if annotation is bool:
        if raw.lower() not in ("true", "false"):
            raise _UnreadableSpec("true or false")
        return raw.lower() == "true"
    if annotation in (int, float):
        try:
            return annotation(raw)
        except ValueError:
            raise _UnreadableSpec("a whole number" if annotation is int else "a number") from None
    if annotation in (str, inspect.Parameter.empty):
        return raw
    if annotation is Path:
        return Path(raw)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        if raw not in args:
            raise _UnreadableSpec(f"one of {', '.join(map(str, args))}")
        return raw
    if origin in (Union, types.UnionType):
        expected = []
        for member in (a for a in args if a is not type(None)):
            try:
                return _read(member, raw)
            except _UnreadableSpec as exc:
                expected.append(str(exc))
        raise _UnreadableSpec(" or ".join(expected))
    if origin is tuple and args[1:] == (Ellipsis,):
        return tuple(_read(args[0], part.strip()) for part in raw.split("+") if part.strip())
    if annotation == WarmGain:
        try:
            return parse_warm_gain(raw)
        except ValueError as exc:
            raise _UnreadableSpec(f"warm gains ALGORITHM@PLATFORM:GAIN;... ({exc})") from None
    raise _UnreadableSpec(f"a {annotation}, which a spec cannot give")


def existing_file(name: str) -> Path:
    """The file a spec names, which must exist."""
    path = Path(name)
    if not path.exists():
        raise SpecError(f"no such file: {name}")
    return path
