"""Issue 29: any Slurm job estimated by its job class from its user's live history; through the route, and through a
real slurmctld's plugin with ``slurm follow`` bringing the user's ended jobs back as history."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from cli.app import app
from features.history import FEATURE_NAMES
from predictor.catalog import load_catalog
from predictor.domain import Measurement, Source
from predictor.settings import Settings
from predictor.store import MeasurementStore
from predictor.store.job_history import JobHistory, JobRecord
from predictor.walltime import parse_walltime
from serving.app import create_app
from slurm.control import Slurm
from slurm.follow import Follower
from slurm.plugin import render_plugin
from slurm.rules import load_rules
from slurm.settings import SlurmSettings
from tests.livesrv import eventually, serve_app
from tests.required import required
from tests.slurmserver import PASS_THROUGH, SlurmCluster
from tests.trained import api_settings
from training.pipeline import run_training
from training.settings import TrainingSettings

CLUSTER = "site"
SITE_CATALOG = f"algorithms:\n  {CLUSTER}-debug:\n    parameters: {{}}\n    implementations: {{cpu1: {{}}}}\n"
RULES = "partitions: {debug: cpu1}\nexclude: {accounts: [secret], users: [mallory]}\n"
TOKEN = "plugin-token-for-the-tests-0123456789"
PLUGIN = {"X-Predictor-Plugin-Token": TOKEN}  # what the plugin sends: only it is answered from users' histories


@dataclass(frozen=True)
class ClassHome:
    """A service home whose catalog has the job class ``site-debug``, with a champion trained on runs of it."""

    settings: TrainingSettings
    slurm: SlurmSettings
    url: str


def _class_runs(count: int) -> list[Measurement]:
    """Runs of the class whose time follows the user's last runs (seeded), with every history feature."""
    rng = np.random.default_rng(29)
    out = []
    for i in range(count):
        last = float(rng.uniform(60, 3600))
        features = {name: float(rng.uniform(1, 10)) for name in FEATURE_NAMES} | {
            "history.last1": last,
            "history.last2_mean": last,
            "history.last3_mean": last,
            "request.time": 4 * last,
        }
        out.append(
            Measurement(
                run_id=f"class-{i}",
                algorithm=f"{CLUSTER}-debug",
                platform="cpu1",
                features=features,
                wall_seconds=last * float(rng.uniform(0.9, 1.1)),
                source=Source.IMPORT,
            )
        )
    return out


@pytest.fixture(scope="module")
def class_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClassHome]:
    root = tmp_path_factory.mktemp("classes")
    (root / "site.yaml").write_text(SITE_CATALOG)
    (root / "rules.yaml").write_text(RULES)
    settings = TrainingSettings(
        home=root / "home",
        site_catalogs=[root / "site.yaml"],
        cv_folds=3,
        data_roots=[root],
    )
    store = MeasurementStore(settings.resolved_store_url)
    store.migrate()
    store.add(_class_runs(60))
    run_training(settings, store, algorithms=[f"{CLUSTER}-debug"], models=["linear_log"])
    store.dispose()
    slurm = SlurmSettings(rules=root / "rules.yaml", cluster=CLUSTER, plugin_token=TOKEN, time_min="always")
    with serve_app(create_app(settings, api=api_settings(), slurm=slurm)) as url:
        yield ClassHome(settings, slurm, url)


def _job(**fields: object) -> dict[str, object]:
    return {
        "name": "run.sh",
        "partition": "debug",
        "time_limit": 600,
        "min_cpus": 2,
        "user_id": 1000,
        "user_name": "ana",
        **fields,
    }


def _record(settings: Settings, user: str, runs: list[float]) -> None:
    """``user``'s jobs of the last hours, ended, with these run times (oldest first)."""
    store = MeasurementStore(settings.resolved_store_url)
    now = datetime.now(UTC)
    records = [
        JobRecord(
            key=f"t-{user}-{i}",
            cluster=CLUSTER,
            user=user,
            submit_at=now - timedelta(hours=5 - i),
            seq=i,
            time_limit_s=36000.0,
            min_cpus=2,
            start_at=now - timedelta(hours=5 - i),
            end_at=now - timedelta(hours=5 - i) + timedelta(seconds=run),
            partition="debug",
            state="COMPLETED",
        )
        for i, run in enumerate(runs)
    ]
    JobHistory(store.engine).record(records)
    store.dispose()


