"""The catalog: algorithms with parameter schemas, their implementations per platform, and platforms.

Loaded from YAML files and validated with pydantic: the bundled catalog, then any site catalogs,
which add platforms and algorithms of their own (redefining one differently is an error naming both
files). A broken catalog fails at load with a :class:`CatalogError` naming the file, the entry and
the field.

Command templates: ``{name}`` is replaced by a parameter's value and ``{threads}`` by the platform's
thread count; a boolean parameter with a ``flag`` stands alone as ``"{name}"`` and becomes its flag
when true and nothing when false (``hmmsearch --max``).
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from string import Formatter
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

# the template field filled with the platform's thread count
THREADS = "threads"
SECTIONS = ("platforms", "algorithms")


class CatalogError(ValueError):
    """A catalog file is missing, unreadable or invalid, or a site catalog redefines an entry."""


class PlatformKind(str, Enum):
    CPU = "cpu"
    GPU = "gpu"
    FPGA = "fpga"
    OTHER = "other"


class DiskClass(str, Enum):
    HDD = "hdd"
    SSD = "ssd"
    NVME = "nvme"
    NETWORK = "network"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Platform(_Strict):
    """A class of machines that behave alike."""

    name: str
    kind: PlatformKind
    cores: int = Field(gt=0)
    clock_ghz: float = Field(gt=0)
    memory_gb: float = Field(gt=0)
    disk: DiskClass
    power_watts: float = Field(gt=0)
    launcher: list[str] = Field(
        default_factory=list, description="Prefix that confines a command to this platform here."
    )
    threads: int = Field(default=1, gt=0, description="Threads an implementation is told to use on this platform.")
    description: str = ""

    @property
    def memory_bytes(self) -> float:
        """The most memory a run here can have: ``memory_gb`` (its largest node's) in bytes, read as GiB."""
        return self.memory_gb * 1024**3


ParamType = Literal["file", "int", "float", "bool", "categorical", "string"]


class Parameter(_Strict):
    """One parameter of an algorithm, as a user passes it."""

    type: ParamType
    required: bool = False
    default: Any = None
    min: float | None = None
    max: float | None = None
    choices: list[str] | None = None
    extractor: str | None = Field(default=None, description="Feature extractor reading this parameter (files).")
    feature: bool = Field(default=True, description="Whether the parameter itself becomes a feature.")
    flag: str | None = Field(default=None, min_length=1, description="A bool's command-line flag, given when true.")
    description: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> Parameter:
        if self.type == "file" and not self.extractor:
            raise ValueError("a file parameter needs an 'extractor'")
        if self.flag is not None and self.type != "bool":
            raise ValueError("only a bool parameter has a 'flag'")
        if self.type == "categorical" and not self.choices:
            raise ValueError("a categorical parameter needs 'choices'")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}")
        return self

    def schema_dict(self) -> dict[str, Any]:
        """The plain-dict form the feature package's parameter extractor takes."""
        return self.model_dump(include={"type", "default", "choices", "min", "max"})


class Implementation(_Strict):
    """One algorithm's build for one platform."""

    command: list[str] = Field(default_factory=list, description="Command template; {name} is replaced by a parameter.")
    checkpoint: bool = False

    def fields(self) -> list[tuple[str, str]]:
        """(template part, name) of every ``{name}`` in the command, in order."""
        return [(part, name) for part in self.command for _, name, _, _ in Formatter().parse(part) if name is not None]


class Derived(_Strict):
    """A feature computed from a job's other features: the product of the named ones (e.g. a search space)."""

    product: list[str] = Field(
        min_length=2, description="Features multiplied: '<file parameter>.<feature>' or a number parameter."
    )


class Algorithm(_Strict):
    """A named program the facility offers."""

    name: str
    description: str = ""
    parameters: dict[str, Parameter]
    implementations: dict[str, Implementation]
    derived: dict[str, Derived] = Field(default_factory=dict, description="Features computed from the others.")

    @model_validator(mode="after")
    def _derived_from_known_features(self) -> Algorithm:
        for name, derived in self.derived.items():
            if "." in name or "=" in name or name in self.parameters:
                raise ValueError(f"derived.{name}: a derived name must not contain '.' or '=' nor be a parameter")
            for operand in derived.product:
                param, _, feature = operand.partition(".")
                spec = self.parameters.get(param)
                if feature and spec is not None and spec.type == "file" and spec.required:
                    continue
                if not feature and spec is not None and spec.type in ("int", "float") and spec.feature:
                    continue
                raise ValueError(
                    f"derived.{name}: {operand!r} is neither '<required file parameter>.<feature>' nor a number parameter"
                )
        return self

    @model_validator(mode="after")
    def _templates_name_parameters(self) -> Algorithm:
        for platform, implementation in self.implementations.items():
            for part, name in implementation.fields():
                where = f"implementations.{platform}.command: {part!r}"
                spec = self.parameters.get(name)
                if name != THREADS and spec is None:
                    raise ValueError(f"{where} names {{{name}}}, neither a parameter nor {{{THREADS}}}")
                if spec is not None and spec.type == "bool" and (spec.flag is None or part != f"{{{name}}}"):
                    raise ValueError(f"{where}: a bool parameter stands alone as '{{{name}}}' and needs a 'flag'")
        return self

    @property
    def platforms(self) -> list[str]:
        return list(self.implementations)

    def command(self, platform: str, params: dict[str, Any], threads: int) -> list[str]:
        """The command template of ``platform`` filled in: defaults, then ``params``; flags present when true."""
        values = {name: p.default for name, p in self.parameters.items()} | params | {THREADS: threads}
        command: list[str] = []
        for part in self.implementations[platform].command:
            name = part.removeprefix("{").removesuffix("}")
            spec = self.parameters.get(name)
            # the checks at load keep a flag's part to exactly "{name}"
            if spec is None or spec.flag is None:
                command.append(part.format(**values))
            elif not isinstance(values[name], bool):
                raise ValueError(f"{self.name}: parameter {name} must be true or false, got {values[name]!r}")
            elif values[name]:
                command.append(spec.flag)
        return command


