"""The catalog: algorithms with parameter schemas, their implementations per platform, and platforms.

Loaded from a YAML file and validated with pydantic; a broken catalog fails at load
with a :class:`CatalogError` naming the file, the entry and the field.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class CatalogError(ValueError):
    """The catalog file is missing, unreadable or invalid."""


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
    launcher: list[str] = Field(default_factory=list, description="Prefix that confines a command to this platform here.")
    threads: int = Field(default=1, gt=0, description="Threads an implementation is told to use on this platform.")
    description: str = ""


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
    description: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> Parameter:
        if self.type == "file" and not self.extractor:
            raise ValueError("a file parameter needs an 'extractor'")
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


class Derived(_Strict):
    """A feature computed from a job's other features: the product of the named ones (e.g. a search space)."""

    product: list[str] = Field(min_length=2, description="Features multiplied: '<file parameter>.<feature>' or a number parameter.")


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

    @property
    def platforms(self) -> list[str]:
        return list(self.implementations)


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


def load_catalog(path: str | Path) -> Catalog:
    """Read and validate a catalog file; every problem names the file, entry and field."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise CatalogError(f"{path}: cannot read catalog: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise CatalogError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise CatalogError(f"{path}: the catalog must be a mapping with 'platforms' and 'algorithms'")
    try:
        return Catalog.model_validate({**raw, "source": str(path)})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}" for err in exc.errors()
        )
        raise CatalogError(f"{path}: invalid catalog: {problems}") from exc
