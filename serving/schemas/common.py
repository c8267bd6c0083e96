"""What every resource's payloads are made of: bounded, finite, NUL-free values, and the error answers.

Every number a client sends must be finite, every string is bounded and free of NUL characters, and
integers fit the store's columns, so nothing a client sends can fail further in (a 500) instead of here (a 422).
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict, StrictBool

from predictor.intervals import MAX_COVERAGE

# a JSON number: true is no 1.0, "2" no 2.0
FiniteFloat = Annotated[float, Strict(), Field(allow_inf_nan=False)]
Measured = FiniteFloat
Count = Annotated[int, Strict()]  # a JSON integer: true is no 1
Text = Annotated[str, Field(max_length=4096, pattern=r"^[^\x00]*$")]
Name = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^\x00]*$")]
Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
ParamValue = StrictBool | Int64 | FiniteFloat | Text
# a JSON number: "0.5" is refused, as documented
Probability = Annotated[float, Strict(), Field(gt=0, lt=1)]
Coverage = Annotated[float, Strict(), Field(gt=0, le=MAX_COVERAGE)]
MAX_DEPTH = 8


def _plain_json(value: Any, depth: int = 0) -> Any:
    """Check a free-form JSON value: finite numbers, 64-bit integers, no NUL characters, bounded nesting."""
    if depth > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        for key, item in value.items():
            _plain_json(key, depth + 1)
            _plain_json(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _plain_json(item, depth + 1)
    elif isinstance(value, str) and "\x00" in value:
        raise ValueError("text must not contain NUL characters")
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError("numbers must be finite")
    elif isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        raise ValueError("integers must fit in 64 bits")
    return value


FreeJson = Annotated[dict[str, Any], AfterValidator(_plain_json)]


class StrictModel(BaseModel):
    """A request payload: an unknown field is a 422, not ignored."""

    model_config = ConfigDict(extra="forbid")


class ErrorOut(BaseModel):
    detail: str


class ValidationErrorOut(BaseModel):
    """A 422: the summary, and each problem with its location when the payload itself was malformed."""

    detail: str
    errors: list[dict[str, Any]] = Field(default_factory=list)
