"""The rule file's exclusions and job-class switch, and the job class a job no rule or word maps is estimated by."""

from __future__ import annotations

from pathlib import Path

import pytest

from predictor.catalog import Catalog, load_catalog
from slurm.rules import JobMapping, Rules, RulesError, class_of, load_rules
from tests.conftest import CATALOG_YAML

CLASSES = """
  site-debug:
    parameters: {}
    implementations: {cpu-small: {}, gpu-a100: {}}
  site-all:
    parameters: {}
    implementations: {gpu-a100: {}}
"""


@pytest.fixture
def classes(tmp_path: Path) -> Catalog:
    """The test catalog with the job classes of a cluster named ``site``: its debug partition, and all of it."""
    path = tmp_path / "catalog.yaml"
    path.write_text(CATALOG_YAML + CLASSES)
    return load_catalog(path)


def test_a_job_is_estimated_by_its_partitions_class_else_the_clusters(classes: Catalog) -> None:
    rules = Rules(partitions={"debug": "gpu-a100"})
    assert class_of(rules, classes, "site", "debug") == JobMapping("site-debug", "gpu-a100")  # the rule file's platform
    assert class_of(Rules(), classes, "site", "debug") == JobMapping(
        "site-debug", "cpu-small"
    )  # else the class's first
    assert class_of(rules, classes, "site", "long") == JobMapping("site-all", "gpu-a100")
    assert class_of(rules, classes, "site", None) == JobMapping("site-all", "gpu-a100")
    assert class_of(rules, classes, "other", "debug") is None  # the catalog has no class of that cluster
    assert class_of(Rules(job_classes=False), classes, "site", "debug") is None


def test_the_rule_file_excludes_users_accounts_and_partitions(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text("job_classes: false\nexclude: {users: [ana, '1007'], accounts: [secret], partitions: [private]}\n")
    rules = load_rules(path)
    assert rules.job_classes is False
    assert rules.exclude.excludes("ana", None, None) and rules.exclude.excludes("1007", "proj", "debug")
    assert rules.exclude.excludes("bo", "secret", "debug") and rules.exclude.excludes(None, None, "private")
    assert not rules.exclude.excludes("bo", "proj", "debug") and not rules.exclude.excludes(None, None, None)
    assert load_rules(None).job_classes is True and not load_rules(None).exclude.excludes("ana", "secret", "private")
    path.write_text("exclude: {people: [ana]}\n")
    with pytest.raises(RulesError, match="exclude.people: Extra inputs are not permitted"):
        load_rules(path)
