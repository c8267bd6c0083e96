"""``predictor slurm ...``: follow Slurm's completions into the store, install the job_submit plugin, run the bridge."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli.common import (
    console,
    err_console,
    fail,
    load_settings,
    local_oracle,
    open_store,
    plain,
    repeat_passes,
)

commands = typer.Typer()
slurm_app = typer.Typer(
    help="Slurm: estimates at submission, finished jobs back as runs, the scheduler driving Slurm.",
    no_args_is_help=True,
)
commands.add_typer(slurm_app, name="slurm")


@slurm_app.command()
def follow(
    log: Annotated[Path, typer.Option(help="Slurm's jobcomp/filetxt log (JobCompLoc in slurm.conf).", dir_okay=False)],
    cursor: Annotated[
        Path | None, typer.Option(help="Where the read position is kept (default: HOME/slurm-follow.json).")
    ] = None,
    interval: Annotated[float, typer.Option(min=0.1, help="Seconds between passes.")] = 5.0,
    once: Annotated[bool, typer.Option(help="One pass, then exit.")] = False,
    guard: Annotated[
        bool,
        typer.Option(
            help="Requeue jobs Slurm stopped, raising only what ran out: time or memory (the resource guard)."
        ),
    ] = False,
    max_requeues: Annotated[
        int, typer.Option(min=0, help="Requeues the guard gives one job at most, per resource.")
    ] = 1,
) -> None:
    """Store each job Slurm completes as a measurement, continuously; restarted, it reads on where it stopped.

    With --guard, a job that timed out is requeued with the time limit of a higher quantile of its estimate (capped by
    its partition's MaxTime), one killed OUT_OF_MEMORY with more memory only (a higher quantile of its memory
    estimate, else twice its request; capped by its nodes' memory), a preempted or node-failed one as it was; each at
    most --max-requeues times per job; every decision goes to HOME/slurm-guard.jsonl.
    """
    from predictor.catalog import load_catalog
    from slurm.control import Slurm
    from slurm.follow import Follower, FollowPass
    from slurm.ingest import Inputs
    from slurm.resource_guard import ResourceGuard, oracle_uppers
    from slurm.rules import RulesError, load_rules
    from slurm.settings import SlurmSettings

    settings, slurm = load_settings(), SlurmSettings()
    try:
        rules = load_rules(slurm.rules)
    except RulesError as exc:
        raise fail(str(exc)) from None
    catalog = load_catalog(*settings.catalog_paths)
    resource_guard = None
    if guard:
        resource_guard = ResourceGuard(
            Slurm(),
            oracle_uppers(local_oracle(settings, catalog)),
            settings.resolved_home / "slurm-guard.jsonl",
            cluster=slurm.cluster,
            max_requeues=max_requeues,
        )
    follower = Follower(
        log,
        cursor or settings.resolved_home / "slurm-follow.json",
        open_store(settings),
        catalog,
        rules,
        cluster=slurm.cluster,
        slurmctld=Slurm().held,
        guard=resource_guard,
        queue=Slurm().queue,
        inputs=Inputs.of(settings.data_roots, slurm),
    )

    def report(done: FollowPass) -> None:
        if done.jobs:
            console.print(
                f"{done.jobs} jobs: {done.stored} stored, {done.duplicates} already stored, {len(done.skipped)} skipped, "
                f"{len(done.rejected)} rejected"
            )
        for reject in done.rejected:
            err_console.print(plain(f"  line {reject.line}, {reject.field}: {reject.message}"))

    repeat_passes(
        follower.poll,
        lambda stop: follower.run(interval, stop, on_pass=report),
        report,
        once,
        f"following {log} every {interval:g} s",
    )


@slurm_app.command("install-plugin")
def install_plugin(
    api: Annotated[
        str | None, typer.Option(help="The predictor API's URL (default: from PREDICTOR_API_HOST and _PORT).")
    ] = None,
    timeout: Annotated[
        float, typer.Option(help="Seconds the plugin waits for the API (slurmctld waits with it).")
    ] = 0.5,
    raise_missing_limit: Annotated[
        bool, typer.Option(help="Give a job submitted without a time limit the served limit.")
    ] = False,
    raise_missing_memory: Annotated[
        bool,
        typer.Option(
            help="Give a job submitted without a memory request (--mem, --mem-per-cpu) the served memory limit."
        ),
    ] = False,
    dest: Annotated[
        Path | None, typer.Option(help="Where to write it (default: job_submit.lua beside SLURM_CONF's slurm.conf).")
    ] = None,
    stdout: Annotated[bool, typer.Option("--stdout", help="Print it instead of writing it.")] = False,
) -> None:
    """Write the job_submit.lua plugin (slurm.conf needs JobSubmitPlugins=lua); slurmctld picks up a changed file itself.

    With PREDICTOR_SLURM_PLUGIN_TOKEN set, the plugin sends it (the API answers jobs from their users' history, by
    their job class, to the plugin alone) and the file is made readable by slurm.conf's SlurmUser alone."""
    from serving.settings import ApiSettings
    from slurm.plugin import conf_path, plugin_path, render_plugin, slurm_user
    from slurm.plugin import install_plugin as write_plugin
    from slurm.settings import SlurmSettings

    secret = SlurmSettings().plugin_token
    token = None if secret is None else secret.get_secret_value()
    try:
        text = render_plugin(api or ApiSettings().url, timeout, raise_missing_limit, raise_missing_memory, token)
    except ValueError as exc:
        raise fail(str(exc)) from None
    if stdout:
        typer.echo(text, nl=False)
        return
    destination = dest or plugin_path()
    try:
        owner = None if token is None else slurm_user(conf_path())
        write_plugin(destination, text, owner)
    except OSError as exc:
        raise fail(f"cannot write {destination} (or read slurm.conf): {exc.strerror or exc}") from None
    except KeyError:
        raise fail(f"slurm.conf's SlurmUser {owner!r} is no user here: cannot give it {destination}") from None
    console.print(f"wrote {destination}; slurm.conf needs JobSubmitPlugins=lua (then `scontrol reconfigure` once)")
    if token is None:
        console.print("no PREDICTOR_SLURM_PLUGIN_TOKEN: jobs without a catalog program are not estimated by job class")
    else:
        console.print(f"it holds the plugin token: readable by {owner} alone")


@slurm_app.command()
def bridge(
    interval: Annotated[float, typer.Option(min=0.1, help="Seconds between passes.")] = 2.0,
    slots: Annotated[
        int | None, typer.Option(min=1, help="Slots each node offers the scheduler (default: its CPUs).")
    ] = None,
    state: Annotated[
        Path | None, typer.Option(help="The bridge's state file (default: HOME/slurm-bridge.json).")
    ] = None,
    jobs_dir: Annotated[
        Path | None, typer.Option(help="Where job scripts and outputs go (default: HOME/slurm-jobs).")
    ] = None,
    once: Annotated[bool, typer.Option(help="One pass, then exit.")] = False,
) -> None:
    """Carry the embedded scheduler's orders out on Slurm and report Slurm's node and job changes back as its events.

    Nodes of the partitions PREDICTOR_SLURM_RULES maps to platforms become the scheduler's machines; its jobs are
    submitted held and released to the planned node when it starts them. Killed and restarted, it reads on from its
    state file and does nothing twice.
    """
    from predictor.catalog import load_catalog
    from scheduler.store import SchedulerStore
    from slurm.bridge import BridgeStep, SlurmBridge
    from slurm.control import Slurm
    from slurm.rules import RulesError, load_rules
    from slurm.settings import SlurmSettings

    settings = load_settings()
    try:
        rules = load_rules(SlurmSettings().rules)
    except RulesError as exc:
        raise fail(str(exc)) from None
    if not rules.partitions:
        raise fail(
            "the rule file maps no partition to a platform (partitions: in PREDICTOR_SLURM_RULES): no node to schedule on"
        )
    home = settings.resolved_home
    the_bridge = SlurmBridge(
        SchedulerStore(open_store(settings).engine),
        Slurm(),
        load_catalog(*settings.catalog_paths),
        rules.partitions,
        state or home / "slurm-bridge.json",
        jobs_dir or home / "slurm-jobs",
        slots=slots,
    )

    def report(done: BridgeStep) -> None:
        if done.submitted or done.orders or done.events:
            console.print(
                f"{done.submitted} jobs submitted held, {done.orders} orders carried out, {done.events} events sent"
            )

    repeat_passes(
        the_bridge.step,
        lambda stop: the_bridge.run(interval, stop, on_step=report),
        report,
        once,
        f"bridging the scheduler and Slurm every {interval:g} s",
    )
