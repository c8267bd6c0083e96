"""What Slurm's job_submit plugin asks at submission: a job's facts in, the changes to make to it out.

A job a rule or its own words map to a catalog program is estimated by that program's model; any other job by its
job class (:func:`slurm.rules.class_of`) from its submit-time context and its user's history in the store
(:func:`slurm.submit_history.submit_features`, the replay's features). A job the rule file excludes is left
alone (204) and nothing of it is kept. The site's rule file (``PREDICTOR_SLURM_RULES``) is read again when it changes. ``format=text`` answers as
``key=value`` lines (``time_min``, ``time_limit``, ``mem``, ``comment``, ``estimate``; a null one left out), which
the plugin's Lua reads without a JSON library: every text field in and out is one line
(no control characters but tab), so no value can add a line of its own. The route needs no token, so whatever a
job sends is bounded and refused with a 422 saying why, never a 500 and its traceback in the log.

``time_min`` follows ``PREDICTOR_SLURM_TIME_MIN``: ``planned`` (the default) sets it only while the newest planning
decision of the cluster (``predictor plan choose`` on its accounting, :mod:`scheduler.planning`, read at most every few
seconds) plans with the service; before any decision, and while the site's rule wins (EASY++'s last two runs, or the
requests), none is set and Slurm plans with the user's limit, as it would without the service. The JSON answer says
why (``time_min_reason``).

Only the plugin is answered from a user's history: a caller that does not send the plugin's token
(``PREDICTOR_SLURM_PLUGIN_TOKEN``, in the ``X-Predictor-Plugin-Token`` header) gets 204 for every job a job class would
estimate, whoever its user, so the open route does not tell who has history and who has none (a catalog program's
estimate does not depend on the user).
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Literal

from fastapi import APIRouter, Header, HTTPException, Query
from fastapi.responses import PlainTextResponse, Response
from pydantic import SecretStr, ValidationError
from starlette.concurrency import run_in_threadpool

from predictor.store.job_history import JobHistory
from serving.deps import ServiceState, State
from serving.errors import responses
from serving.jobs import JobRejected, deadline, prepare
from serving.jsonbody import FastJsonRoute
from serving.schemas.predict import PredictRequest
from serving.schemas.slurm import SlurmAdviceOut, SlurmJobIn
from slurm.rules import (
    JobFacts,
    MappingError,
    Rules,
    RulesError,
    class_of,
    load_rules,
    map_job,
)
from slurm.submit import SubmitAdvice, advise
from slurm.submit_history import Submission, submit_features

router = APIRouter(prefix="/v1/slurm", tags=["slurm"], route_class=FastJsonRoute)  # open: big bodies off the loop
TOKEN_HEADER = "X-Predictor-Plugin-Token"


@router.post(
    "/estimate",
    response_model=SlurmAdviceOut,
    summary="A Slurm job at submission: its time_min and tagged comment",
    responses={
        204: {
            "description": "Not a job of ours: excluded, or no rule or word names its algorithm and it has no job class."
        },
        **responses(400, 403, 404, 422, 503),
    },
)
async def estimate(
    job: SlurmJobIn,
    state: State,
    format: Literal["json", "text"] = Query("json"),
    plugin_token: str | None = Header(default=None, alias=TOKEN_HEADER, include_in_schema=False),
) -> Response:
    """Maps the job by the site rules and its own words (else, for the plugin, to its job class), estimates it on its
    platform, and says what to change."""
    answer = await run_in_threadpool(_advise, state, job, _is_plugin(state.slurm.plugin_token, plugin_token))
    if answer is None:
        return Response(status_code=204)
    if format == "text":
        lines = {
            "time_min": answer.time_min,
            "time_limit": answer.time_limit,
            "mem": answer.memory,
            "comment": answer.comment,
            "estimate": answer.estimate,
        }
        return PlainTextResponse("".join(f"{k}={v}\n" for k, v in lines.items() if v is not None))
    return Response(answer.model_dump_json(), media_type="application/json")


def _is_plugin(expected: SecretStr | None, sent: str | None) -> bool:
    """Whether the caller sent the plugin's token (never, when none is configured)."""
    return (
        expected is not None
        and sent is not None
        and secrets.compare_digest(sent.encode(), expected.get_secret_value().encode())
    )


