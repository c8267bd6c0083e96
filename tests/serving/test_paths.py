"""Client paths resolve only to files, or database prefixes, under the data roots."""

from __future__ import annotations

from pathlib import Path

import pytest

from serving.paths import PathNotAllowed, resolve_under_roots


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    (data / "db").mkdir(parents=True)
    for suffix in ("nal", "00.nin", "00.nsq"):
        (data / "db" / f"nt.{suffix}").write_text("x")
    (data / "q.fa").write_text(">a\nACGT\n")
    return data


def test_a_file_and_a_database_prefix_resolve(root: Path) -> None:
    assert resolve_under_roots("q.fa", [root]) == (root / "q.fa").resolve()
    assert resolve_under_roots("db/nt", [root]) == (root / "db" / "nt").resolve()
    assert resolve_under_roots(str(root / "db" / "nt"), [root]) == (root / "db" / "nt").resolve()


@pytest.mark.parametrize("value", ["db/n", "db/nr", "db", "../data/db/missing", "/etc/passwd", "/etc/pass"])
def test_anything_else_is_refused(root: Path, value: str) -> None:
    with pytest.raises(PathNotAllowed, match="not a file under"):
        resolve_under_roots(value, [root])


def test_a_prefix_with_a_member_linked_outside_is_refused(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.nin"
    outside.write_text("x")
    (root / "db" / "nr.nin").symlink_to(outside)
    with pytest.raises(PathNotAllowed):
        resolve_under_roots("db/nr", [root])