def test_a_job_naming_no_program_is_estimated_by_its_class_from_its_users_history(class_home: ClassHome) -> None:
    estimate = f"{class_home.url}/v1/slurm/estimate"
    assert (
        httpx.post(estimate, headers=PLUGIN, json=_job()).status_code == 204
    )  # a user with no finished job: nothing to go by
    _record(class_home.settings, "ana", [1200.0, 1500.0, 1800.0])
    answer = httpx.post(estimate, headers=PLUGIN, json=_job())
    body = answer.json()
    assert answer.status_code == 200, answer.text
    assert (body["algorithm"], body["platform"]) == (f"{CLUSTER}-debug", "cpu1")
    assert 1200 < body["seconds"] < 3600  # about the last runs, not the 10 h limit
    # The last two runs answer (a rule: no member was trained on 3 runs), and a job class's limit is the user's own
    # request: time_min, down to which backfill may cut the job's limit, is set only from a limit below it (issue 39).
    assert body["rule"] is True and parse_walltime(body["limit"]) == 36000
    assert body["time_min"] is None and body["time_min_reason"] == "the served limit is not below the job's limit"
    assert body["comment"].startswith(f"predictor: algorithm={CLUSTER}-debug platform=cpu1 estimate=")
    capped = httpx.post(estimate, headers=PLUGIN, json=_job(time_limit=10)).json()  # never at or above the user's limit
    assert capped["time_min"] is None and capped["time_min_reason"] == "the served limit is not below the job's limit"
    assert (
        httpx.post(estimate, headers=PLUGIN, json=_job(user_name="bo", user_id=1001)).status_code == 204
    )  # another user's history is not ana's
    assert httpx.post(estimate, headers=PLUGIN, json=_job(account="secret")).status_code == 204  # excluded account
    _record(class_home.settings, "mallory", [1200.0])
    assert httpx.post(estimate, headers=PLUGIN, json=_job(user_name="mallory")).status_code == 204  # excluded user
    assert (
        httpx.post(estimate, headers=PLUGIN, json=_job(partition="long")).status_code == 204
    )  # no class site-long, nor site-all


def test_a_caller_that_is_not_the_plugin_cannot_tell_who_has_history(class_home: ClassHome) -> None:
    """Issue 41: without the plugin's token (or with another), a user with history and one without are answered alike
    (204, no body) for a job their class would estimate; the plugin is answered from the history."""
    _record(class_home.settings, "dee", [1200.0, 1500.0, 1800.0])
    estimate = f"{class_home.url}/v1/slurm/estimate"
    for headers in ({}, {"X-Predictor-Plugin-Token": "not-the-plugin-token-0000"}):
        known = httpx.post(estimate, headers=headers, json=_job(user_name="dee"))
        unknown = httpx.post(estimate, headers=headers, json=_job(user_name="nobody-at-all", user_id=4242))
        assert (known.status_code, known.content) == (unknown.status_code, unknown.content) == (204, b"")
    assert httpx.post(estimate, headers=PLUGIN, json=_job(user_name="dee")).status_code == 200
    assert httpx.post(estimate, headers=PLUGIN, json=_job(user_name="nobody-at-all", user_id=4242)).status_code == 204