class Catalog(_Strict):
    """Every algorithm and platform the service knows."""

    platforms: dict[str, Platform]
    algorithms: dict[str, Algorithm]
    source: str = ""

    @model_validator(mode="before")
    @classmethod
    def _names_from_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for section in ("platforms", "algorithms"):
                entries = data.get(section)
                if isinstance(entries, dict):
                    data[section] = {k: {"name": k, **v} if isinstance(v, dict) else v for k, v in entries.items()}
        return data

    @model_validator(mode="after")
    def _implementations_on_known_platforms(self) -> Catalog:
        for algo in self.algorithms.values():
            for platform in algo.implementations:
                if platform not in self.platforms:
                    raise ValueError(
                        f"algorithms.{algo.name}.implementations.{platform}: unknown platform "
                        f"(known: {', '.join(sorted(self.platforms))})"
                    )
        return self

    def algorithm(self, name: str) -> Algorithm:
        try:
            return self.algorithms[name]
        except KeyError:
            raise KeyError(f"unknown algorithm {name!r}; known: {', '.join(sorted(self.algorithms))}") from None

    def platform(self, name: str) -> Platform:
        try:
            return self.platforms[name]
        except KeyError:
            raise KeyError(f"unknown platform {name!r}; known: {', '.join(sorted(self.platforms))}") from None


def load_catalog(path: str | Path, *site_paths: str | Path) -> Catalog:
    """Read and validate the catalog at ``path`` merged with the site catalogs after it; problems name the file.

    A site catalog adds platforms and algorithms (its ``algorithms`` may run on the bundled platforms);
    an entry defined again must be identical, else it is an error naming both files.
    """
    merged: dict[str, dict[str, Any]] = {section: {} for section in SECTIONS}
    origin: dict[tuple[str, str], Path] = {}
    paths = [Path(p) for p in (path, *site_paths)]
    for file in paths:
        for section, entries in _read(file).items():
            for name, entry in entries.items():
                known = origin.get((section, name))
                if known is not None and merged[section][name] != entry:
                    raise CatalogError(
                        f"{file}: {section}.{name} is already defined, differently, in {known}; a site catalog adds "
                        f"{section}, it does not change them (give it another name)"
                    )
                merged[section][name] = entry
                origin.setdefault((section, name), file)
    try:
        return Catalog.model_validate({**merged, "source": ", ".join(map(str, paths))})
    except ValidationError as exc:
        problems = "; ".join(_problem(err, origin, paths[0]) for err in exc.errors())
        raise CatalogError(f"invalid catalog: {problems}") from exc


def _read(path: Path) -> dict[str, dict[str, Any]]:
    """The sections of one catalog file, each a mapping of names to entries; CatalogError naming the file if not."""
    try:
        raw = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise CatalogError(f"{path}: cannot read catalog: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise CatalogError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise CatalogError(f"{path}: the catalog must be a mapping with 'platforms' and 'algorithms'")
    unknown = sorted(map(str, set(raw) - set(SECTIONS)))
    if unknown:
        raise CatalogError(
            f"{path}: unknown top-level key(s) {', '.join(unknown)}; a catalog has 'platforms' and 'algorithms'"
        )
    for section, entries in raw.items():
        if not isinstance(entries, dict):
            raise CatalogError(f"{path}: {section} must be a mapping of names to entries")
    return raw


def _problem(error: Any, origin: dict[tuple[str, str], Path], first: Path) -> str:
    """One validation error as '<file>: <location>: <message>', the file being the one that defined the entry.

    A check across entries reports at the top level and names the entry in its message instead.
    """
    loc = [str(p) for p in error["loc"]]
    if len(loc) > 1:
        file = origin.get((loc[0], loc[1]), first)
    else:
        named = (f for (section, name), f in origin.items() if f"{section}.{name}." in error["msg"])
        file = next(named, first)
    return f"{file}: {'.'.join(loc) or '(top level)'}: {error['msg']}"
