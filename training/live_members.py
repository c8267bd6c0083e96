"""Which champions learn live: after a training session, each pair whose alias moved gets its live online member in
the store (:mod:`predictor.online`), when its newly served version is one online member of the zoo, or none."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from models.online import AsymmetricOnlineRegressor
from models.zoo import learns_online, make_model
from predictor.domain import Target
from predictor.online import LiveMember
from training.pipeline import ChampionBook, TrainingOutcome


class LiveMembers(Protocol):
    """Where live members are kept: the measurement store (or its in-memory twin)."""

    def set_live_member(self, key: tuple[str, str, Target], member: LiveMember | None) -> None: ...


def live_member(
    algorithm: str,
    platform: str,
    target: Target,
    composition: Mapping[str, int],
    version: str,
    model: Any,
    feature_names: Sequence[str],
) -> LiveMember | None:
    """The live member of a newly served champion, a copy of its fitted model, when it is one online member of the zoo;
    else None (a champion that does not learn run by run)."""
    if len(composition) != 1:
        return None
    (member,) = composition
    if not learns_online(member) or not isinstance(model, AsymmetricOnlineRegressor):
        return None
    copy = AsymmetricOnlineRegressor.from_state(make_model(member).get_params(), model.state())
    return LiveMember(algorithm, platform, target, member, version, list(feature_names), copy)


def refresh_live_members(store: LiveMembers, book: ChampionBook, outcomes: Iterable[TrainingOutcome]) -> None:
    """For each outcome whose alias moved to a version this session registered, make the store's live member of the pair
    that version's (or none); other pairs keep theirs."""
    for o in outcomes:
        if o.version is None or o.version not in o.registered:
            continue
        served = book.served_model(o.algorithm, o.platform, o.target)
        member = None if served is None else live_member(o.algorithm, o.platform, o.target, *served)
        store.set_live_member((o.algorithm, o.platform, o.target), member)
