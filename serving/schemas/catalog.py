"""The catalog: its platforms and algorithms with their parameters."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class PlatformOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "cpu2",
                    "kind": "cpu",
                    "cores": 2,
                    "clock_ghz": 2.45,
                    "memory_gb": 24,
                    "disk": "ssd",
                    "power_watts": 95,
                }
            ]
        }
    )

    name: str
    kind: str
    cores: int
    clock_ghz: float
    memory_gb: float
    disk: str
    power_watts: float


class ParameterOut(BaseModel):
    name: str
    type: str
    required: bool
    default: Any = None
    min: float | None = None
    max: float | None = None
    choices: list[str] | None = None
    extractor: str | None = None


class AlgorithmOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "mafft",
                    "description": "Multiple sequence alignment with MAFFT.",
                    "parameters": [
                        {"name": "input", "type": "file", "required": True, "extractor": "fasta"},
                        {"name": "retree", "type": "int", "required": False, "default": 2, "min": 1, "max": 2},
                    ],
                    "platforms": ["cpu1", "cpu2"],
                }
            ]
        }
    )

    name: str
    description: str
    parameters: list[ParameterOut]
    platforms: list[str]
