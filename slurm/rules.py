"""The site's rule file: which algorithm, platform and parameters a Slurm job runs, for estimates and for accounting.

A YAML file (``PREDICTOR_SLURM_RULES``)::

    partitions:            # Slurm partition -> catalog platform
      debug: cpu-small
    platform: cpu-small    # the platform of a partition not listed (optional)
    rules:                 # tried in order; the first that matches gives the algorithm and default parameters
      - name: "align-*"    # shell pattern on the job name (sbatch's default is the script's file name)
        algorithm: mafft
      - comment: "blast"   # regular expression searched in the job's --comment
        algorithm: blastn
        params: {evalue: 0.001}
    job_classes: true      # estimate the other jobs by their job class (<cluster>-<partition>, else <cluster>-all)
    exclude:               # jobs of these users, accounts or partitions: never estimated, nothing of them stored
      users: [alice]
      accounts: [secret]
      partitions: [private]

The job's own words (:mod:`slurm.words`) come on top, each overriding the one before: the rule's
``params``, the comment's ``predictor:`` words, ``PREDICTOR_JOB``, then ``#PREDICTOR`` lines. A job whose words
name the algorithm needs no rule. File parameters given relative are taken from the job's working directory.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from predictor.catalog import Catalog
from predictor.jobfeatures import file_parameters
from predictor.records import RowError, typed_params
from slurm.words import (
    NAMING,
    RESERVED,
    WordsError,
    parse_words,
    split_comment,
)


class RulesError(ValueError):
    """A rule file that cannot be read or is not valid."""


class MappingError(ValueError):
    """A job named an algorithm, platform or parameter that does not fit the catalog."""


class Rule(BaseModel):
    """One rule: what it matches (job name pattern, comment expression; both when both are given) and what it gives."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, description="Shell pattern on the job name.")
    comment: str | None = Field(default=None, description="Regular expression searched in the comment.")
    algorithm: str
    platform: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("comment")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {exc}") from None
        return value

    def matches(self, name: str, comment: str) -> bool:
        return (self.name is None or fnmatch.fnmatchcase(name, self.name)) and (
            self.comment is None or re.search(self.comment, comment) is not None
        )


class Exclude(BaseModel):
    """Users, accounts and partitions whose jobs the service leaves alone: no estimate, nothing stored."""

    model_config = ConfigDict(extra="forbid")

    users: frozenset[str] = frozenset()
    accounts: frozenset[str] = frozenset()
    partitions: frozenset[str] = frozenset()

    def excludes(self, user: str | None, account: str | None, partition: str | None) -> bool:
        """Whether a job of this user, account and partition is excluded (an unknown field matches nothing)."""
        return (user in self.users) or (account in self.accounts) or (partition in self.partitions)


class Rules(BaseModel):
    """The whole file; an empty one maps only jobs that name their algorithm themselves, and estimates the others by
    their job class."""

    model_config = ConfigDict(extra="forbid")

    partitions: dict[str, str] = Field(default_factory=dict)
    platform: str | None = None
    rules: list[Rule] = Field(default_factory=list)
    job_classes: bool = Field(default=True, description="Estimate jobs no rule or word maps by their job class.")
    exclude: Exclude = Field(default_factory=Exclude)


@dataclass(frozen=True)
class JobFacts:
    """What is known of a job when it is mapped: at submission all of it, from accounting its name, comment, partition."""

    name: str = ""
    comment: str = ""
    partition: str | None = None
    work_dir: str | None = None
    directives: str = ""  # the words of its #PREDICTOR lines
    # the value of its PREDICTOR_JOB variable
    environment: str = ""


@dataclass(frozen=True)
class JobMapping:
    """The algorithm, platform and typed parameters a job runs, and the served estimate its tag recorded (if any)."""

    algorithm: str
    platform: str
    params: dict[str, Any] = field(default_factory=dict)
    served: dict[str, str] = field(default_factory=dict)


def load_rules(path: Path | None) -> Rules:
    """The rule file at ``path`` (no path: no rules); RulesError saying what is wrong, naming the file."""
    if path is None:
        return Rules()
    try:
        raw = yaml.safe_load(Path(path).read_text()) or {}
        return Rules.model_validate(raw)
    except OSError as exc:
        raise RulesError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise RulesError(f"{path}: not YAML: {exc}") from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise RulesError(f"{path}: {problems}") from None


def map_job(rules: Rules, facts: JobFacts, catalog: Catalog) -> JobMapping | None:
    """The job's algorithm, platform and parameters; None when nothing names an algorithm (not a job of ours).

    MappingError when the words or the rule name what the catalog does not have, or words do not parse.
    """
    user, tagged = split_comment(facts.comment)
    rule = next((r for r in rules.rules if r.matches(facts.name, user)), None)
    try:
        words = [parse_words(text) for text in (tagged, facts.environment, facts.directives)]
    except WordsError as exc:
        raise MappingError(str(exc)) from None
    pairs: dict[str, Any] = {**(rule.params if rule else {})}
    for layer in words:
        pairs.update(layer)
    algorithm_name = pairs.get("algorithm") or (rule.algorithm if rule else None)
    if not algorithm_name:
        return None
    if algorithm_name not in catalog.algorithms:
        raise MappingError(f"unknown algorithm {algorithm_name!r}; known: {', '.join(sorted(catalog.algorithms))}")
    algorithm = catalog.algorithms[algorithm_name]
    platform = (
        pairs.get("platform")
        or (rule.platform if rule else None)
        or rules.partitions.get(facts.partition or "")
        or rules.platform
    )
    if platform is None and len(algorithm.platforms) == 1:
        platform = algorithm.platforms[0]
    if platform is None:
        raise MappingError(f"no platform for partition {facts.partition!r}: list it under partitions in the rule file")
    if platform not in algorithm.implementations:
        raise MappingError(f"{algorithm_name} has no implementation on platform {platform!r}")
    raw = {key: value for key, value in pairs.items() if key not in RESERVED}
    for name in file_parameters(algorithm):
        if name in raw and facts.work_dir and not Path(str(raw[name])).is_absolute():
            raw[name] = str(Path(facts.work_dir) / str(raw[name]))
    try:
        params = typed_params(algorithm, raw)
    except RowError as exc:
        raise MappingError(f"{exc.field}: {exc.message}") from None
    served = {key: str(value) for key, value in pairs.items() if key in RESERVED and key not in NAMING}
    return JobMapping(algorithm_name, platform, params, served)


def class_of(rules: Rules, catalog: Catalog, cluster: str, partition: str | None) -> JobMapping | None:
    """The job class a job no rule or word maps is estimated by: ``<cluster>-<partition>`` when the catalog has it,
    else ``<cluster>-all``; None when it has neither or the rule file switches job classes off.

    Its platform is the rule file's for the partition when the class runs there, else the class's first.
    """
    if not rules.job_classes:
        return None
    names = [f"{cluster}-{partition}"] if partition else []
    name = next((n for n in [*names, f"{cluster}-all"] if n in catalog.algorithms), None)
    if name is None:
        return None
    algorithm = catalog.algorithms[name]
    mapped = rules.partitions.get(partition or "") or rules.platform
    platform = mapped if mapped in algorithm.implementations else next(iter(algorithm.implementations), None)
    return None if platform is None else JobMapping(name, platform)
