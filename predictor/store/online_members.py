"""The ``online_members`` table: each served online champion's learned state (:class:`predictor.online.LiveMember`),
read, replaced, and moved on by the runs the store records, in the transaction that records them."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, delete, select, tuple_

from predictor.domain import Measurement, Target
from predictor.store.tables import online_members

# the learner is imported when a member exists: a store that has none stays as quick to import
if TYPE_CHECKING:
    from predictor.online import LiveMember

Key = tuple[str, str, Target]


def learn_in(conn: Connection, runs: Iterable[Measurement]) -> int:
    """Let every live member of the pairs among ``runs`` answer then learn them (in the order they ended), and write
    them back on ``conn``; how many runs were learned, summed over members. One read and one write per member."""
    runs = list(runs)
    pairs = {(m.algorithm, m.platform) for m in runs}
    if not pairs:
        return 0
    c = online_members.c
    stmt = select(online_members).where(tuple_(c.algorithm, c.platform).in_(sorted(pairs)))
    learned = 0
    for row in conn.execute(stmt).mappings().all():
        from predictor.online import LiveMember

        member = LiveMember.from_record(row)
        if count := member.learn(runs):
            learned += count
            conn.execute(online_members.update().where(c.id == row["id"]).values(_values(member)))
    return learned


def replace_in(conn: Connection, key: Key, member: LiveMember | None) -> None:
    """Make ``member`` the live member of ``key`` (None: the pair's champion does not learn online), on ``conn``."""
    algorithm, platform, target = key
    c = online_members.c
    conn.execute(
        delete(online_members).where(c.algorithm == algorithm, c.platform == platform, c.target == target.value)
    )
    if member is not None:
        conn.execute(online_members.insert().values(_values(member)))


def read(engine: Engine) -> dict[Key, LiveMember]:
    """Every live member, by pair and target."""
    with engine.connect() as conn:
        rows = conn.execute(select(online_members)).mappings().all()
    if not rows:
        return {}
    from predictor.online import LiveMember

    members = (LiveMember.from_record(row) for row in rows)
    return {m.key: m for m in members}


def revisions(engine: Engine) -> dict[Key, tuple[str, int]]:
    """(version, revision) of every live member: what a server compares to swap the ones that moved (a cheap read)."""
    c = online_members.c
    with engine.connect() as conn:
        rows = conn.execute(select(c.algorithm, c.platform, c.target, c.version, c.revision)).all()
    return {(a, p, Target(t)): (str(v), int(r)) for a, p, t, v, r in rows}


def _values(member: LiveMember) -> dict[str, object]:
    return {**member.record(), "updated_at": datetime.now(UTC)}