def _advise(state: ServiceState, job: SlurmJobIn, plugin: bool) -> SlurmAdviceOut | None:
    facts = JobFacts(job.name, job.comment, job.partition, job.work_dir, job.directives, job.environment)
    try:
        rules = _rules(state.slurm.rules)
        users: list[str | None] = list(_users(job)) or [None]
        if any(rules.exclude.excludes(user, job.account or None, job.partition) for user in users):
            return None
        mapping = map_job(rules, facts, state.catalog)
    except MappingError as exc:
        raise HTTPException(422, str(exc)) from None
    except RulesError as exc:
        raise HTTPException(503, f"the Slurm rule file is not usable: {exc}") from None
    features = None
    if mapping is None:
        mapping = class_of(rules, state.catalog, state.slurm.cluster, job.partition)
        if mapping is None or not _users(job) or not plugin:
            # no class, no user, or a caller that is not the plugin: no history is read
            return None
        submission = _submission(state, job)
        features = submit_features(JobHistory(state.store.engine), submission, submission.submit.tzinfo or UTC)
        if not features["history.finished_jobs"]:
            # a user with no finished job yet: nothing learned of them (their jobs are, once they end)
            return None
    try:
        request = PredictRequest(
            algorithm=mapping.algorithm, params=mapping.params, platforms=[mapping.platform], features=features
        )
        prepared = prepare(state, request, deadline(state))
    except ValidationError as exc:
        raise HTTPException(422, _problems(exc)) from None
    except JobRejected as exc:
        raise exc.http() from None
    estimated = state.oracle.estimate_jobs([prepared])[0].get(mapping.platform)
    if estimated is not None:
        state.metrics.count_estimates([estimated])
    if features is not None and (estimated is None or estimated.seconds is None):
        # a job class without a model yet: nothing to set (its run is learned from all the same)
        return None
    planned, why = _time_min_rule(state)
    advice: SubmitAdvice = advise(
        facts,
        mapping,
        estimated,
        time_limit=job.time_limit,
        default_time=job.default_time,
        raise_missing_limit=job.raise_missing_limit,
        memory_given=job.memory_given,
        raise_missing_memory=job.raise_missing_memory,
        plan_time_min=planned,
    )
    if not planned and advice.estimate is not None:
        reason = why
    elif advice.time_min is None:
        reason = advice.time_min_reason
    else:
        reason = f"{advice.time_min_reason}; {why}"
    served = estimated if estimated is not None and estimated.seconds is not None else None
    # the tagged comment is checked to be one bounded line like the job's own
    try:
        return SlurmAdviceOut(
            algorithm=mapping.algorithm,
            platform=mapping.platform,
            time_min=advice.time_min,
            time_min_reason=reason,
            time_limit=advice.time_limit,
            comment=advice.comment,
            estimate=advice.estimate,
            limit=advice.limit,
            memory=advice.memory,
            memory_limit=estimated.memory_limit if estimated is not None else None,
            seconds=served.seconds if served is not None else None,
            model_name=served.model_name if served is not None else None,
            model_version=served.model_version if served is not None else None,
            member=served.member if served is not None else None,
            rule=served is not None and served.rule,
            reason=None if served is not None else (estimated.reason if estimated is not None else "no estimate"),
        )
    except ValidationError as exc:
        raise HTTPException(422, _problems(exc)) from None


def _time_min_rule(state: ServiceState) -> tuple[bool, str]:
    """Whether the site lets the route set ``time_min`` now (``PREDICTOR_SLURM_TIME_MIN``, and for ``planned`` the
    cluster's newest planning decision), and why."""
    setting = state.slurm.time_min
    if setting != "planned":
        return setting == "always", f"PREDICTOR_SLURM_TIME_MIN is {setting}"
    decision = state.slurm_planning.current()
    if decision is None:
        return False, (
            f"no planning decision for cluster {state.slurm.cluster} yet: Slurm plans with the user's limit, the "
            "site's own rule"
        )
    whose = f"planning decision {decision.id} ({decision.family}: {decision.config.label(decision.family)})"
    if decision.config.source == "service":
        return True, f"{whose} plans with the service"
    return False, f"{whose} keeps the site's rule: Slurm plans with the user's limit"


def _users(job: SlurmJobIn) -> list[str]:
    """The submitting user as the rule file and the history name it: by name, else (and for exclusion also) by uid."""
    return [u for u in (job.user_name, None if job.user_id is None else str(job.user_id)) if u]


def _submission(state: ServiceState, job: SlurmJobIn) -> Submission:
    """The job as submitted now (in local time, as Slurm reads hours and weekdays): its limit (else its partition's
    default) in seconds and its CPUs."""
    minutes = job.time_limit or job.default_time
    seconds = None if minutes is None else minutes * 60.0
    return Submission(state.slurm.cluster, _users(job)[0], datetime.now().astimezone(), seconds, job.min_cpus)


def _problems(exc: ValidationError) -> str:
    """A validation error in one line, without the offending values: one message per field, the last (for a parameter's
    value, typed as a union ending in text, the text form's)."""
    last = {".".join(map(str, e["loc"][:2])): e["msg"] for e in exc.errors()}
    return "; ".join(f"{field}: {message}" for field, message in last.items())


def _rules(path: Path | None) -> Rules:
    """The rule file, read again when its modification time changes."""
    if path is None:
        return Rules()
    try:
        stamp = path.stat().st_mtime_ns
    except OSError as exc:
        raise RulesError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return _rules_at(path, stamp)


@lru_cache(maxsize=4)
def _rules_at(path: Path, stamp: int) -> Rules:
    return load_rules(path)
