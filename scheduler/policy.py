"""The policy interface: given the state, the oracle and the time, return orders; plus the registry of policies."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from scheduler.oracles import Oracle
from scheduler.orders import Order
from scheduler.state import State


class Event(str, Enum):
    """Why a scheduling pass runs (seed 001, Figs 6-10)."""

    NEW = "N"  # jobs submitted
    GAINED = "G"  # a machine came online
    LOST = "L"  # a machine went offline
    ENDED = "E"  # a job ended cleanly
    FAILED = "T"  # a job terminated with an error
    FOLLOWUP = "F"  # the loop's own pass after orders freed machines
    WAKE = "W"  # a time the policy asked to look again at (its optional ``wake_at()``)


@dataclass(frozen=True, slots=True)
class Context:
    """What a policy sees: the time, the state (read only), the oracle, and what it may disturb."""

    now: float
    state: State
    oracle: Oracle
    event: Event
    preempt: bool = False  # may cancel, pause or migrate running lower-priority jobs (high-priority arrivals)
    rebalance: bool = False  # may move running jobs onto idle machines when that gains significantly (G)
    arrivals: tuple[str, ...] = ()


class Policy(Protocol):
    """A scheduling policy: orders from a context; it never mutates the state itself."""

    name: str

    def schedule(self, ctx: Context) -> list[Order]: ...


POLICIES: dict[str, Callable[..., Policy]] = {}
NEEDS: dict[str, frozenset[str]] = {}  # policy name -> what a workload must provide for it (see Workload.provides)


def register_policy(name: str, needs: Iterable[str] = ()) -> Callable[[Callable[..., Policy]], Callable[..., Policy]]:
    """Add a policy factory under ``name`` (decorator); ``needs`` names the workload capabilities it relies on."""

    def add(factory: Callable[..., Policy]) -> Callable[..., Policy]:
        if name in POLICIES:
            raise ValueError(f"policy {name!r} is already registered")
        POLICIES[name] = factory
        NEEDS[name] = frozenset(needs)
        return factory

    return add


def applicable_policies(provides: Iterable[str]) -> list[str]:
    """Names of the registered policies whose needs a workload providing ``provides`` meets, sorted."""
    import scheduler.policies  # noqa: F401  (registers the bundled policies)

    offered = frozenset(provides)
    return sorted(name for name, needs in NEEDS.items() if needs <= offered)


def make_policy(spec: str) -> Policy:
    """A policy from ``name`` or ``name:key=value,...`` (values parsed as bool, int, float, else kept as text)."""
    import scheduler.policies  # noqa: F401  (registers the bundled policies)

    name, _, options = spec.partition(":")
    try:
        factory = POLICIES[name]
    except KeyError:
        raise KeyError(f"unknown policy {name!r}; known: {', '.join(sorted(POLICIES))}") from None
    kwargs: dict[str, Any] = {}
    for item in filter(None, options.split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"policy option {item!r} is not KEY=VALUE")
        kwargs[key.strip()] = parse_value(value.strip())
    return factory(**kwargs)


def parse_value(text: str) -> Any:
    """true/false, integers and floats become Python values; anything else stays a string."""
    lowered = text.lower()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off"):
        return False
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def split_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``NAME:key=value,...`` -> (NAME, options); a NAME may itself hold colons (paths) when no option follows."""
    name, sep, tail = spec.rpartition(":")
    if not sep or "=" not in tail:
        return spec, {}
    options = {}
    for item in tail.split(","):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"option {item!r} of {spec!r} is not KEY=VALUE")
        options[key.strip()] = parse_value(value.strip())
    return name, options
