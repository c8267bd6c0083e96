"""Champion hot swap: follow the registry's ``champion`` aliases, load new versions off the request path, swap atomically.

A background thread refreshes every ``interval_s`` seconds (and ``POST /v1/models/reload`` refreshes at
once). A refresh asks the registry where each alias points, loads only versions not loaded yet, compiles
them, then hands the oracle a complete new map in one assignment: requests already running finish on the
old map. When the registry cannot be reached before anything was loaded, the champions cached on local
disk are served and the status says so. A champion the registry points at but that cannot be loaded, or
one served before whose registered model the registry no longer knows (an emptied or replaced registry),
keeps being served from memory or the disk cache, and the status names it as unavailable. Time and peak-memory
champions (:class:`~predictor.domain.Target`) are followed alike, in the same refresh and the same swap; a memory
champion's pair is labelled ``algorithm/platform (memory)``. A champion that learns online (:mod:`predictor.online`)
is served as the store's live copy of it has learned so far, swapped in again whenever that copy moves.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from predictor.champion_source import (
    ChampionSource,
    ChampionVersion,
    LoadedChampion,
    RegistryUnavailable,
    first_line,
)
from predictor.domain import Target
from predictor.online import LiveMember, holds, with_live_member
from predictor.oracle import Pair, ProfileTable, RuntimeOracle, ServedModel, serve_model
from predictor.registry import registered_name
from serving.metrics import ApiMetrics
from serving.telemetry import LOGGER_NAME

# how many registry waits loading the first champions may take before the cache is served
LOAD_WAIT_FACTOR = 20


@dataclass
class Status:
    """Where the served champions came from, and the last registry problem."""

    source: str = "none"  # registry | cache | none
    registry_error: str | None = None
    last_refresh: datetime | None = None
    # algorithm/platform -> why the registry's champion is not served
    unavailable: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Refresh:
    """What one refresh changed (pairs as ``algorithm/platform``), or why the registry could not be asked."""

    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    error: str | None = None


class ChampionWatcher:
    """Keeps the oracle's champions in step with the registry, with the disk cache as the fallback at start."""

    def __init__(
        self,
        oracle: RuntimeOracle,
        source: ChampionSource,
        pairs: list[Pair],
        *,
        interval_s: float,
        profile_table: Callable[[], ProfileTable],
        metrics: ApiMetrics,
        live_members: Callable[[], Mapping[tuple[str, str, Target], LiveMember]] = dict,
    ) -> None:
        self.oracle = oracle
        self.live_members = live_members
        self.source = source
        self.pairs = pairs
        self.interval_s = interval_s
        self.profile_table = profile_table
        self.metrics = metrics
        self.status = Status()
        self.loaded: dict[Target, dict[Pair, LoadedChampion]] = {target: {} for target in Target}
        self.log = logging.getLogger(LOGGER_NAME)
        self._refreshing = threading.Lock()  # one refresh at a time
        self._state = threading.RLock()  # guards loaded, status and the swap
        self._stop = threading.Event()
        # the registry said where the aliases point, or failed to
        self._answered = threading.Event()
        self._first = threading.Event()  # the first refresh is over
        self._thread: threading.Thread | None = None

    def start(self, wait_s: float) -> None:
        """Start polling; serve the disk cache unless the registry answers within ``wait_s`` and its champions load."""
        self._thread = threading.Thread(target=self._run, name="champion-watcher", daemon=True)
        self._thread.start()
        if self._answered.wait(wait_s) and self.status.registry_error is None:
            # the registry is up: give loading (cold imports) its time
            self._first.wait(wait_s * LOAD_WAIT_FACTOR)
        if self.status.source == "none":
            self.serve_cache()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def refresh(self, wait_s: float | None = None) -> Refresh:
        """Ask the registry where every alias points and swap in whatever moved; a registry failure keeps what is served.

        ``wait_s`` bounds the wait for a refresh already under way (the poller's); past it, nothing is done.
        """
        if not self._refreshing.acquire(timeout=-1 if wait_s is None else wait_s):
            return Refresh(
                error=f"another refresh has been under way for over {wait_s:g} s (the registry is slow to answer)"
            )
        try:
            return self._refresh()
        finally:
            self._refreshing.release()

    def _refresh(self) -> Refresh:
        """One refresh, under the refresh lock."""
        lookups = {}
        try:
            for target in Target:
                lookups[target] = self.source.lookup(self.pairs, target)
                # the registry answers: its time aliases are known
                self._answered.set()
        except RegistryUnavailable as exc:
            self._unavailable(str(exc))
            return Refresh(error=str(exc))
        finally:
            self._answered.set()
        fresh: dict[Target, dict[Pair, LoadedChampion]] = {target: {} for target in Target}
        changed: list[str] = []
        unavailable: dict[str, str] = {}
        for target, lookup in lookups.items():
            loaded, kept = self.loaded[target], fresh[target]
            for pair, version in lookup.found.items():
                current = loaded.get(pair)
                # not the number: a restore reuses numbers
                if current is not None and current.key == version.key:
                    kept[pair] = replace(current, origin="registry")
                    continue
                try:
                    kept[pair] = self.source.load(version)
                    changed.append(_label(pair, target))
                except Exception as exc:
                    self.log.exception(
                        "cannot load champion", extra={"fields": {"model": version.name, "version": version.version}}
                    )
                    self.metrics.reloads.labels("load_failed").inc()
                    problem = f"{_version(version)} cannot be loaded ({first_line(exc)})"
                    unavailable[_label(pair, target)] = self._keep(pair, target, kept, problem)
            for pair in lookup.unknown:
                if loaded.get(pair) is not None or self.source.cached_version(pair, target) is not None:
                    problem = f"the registry does not know {registered_name(*pair, target)}"
                    unavailable[_label(pair, target)] = self._keep(pair, target, kept, problem)
        removed = []
        for target in Target:
            for pair in self.loaded[target]:
                # the alias was withdrawn from a model the registry knows: forget it here too
                if pair not in fresh[target]:
                    self.source.forget(pair, target)
                    removed.append(_label(pair, target))
        self._swap(fresh, source="registry", error=None, unavailable=unavailable)
        self.metrics.reloads.labels("changed" if changed or removed else "unchanged").inc()
        if changed or removed:
            self.log.info("champions swapped", extra={"fields": {"changed": changed, "removed": removed}})
        if unavailable:
            self.log.warning("champions unavailable in the registry", extra={"fields": {"unavailable": unavailable}})
        return Refresh(changed, removed)

    def _keep(self, pair: Pair, target: Target, fresh: dict[Pair, LoadedChampion], problem: str) -> str:
        """Keep serving ``pair``'s champion of ``target`` from memory, else from the disk cache, into ``fresh``; say what is
        served."""
        kept = self.loaded[target].get(pair)
        if kept is None:
            try:
                kept = self.source.cached([pair], target).get(pair)
            except Exception as exc:
                self.log.exception("cannot load cached champion", extra={"fields": {"pair": _label(pair, target)}})
                return f"{problem}; the cached copy cannot be loaded either ({first_line(exc)}): no model serves it"
        if kept is None:
            return f"{problem}; no cached copy: no model serves it"
        fresh[pair] = kept
        where = "the disk cache" if kept.origin == "cache" else "memory"
        return f"{problem}; serving version {kept.champion.version} from {where}"

    def serve_cache(self) -> None:
        """Serve the champions cached on disk, unless the registry has answered already."""
        cached = {target: self.source.cached(self.pairs, target) for target in Target}
        count = sum(len(found) for found in cached.values())
        with self._state:
            if self.status.source == "registry":
                return
            self._swap(cached, source="cache" if count else "none", error=self.status.registry_error, unavailable={})
        self.log.warning(
            "serving cached champions", extra={"fields": {"champions": count, "error": self.status.registry_error}}
        )

    def _unavailable(self, error: str) -> None:
        with self._state:
            self.status.registry_error = error
        self.metrics.registry_up.set(0)
        self.metrics.reloads.labels("registry_unavailable").inc()
        self.log.warning("model registry unavailable", extra={"fields": {"error": error}})

    def _swap(
        self,
        loaded: dict[Target, dict[Pair, LoadedChampion]],
        *,
        source: str,
        error: str | None,
        unavailable: dict[str, str],
    ) -> None:
        """Compile what is new, then replace the oracle's time and memory models (and profile table) in one step."""
        served = {Target.TIME: self.oracle.models, Target.MEMORY: self.oracle.memory_models}
        models: dict[Target, dict[Pair, ServedModel]] = {target: {} for target in Target}
        live = self._live()
        for target, found in loaded.items():
            for pair, champion in found.items():
                existing = served[target].get(pair)
                member = live.get((*pair, target))
                if member is not None and member.version == champion.champion.version:
                    models[target][pair] = _live_model(existing, champion, member)
                    continue
                if existing is None or existing.champion is not champion.champion:
                    existing = serve_model(champion.champion, champion.examples)
                models[target][pair] = existing
        try:
            profile = self.profile_table()
        except Exception:
            self.log.exception("cannot refresh the profile table")
            profile = None
        with self._state:
            self.oracle.swap(models[Target.TIME], profile, memory=models[Target.MEMORY])
            self.loaded = loaded
            self.status = Status(source, error, datetime.now(UTC), unavailable)
        self.metrics.champions.set(sum(len(found) for found in models.values()))
        self.metrics.registry_up.set(1 if source == "registry" else 0)

    def _live(self) -> Mapping[tuple[str, str, Target], LiveMember]:
        """The store's live online members; none (logged) when the store cannot be read: the registered versions serve."""
        try:
            return self.live_members()
        except Exception:
            self.log.exception("cannot read the live online members")
            return {}

    def _run(self) -> None:
        """The poll loop: refresh now, then every ``interval_s`` until stopped (once only when it is 0)."""
        while True:
            try:
                self.refresh()
            except Exception:
                self.log.exception("champion refresh failed")
            self._first.set()
            if self.interval_s <= 0 or self._stop.wait(self.interval_s):
                return


def _live_model(existing: ServedModel | None, loaded: LoadedChampion, member: LiveMember) -> ServedModel:
    """The served model of a champion that learns online: its registered version with the live member's numbers, built
    again only when the member has learned since."""
    if existing is not None and holds(existing.champion, member):
        return existing
    return serve_model(with_live_member(loaded.champion, member), loaded.examples)


def _label(pair: Pair, target: Target = Target.TIME) -> str:
    """``algorithm/platform``, with `` (memory)`` after a memory champion's."""
    return f"{pair[0]}/{pair[1]}" + (" (memory)" if target is Target.MEMORY else "")


def _version(version: ChampionVersion) -> str:
    return f"{version.name} version {version.version}"