def test_with_job_classes_off_only_catalog_jobs_are_estimated(class_home: ClassHome) -> None:
    _record(class_home.settings, "cy", [1200.0, 1500.0])
    estimate = f"{class_home.url}/v1/slurm/estimate"
    assert httpx.post(estimate, headers=PLUGIN, json=_job(user_name="cy")).status_code == 200
    rules = class_home.slurm.rules
    assert rules is not None
    try:
        rules.write_text(RULES + "job_classes: false\n")  # read again when it changes
        assert httpx.post(estimate, headers=PLUGIN, json=_job(user_name="cy")).status_code == 204
    finally:
        rules.write_text(RULES)
        later = rules.stat().st_mtime + 1  # a modification time of its own, whatever the clock's grain
        os.utime(rules, (later, later))


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"user_id": -1}, "user_id: Input should be greater than or equal to 0"),
        ({"min_cpus": 4294967294}, "min_cpus: Input should be less than or equal to"),
        ({"pn_min_memory": "4G"}, "pn_min_memory: Input should be a valid integer"),
        ({"account": "a\nb"}, "account: Value error, must be one line of text"),
        ({"user_name": "x" * 5000}, "user_name: String should have at most 4096 characters"),
    ],
)
def test_the_submit_time_context_is_bounded(class_home: ClassHome, fields: dict[str, object], reason: str) -> None:
    answer = httpx.post(f"{class_home.url}/v1/slurm/estimate", json=_job(**fields))
    assert answer.status_code == 422 and reason in answer.text


@pytest.fixture
def plugin(slurm_cluster: SlurmCluster) -> Iterator[SlurmCluster]:
    """The cluster, its job_submit.lua put back to pass-through after the test."""
    yield slurm_cluster
    slurm_cluster.set_plugin(PASS_THROUGH)


def test_sbatch_of_an_unmapped_job_is_estimated_from_its_users_followed_history(
    plugin: SlurmCluster, class_home: ClassHome, tmp_path: Path
) -> None:
    """A new user's job goes in untouched and is learned from when it ends; their next job gets the estimate in its
    comment, and no time_min (a job class's limit is the user's own request); a job of an excluded account is left
    alone."""
    settings = class_home.settings
    plugin.set_plugin(render_plugin(class_home.url, 2.0, raise_missing_limit=False, token=TOKEN))
    user = plugin.run("id", "-un").stdout.strip()
    first = plugin.submit("--time=10", "--wrap", "sleep 1")
    assert plugin.show(first)["TimeMin"] == "N/A" and plugin.show(first)["Comment"] == ""  # no history of this user yet
    assert eventually(lambda: first in plugin.completions(), 60)
    store = MeasurementStore(settings.resolved_store_url)
    try:
        follower = Follower(
            plugin.jobcomp,
            tmp_path / "cursor.json",
            store,
            load_catalog(*settings.catalog_paths),
            load_rules(class_home.slurm.rules),
            cluster=CLUSTER,
            slurmctld=Slurm(str(plugin.conf)).held,
        )
        follower.poll()
        learned = {
            m.context["slurm_job"]: m for m in store.measurements(successful_only=False) if "slurm_job" in m.context
        }
        assert learned[first].algorithm == f"{CLUSTER}-debug" and learned[first].features["request.time"] == 600.0
    finally:
        store.dispose()
    second = plugin.submit("--hold", "--time=10", "--wrap", "sleep 1")
    shown = plugin.show(second)
    assert shown["TimeMin"] == "N/A" and shown["TimeLimit"] == "00:10:00", shown  # the user's limit kept
    assert shown["Comment"].startswith(f"predictor: algorithm={CLUSTER}-debug platform=cpu1 estimate="), shown
    secret = plugin.submit("--hold", "--time=10", "--account=secret", "--wrap", "sleep 1")
    assert plugin.show(secret)["TimeMin"] == "N/A" and plugin.show(secret)["Comment"] == ""
    assert user  # the jobs ran as this user, whose history it was
    plugin.run("scancel", second, secret)


# The plugin run by a Lua interpreter as slurmctld would run it, on a job whose counts Slurm left unset (NO_VAL) or
# flagged (memory per CPU), against a server that keeps what it was sent.
CONTEXT_DRIVER = """
slurm = { SUCCESS = 0, NO_VAL = 4294967294, INFINITE = 4294967295 }
function slurm.log_info(fmt, ...) io.stderr:write(string.format(fmt, ...), "\\n") end
dofile(arg[1])
local job = { name = "run.sh", partition = "debug", work_dir = "/w", time_limit = 30, environment = {},
              user_id = 1000, user_name = "ana", group_id = 100, account = "proj", qos = "normal", min_cpus = 4,
              min_nodes = 4294967294, pn_min_memory = 9223372036854775808 + 500, array_inx = "1-3%2" }
slurm_job_submit(job, {}, 0)
"""


