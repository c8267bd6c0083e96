"""Client paths resolve only to files, or database prefixes, under the data roots; answers name roots, never their place."""

from __future__ import annotations

from pathlib import Path

import pytest

from predictor.paths import PathNotAllowed, PathNotFound, PathRefused, resolve_under_roots, root_names, without_roots


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


@pytest.mark.parametrize("value", ["db/n", "db/nr", "db", "../data/db/missing", "x" * 300, "db/" + "y" * 256 + ".fa"])
def test_nothing_there_under_a_root_is_not_found_with_its_reason(root: Path, value: str) -> None:
    with pytest.raises(PathNotFound) as refused:
        resolve_under_roots(value, [root])
    assert refused.value.status == 422 and "under the data roots" in refused.value.detail
    assert str(root) not in refused.value.detail and len(refused.value.detail) < 400


@pytest.mark.parametrize("value", ["/etc/passwd", "/etc/pass", "../secret.fa", "../../x"])
def test_a_path_leading_outside_is_forbidden_and_names_the_root(root: Path, value: str) -> None:
    with pytest.raises(PathNotAllowed) as refused:
        resolve_under_roots(value, [root])
    assert refused.value.status == 403 and "outside the data roots (data)" in refused.value.detail
    assert str(root.parent) not in refused.value.detail


@pytest.mark.parametrize("value", [42, 4.5, True, "", "a\x00b", None])
def test_a_value_that_is_no_path_is_a_422(root: Path, value: object) -> None:
    with pytest.raises(PathRefused) as refused:
        resolve_under_roots(value, [root])
    assert type(refused.value) is PathRefused and refused.value.status == 422 and "text path" in refused.value.detail


def test_a_prefix_with_a_member_linked_outside_is_refused(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.nin"
    outside.write_text("x")
    (root / "db" / "nr.nin").symlink_to(outside)
    with pytest.raises(PathNotAllowed):
        resolve_under_roots("db/nr", [root])


def test_roots_are_named_by_folder_and_scrubbed_from_messages(tmp_path: Path) -> None:
    roots = [tmp_path / "a" / "inputs", tmp_path / "b" / "inputs", tmp_path / "data"]
    assert list(root_names(roots).values()) == ["inputs", "inputs#2", "data"]
    message = f"{roots[1].resolve()}/q.fa: not FASTA (seen in {roots[2].resolve()}/x)"
    assert without_roots(message, roots) == "inputs#2/q.fa: not FASTA (seen in data/x)"
