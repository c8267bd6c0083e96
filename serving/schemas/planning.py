"""The planning decisions production follows (``predictor plan choose``): the newest per site and family, with its score
on the site's past and its live score since."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from scheduler.planning import PlanningDecision


class PlanningConfigOut(BaseModel):
    """A planning configuration: whose estimates plan, which number of the service, the correction, the backfill order."""

    source: Literal["last-two", "requested", "service"] = Field(
        description="last-two: the users' last two runs (EASY++); requested: the users' requests; service: what the "
        "service serves."
    )
    number: str = Field(description="'point', or 'q0.75': the service's point scaled by its residuals' 0.75 quantile.")
    correction: str = Field(description="How a job that outlives its plan is corrected: tsafrir, quantile, doubling.")
    order: str = Field(description="The backfill order: fcfs, sjbf (shortest first), saf (smallest area first).")


class PlanningLiveOut(BaseModel):
    """The configuration replayed on the accounting's jobs since it began to serve, against its runner-up."""

    model_config = ConfigDict(extra="ignore")

    objective: str
    jobs: int = Field(description="Jobs of the site's log submitted since it began to serve.")
    since: float = Field(description="The instant of the site's log (its seconds) it began to serve at.")
    runner_up: str = Field(description="The configuration it is measured against.")
    serving_value: float = Field(description="Its objective on those jobs.")
    runner_up_value: float = Field(description="The runner-up's objective on the same jobs.")
    score: float = Field(description="Its objective over the runner-up's (below 1: ahead; reverted above 1 + margin).")


class PlanningOut(BaseModel):
    """The newest planning decision of one site (its accounting log's name) and policy family."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "site": "hpc2n",
                    "family": "easy",
                    "id": 12,
                    "decision": "kept",
                    "decided_at": "2026-12-05T04:00:00Z",
                    "config": {"source": "last-two", "number": "point", "correction": "tsafrir", "order": "sjbf"},
                    "label": "last two, point, tsafrir, sjbf",
                    "reason": "the serving configuration is the best of 54 on 3 window(s), 5000 past jobs",
                    "objective": "avebsld",
                    "past_score": 1.0,
                    "past_per_window": [12.1, 30.4, 8.8],
                    "runner_up": "service, point, doubling, saf",
                    "live": {
                        "objective": "avebsld",
                        "jobs": 812,
                        "since": 31_536_000.0,
                        "runner_up": "service, point, doubling, saf",
                        "serving_value": 14.2,
                        "runner_up_value": 14.9,
                        "score": 0.953,
                    },
                }
            ]
        }
    )

    site: str = Field(
        description="The site: the name of the accounting log chosen on (Slurm: PREDICTOR_SLURM_CLUSTER)."
    )
    family: Literal["easy", "conservative", "edf"]
    id: int = Field(description="The decision's number in `predictor models history`.")
    decision: str = Field(description="promoted, kept, or reverted (its live score fell behind its runner-up's).")
    decided_at: datetime | None
    config: PlanningConfigOut
    label: str = Field(description="The configuration in short.")
    reason: str
    objective: str | None = Field(default=None, description="What the site wants low: avebsld, mean_wait, ...")
    past_score: float | None = Field(
        default=None,
        description="Its objective on the past windows relative to the configuration serving before (1: that one's); "
        "null for a revert.",
    )
    past_per_window: list[float] | None = Field(default=None, description="Its objective on each past window.")
    runner_up: str | None = Field(default=None, description="What its live score is measured against.")
    live: PlanningLiveOut | None = Field(
        default=None, description="Its live score since it began to serve; null until scored (at least 100 jobs since)."
    )

    @classmethod
    def of(cls, decision: PlanningDecision) -> PlanningOut:
        """A decision as the API shows it; a detail an older row lacks, or holds unreadable, is null."""
        details = decision.details
        return cls(
            site=decision.site,
            family=decision.family,
            id=decision.id,
            decision=decision.decision,
            decided_at=decision.decided_at,
            config=PlanningConfigOut(**vars(decision.config)),
            label=decision.config.label(decision.family),
            reason=decision.reason,
            objective=_text(details.get("objective")),
            past_score=_number(details.get("chosen_score")),
            past_per_window=_numbers(details.get("chosen_per_window")),
            runner_up=_text(details.get("runner_up_label")),
            live=_live(details.get("live")),
        )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value == value else None


def _numbers(value: Any) -> list[float] | None:
    if not isinstance(value, list):
        return None
    numbers = [_number(v) for v in value]
    return None if any(n is None for n in numbers) else [n for n in numbers if n is not None]


def _live(value: Any) -> PlanningLiveOut | None:
    try:
        return PlanningLiveOut.model_validate(value) if isinstance(value, dict) else None
    except ValidationError:
        return None