class Keeper(ThreadingHTTPServer):
    """An API stand-in that keeps each POST's JSON body and answers 204."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, object]] = []
        self.tokens: list[str | None] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                server.bodies.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
                server.tokens.append(self.headers.get("X-Predictor-Plugin-Token"))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()


def test_the_plugin_sends_the_jobs_submit_time_context_with_unset_counts_as_null(tmp_path: Path) -> None:
    required(shutil.which("lua5.1") is not None, "lua5.1 not installed", "`make test` installs it (make system-deps)")
    keeper = Keeper()
    try:
        (tmp_path / "job_submit.lua").write_text(
            render_plugin(f"http://127.0.0.1:{keeper.server_address[1]}", 2.0, raise_missing_limit=False, token=TOKEN)
        )
        (tmp_path / "driver.lua").write_text(CONTEXT_DRIVER)
        subprocess.run(
            ["lua5.1", str(tmp_path / "driver.lua"), str(tmp_path / "job_submit.lua")],
            capture_output=True,
            timeout=30,
            check=True,
        )
    finally:
        keeper.shutdown()
        keeper.server_close()
    (body,) = keeper.bodies
    assert keeper.tokens == [TOKEN]  # the plugin says it is the plugin
    sent = {
        key: body[key]
        for key in (
            "user_id",
            "user_name",
            "group_id",
            "account",
            "qos",
            "min_cpus",
            "min_nodes",
            "pn_min_memory",
            "array_inx",
        )
    }
    assert sent == {
        "user_id": 1000,
        "user_name": "ana",
        "group_id": 100,
        "account": "proj",
        "qos": "normal",
        "min_cpus": 4,
        "min_nodes": None,
        "pn_min_memory": None,
        "array_inx": "1-3%2",
    }
    assert (body["name"], body["partition"], body["time_limit"]) == ("run.sh", "debug", 30)


def test_install_plugin_gives_a_plugin_holding_the_token_to_slurmuser_alone(runner: CliRunner, tmp_path: Path) -> None:
    """Issue 41: with PREDICTOR_SLURM_PLUGIN_TOKEN the written plugin carries it and only slurm.conf's SlurmUser may read
    it; without, the plugin is readable by all and carries none; a token the Lua cannot carry is one error line."""
    conf = tmp_path / "slurm.conf"
    conf.write_text(f"ClusterName=x\nSlurmUser={pwd.getpwuid(os.getuid()).pw_name}\n")
    env = {"SLURM_CONF": str(conf), "PREDICTOR_SLURM_PLUGIN_TOKEN": TOKEN}
    done = runner.invoke(app, ["slurm", "install-plugin", "--api", "http://127.0.0.1:8000"], env=env)
    plugin = tmp_path / "job_submit.lua"
    assert done.exit_code == 0, done.output
    assert f'local PLUGIN_TOKEN = "{TOKEN}"' in plugin.read_text()
    assert (plugin.stat().st_mode & 0o777, plugin.stat().st_uid) == (0o600, os.getuid())
    done = runner.invoke(
        app, ["slurm", "install-plugin", "--api", "http://127.0.0.1:8000"], env={"SLURM_CONF": str(conf)}
    )
    assert done.exit_code == 0 and 'local PLUGIN_TOKEN = ""' in plugin.read_text()
    assert plugin.stat().st_mode & 0o777 == 0o644
    bad = runner.invoke(app, ["slurm", "install-plugin"], env={**env, "PREDICTOR_SLURM_PLUGIN_TOKEN": 'short"'})
    assert bad.exit_code == 2 and "PREDICTOR_SLURM_PLUGIN_TOKEN" in bad.output
