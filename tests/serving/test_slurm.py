"""The Slurm plugin's route, and the plugin in a real slurmctld: sbatch -> job_submit.lua -> API -> time_min and comment."""

from __future__ import annotations

import logging
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from predictor.memsize import MIB, slurm_memory
from predictor.store import MeasurementStore
from scheduler.planning import PlanningConfig
from serving.app import create_app
from serving.telemetry import LOGGER_NAME
from slurm.plugin import render_plugin
from slurm.settings import SlurmSettings
from tests.livesrv import Silent, eventually, serve_app
from tests.planning import record_planning
from tests.required import required
from tests.slurmserver import PASS_THROUGH, SlurmCluster
from tests.trained import Home, train_home, train_memory

RULES = 'partitions: {debug: cpu1}\nrules:\n  - name: "align-*"\n    algorithm: mafft\n'


@pytest.fixture(scope="module")
def slurm_api(trained: Home, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The trained API with a rule file: partition debug runs on cpu1, jobs named align-* are mafft; time_min set
    whenever the served limit is below the job's (these tests are about its mechanics, not the site's planning)."""
    rules = tmp_path_factory.mktemp("rules") / "rules.yaml"
    rules.write_text(RULES)
    slurm = SlurmSettings(rules=rules, time_min="always")
    with serve_app(create_app(trained.settings, api=trained.api, slurm=slurm)) as url:
        yield url


def _job(trained: Home, **fields: object) -> dict[str, object]:
    return {"name": "x.sh", "partition": "debug", "work_dir": str(trained.inputs), **fields}


def test_the_route_maps_estimates_and_tags_a_job(slurm_api: str, trained: Home) -> None:
    asked = _job(trained, comment="user words", directives="algorithm=mafft input=f7.fa", time_limit=30)
    answer = httpx.post(f"{slurm_api}/v1/slurm/estimate", json=asked).json()
    assert (answer["algorithm"], answer["platform"]) == ("mafft", "cpu1")
    assert (
        answer["time_min"] == 1 and answer["time_limit"] is None
    )  # seconds-long estimate: one minute; the limit left alone
    assert answer["comment"].startswith("user words predictor: algorithm=mafft platform=cpu1 estimate=")
    assert (
        f"input={trained.inputs / 'f7.fa'}" in answer["comment"]
        and f"version={answer['model_version']}" in answer["comment"]
    )
    assert answer["estimate"].startswith("00:00:")
    text = httpx.post(f"{slurm_api}/v1/slurm/estimate", params={"format": "text"}, json=asked)
    assert text.headers["content-type"].startswith("text/plain")
    assert text.text.splitlines()[:2] == ["time_min=1", f"comment={answer['comment']}"]
    raised = httpx.post(
        f"{slurm_api}/v1/slurm/estimate",
        json=_job(trained, name="align-7", environment="input=f7.fa", raise_missing_limit=True),
    )
    # the served limit, for a job without one; time_min at the same value would change nothing
    assert raised.json()["time_limit"] >= 1 and raised.json()["time_min"] is None


def test_without_a_model_the_route_tags_the_job_and_sets_no_time_min(slurm_api: str, trained: Home) -> None:
    """No champion for clustalo: nothing to set, but the tag, so the job's run is learned from when it ends."""
    answer = httpx.post(
        f"{slurm_api}/v1/slurm/estimate", json=_job(trained, directives="algorithm=clustalo input=f7.fa")
    )
    body = answer.json()
    assert answer.status_code == 200 and body["time_min"] is None and body["seconds"] is None and body["reason"]
    assert body["comment"] == f"predictor: algorithm=clustalo platform=cpu1 input={trained.inputs / 'f7.fa'}"
    text = httpx.post(
        f"{slurm_api}/v1/slurm/estimate",
        params={"format": "text"},
        json=_job(trained, directives="algorithm=clustalo input=f7.fa"),
    )
    assert text.text == f"comment={body['comment']}\n"


def test_the_route_leaves_jobs_that_are_not_ours_and_refuses_bad_words(slurm_api: str, trained: Home) -> None:
    assert httpx.post(f"{slurm_api}/v1/slurm/estimate", json=_job(trained)).status_code == 204
    unknown = httpx.post(f"{slurm_api}/v1/slurm/estimate", json=_job(trained, directives="algorithm=nosuch"))
    assert unknown.status_code == 422 and "unknown algorithm 'nosuch'" in unknown.json()["detail"]
    outside = httpx.post(
        f"{slurm_api}/v1/slurm/estimate", json=_job(trained, directives="algorithm=mafft input=/etc/passwd")
    )
    assert outside.status_code == 403


@pytest.fixture
def plugin(slurm_cluster: SlurmCluster) -> Iterator[SlurmCluster]:
    """The cluster, its job_submit.lua put back to pass-through after the test."""
    yield slurm_cluster
    slurm_cluster.set_plugin(PASS_THROUGH)


SCRIPT = "#!/bin/sh\n#PREDICTOR algorithm=mafft input={input}\nsleep 1\n"


def _script(folder: Path, trained: Home) -> Path:
    path = folder / "align.sh"
    path.write_text(SCRIPT.format(input=trained.inputs / "f12.fa"))
    return path


def test_sbatch_goes_through_the_plugin_to_the_api(
    plugin: SlurmCluster, slurm_api: str, trained: Home, tmp_path: Path
) -> None:
    plugin.set_plugin(render_plugin(slurm_api, 1.0, raise_missing_limit=False))
    script = _script(tmp_path, trained)
    tagged = plugin.submit("--hold", "--time=30", "--comment=mine", str(script))
    fields = plugin.show(tagged)
    assert fields["TimeLimit"] == "00:30:00" and fields["TimeMin"] == "00:01:00"  # the user's limit kept
    assert fields["Comment"].startswith("mine predictor: algorithm=mafft platform=cpu1 estimate=")
    assert "version=" in fields["Comment"]
    untouched = plugin.submit("--hold", "--wrap", "true")
    assert plugin.show(untouched)["TimeMin"] == "N/A" and plugin.show(untouched)["Comment"] == ""
    plugin.set_plugin(render_plugin(slurm_api, 1.0, raise_missing_limit=True))
    raised = plugin.submit("--hold", str(script))
    # the served limit, not the partition's default; no time_min at that same value (it would change nothing)
    assert plugin.show(raised)["TimeLimit"] != "00:05:00" and plugin.show(raised)["TimeMin"] == "N/A"
    plugin.run("scancel", tagged, untouched, raised)


def test_with_the_api_down_or_hanging_jobs_go_in_unchanged_within_the_timeout(
    plugin: SlurmCluster, trained: Home, tmp_path: Path
) -> None:
    script = _script(tmp_path, trained)
    log = plugin.root / "log" / "slurmctld.log"
    with socket.socket() as probe:  # a port nothing listens on: connection refused
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    silent = Silent()
    try:
        for url, timeout in ((closed, 0.5), (silent.url, 0.5)):
            plugin.set_plugin(render_plugin(url, timeout, raise_missing_limit=True))
            marks = log.read_text().count("predictor: the API")
            jobs, took = [], []
            for _ in range(3):
                started = time.monotonic()
                jobs.append(plugin.submit("--hold", "--time=20", "--comment=mine", str(script)))
                took.append(time.monotonic() - started)
            assert max(took) < timeout + 2.0, took  # sbatch's own work plus at most the plugin's wait
            assert all(plugin.show(j)["TimeMin"] == "N/A" and plugin.show(j)["Comment"] == "mine" for j in jobs)
            assert all(plugin.show(j)["TimeLimit"] == "00:20:00" for j in jobs)
            assert log.read_text().count("predictor: the API") == marks + 1  # logged once, not per job
            plugin.run("scancel", *jobs)
    finally:
        silent.close()


@pytest.fixture
def served_log() -> Iterator[list[logging.LogRecord]]:
    """The records the service logs meanwhile (its logger does not propagate to pytest's)."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger(LOGGER_NAME)
    logger.addHandler(handler)
    yield records
    logger.removeHandler(handler)


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        (
            {"directives": "algorithm=mafft input=f7\x00.fa"},
            "directives: Value error, must be one line of text: control character '\\x00'",
        ),
        (
            {"directives": "algorithm=mafft input=f7.fa", "work_dir": "/tmp/a\x00b"},
            "work_dir: Value error, must be one line",
        ),
        ({"comment": "mine predictor: algorithm=mafft input=f7.fa\x00"}, "comment: Value error, must be one line"),
        (
            {"directives": "algorithm=mafft input=" + "a" * 5000},
            "params.input: String should have at most 4096 characters",
        ),
        (
            {"directives": "algorithm=mafft input=f7.fa", "name": "n" * 5000},
            "name: String should have at most 4096 characters",
        ),
        (
            {"directives": "algorithm=mafft input=f7.fa", "time_limit": True},
            "time_limit: Input should be a valid integer",
        ),
    ],
)
def test_the_open_route_refuses_hostile_text_with_a_422_and_logs_no_traceback(
    slurm_api: str, trained: Home, served_log: list[logging.LogRecord], fields: dict[str, object], reason: str
) -> None:
    """Issue 30, items 2 and 7: NUL characters, 5,000-character words and a boolean limit are 4xx with the reason, not 500."""
    answer = httpx.post(f"{slurm_api}/v1/slurm/estimate", json=_job(trained, **fields))
    assert answer.status_code == 422, answer.text
    assert reason in answer.json()["detail"]
    assert [r.getMessage() for r in served_log if r.levelno >= logging.ERROR or r.exc_info] == []


INJECTED = "hi\ntime_min=99999\ntime_limit=1\nx"


def test_a_comment_cannot_add_lines_to_the_text_answer(slurm_api: str, trained: Home) -> None:
    """Issue 30, item 6: a newline in the comment is refused, so no value adds a ``time_min=`` or ``time_limit=`` line."""
    asked = _job(trained, comment=INJECTED, directives="algorithm=mafft input=f7.fa")
    text = httpx.post(f"{slurm_api}/v1/slurm/estimate", params={"format": "text"}, json=asked)
    assert (
        text.status_code == 422
        and "comment: Value error, must be one line of text: control character '\\n'" in text.json()["detail"]
    )
    plain = httpx.post(
        f"{slurm_api}/v1/slurm/estimate", params={"format": "text"}, json={**asked, "comment": "hi time_min=99999"}
    )
    keys = [line.partition("=")[0] for line in plain.text.splitlines()]
    assert plain.status_code == 200 and keys == ["time_min", "comment", "estimate"]


# The plugin run by a Lua interpreter, as slurmctld would run it: a stand-in for slurmctld's ``slurm`` table, one job.
LUA_DRIVER = """
slurm = { SUCCESS = 0, NO_VAL = 4294967294, INFINITE = 4294967295 }
function slurm.log_info(fmt, ...) io.stderr:write(string.format(fmt, ...), "\\n") end
dofile(arg[1])
local job = { name = "align.sh", comment = arg[2], partition = "debug", work_dir = arg[3], script = arg[4],
              time_limit = slurm.NO_VAL, environment = {} }
slurm_job_submit(job, {}, 0)
io.write(tostring(job.time_min), "\\n", tostring(job.time_limit), "\\n", (tostring(job.comment):gsub("\\n", "\\\\n")), "\\n")
"""


def _run_plugin(api: str, tmp_path: Path, comment: str, script: str = "") -> tuple[list[str], str]:
    """Submit one job (no time limit; the plugin raises a missing one) through the plugin: its time_min, time_limit and
    comment after, and what the plugin logged."""
    required(shutil.which("lua5.1") is not None, "lua5.1 not installed", "`make test` installs it (make system-deps)")
    plugin, driver = tmp_path / "job_submit.lua", tmp_path / "driver.lua"
    plugin.write_text(render_plugin(api, 2.0, raise_missing_limit=True))
    driver.write_text(LUA_DRIVER)
    done = subprocess.run(
        ["lua5.1", str(driver), str(plugin), comment, str(tmp_path), script],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout.splitlines(), done.stderr


class Canned(ThreadingHTTPServer):
    """An API stand-in that answers every POST with ``body`` (text/plain, 200)."""

    body = ""

    def __init__(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                self.rfile.read(int(self.headers["content-length"]))
                data = server.body.encode()
                self.send_response(200)
                self.send_header("content-type", "text/plain")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.mark.parametrize(
    ("answer", "expected", "logged"),
    [
        (
            "time_min=5\ncomment=hi\ntime_min=99999\ntime_limit=1\nx predictor: a=b\n",
            ["nil", "4294967294", "mine"],
            "time_min given twice",
        ),
        ("time_min=5 time_limit=1\ncomment=ok\n", ["nil", "4294967294", "mine"], "time_min is not a whole number"),
        ("time_min=5\nmem=12G\ncomment=ok\n", ["nil", "4294967294", "mine"], "mem is not megabytes (e.g. 3500M)"),
        ("time_min=5\ngarbage\n", ["nil", "4294967294", "mine"], "a line is not key=value"),
        ("time_min=5\ntime_limit=9\ncomment=ok a=b\nfuture=1\n", ["5", "9", "ok a=b"], ""),
    ],
)
def test_the_plugin_reads_each_expected_field_once_or_changes_nothing(
    tmp_path: Path, answer: str, expected: list[str], logged: str
) -> None:
    """Issue 30, item 6: a field given twice, a limit that is not a number or a stray line leaves the job as submitted."""
    canned = Canned()
    canned.body = answer
    try:
        job, log = _run_plugin(canned.url, tmp_path, "mine")
    finally:
        canned.shutdown()
        canned.server_close()
    assert job == expected
    assert (f"the API's answer is malformed ({logged})" in log) if logged else log == ""


def test_the_plugin_leaves_a_job_whose_comment_would_inject_fields_unchanged(
    slurm_api: str, trained: Home, tmp_path: Path
) -> None:
    """Issue 30, item 6, end to end: the injecting comment goes through the real plugin and API and sets nothing."""
    script = SCRIPT.format(input=trained.inputs / "f12.fa")
    job, log = _run_plugin(slurm_api, tmp_path, INJECTED, script)
    assert job == ["nil", "4294967294", INJECTED.replace("\n", "\\n")] and "the API answered 422" in log
    tagged, _ = _run_plugin(slurm_api, tmp_path, "mine", script)
    # the served limit given to the job without one (and no time_min at that same value), the tag written
    assert tagged[:2] != ["nil", "4294967294"] and tagged[0] == "nil"
    assert tagged[2].startswith("mine predictor: algorithm=mafft platform=cpu1 estimate=")


def test_the_plugin_sets_memory_only_for_a_job_that_asked_for_none(plugin: SlurmCluster, tmp_path: Path) -> None:
    """Issue 31, in a real slurmctld: with --raise-missing-memory the served memory (here an API stand-in's ``mem=``)
    goes to a job without --mem; a user's --mem or --mem-per-cpu is kept; without the setting nothing is set."""
    canned = Canned()
    canned.body = "mem=120M\ncomment=tagged\n"
    try:
        plugin.set_plugin(render_plugin(canned.url, 2.0, raise_missing_limit=False, raise_missing_memory=True))
        bare, given, per_cpu = (
            plugin.submit("--hold", *args, "--wrap", "true") for args in ([], ["--mem=70M"], ["--mem-per-cpu=30M"])
        )
        assert [plugin.show(job)["MinMemoryNode"] for job in (bare, given)] == ["120M", "70M"]
        assert "MinMemoryCPU=30M" in plugin.run("scontrol", "show", "job", "-o", per_cpu).stdout
        assert plugin.show(bare)["Comment"] == "tagged"
        plugin.set_plugin(render_plugin(canned.url, 2.0, raise_missing_limit=False, raise_missing_memory=False))
        kept = plugin.submit("--hold", "--wrap", "true")
        assert plugin.show(kept)["MinMemoryNode"] != "120M" and plugin.show(kept)["Comment"] == "tagged"
        plugin.run("scancel", bare, given, per_cpu, kept)
    finally:
        canned.shutdown()
        canned.server_close()


def test_without_a_memory_model_the_route_answers_no_memory(slurm_api: str, trained: Home) -> None:
    """Issue 31: the served memory limit is None without a memory model, so no ``mem=`` line: the plugin leaves memory alone."""
    asked = _job(trained, directives="algorithm=mafft input=f7.fa", raise_missing_memory=True)
    answer = httpx.post(f"{slurm_api}/v1/slurm/estimate", json=asked).json()
    assert answer["time_min"] == 1 and answer["memory"] is None and answer["memory_limit"] is None
    text = httpx.post(f"{slurm_api}/v1/slurm/estimate", params={"format": "text"}, json=asked).text
    assert [line.partition("=")[0] for line in text.splitlines()] == ["time_min", "comment", "estimate"]


@pytest.fixture(scope="module")
def memory_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """An API (and its inputs folder) whose mafft on cpu1 has a peak-memory champion, trained by training's own path."""
    home = train_home(tmp_path_factory.mktemp("memory"), ["linear_log"], memory_on=("cpu1",))
    train_memory(home, ["linear"])
    rules = tmp_path_factory.mktemp("memory-rules") / "rules.yaml"
    rules.write_text("partitions: {debug: cpu1}\n")
    with serve_app(create_app(home.settings, api=home.api, slurm=SlurmSettings(rules=rules, time_min="always"))) as url:
        yield url, home.inputs


def test_with_a_memory_model_sbatch_gets_the_served_memory_limit_unless_the_user_gave_one(
    plugin: SlurmCluster, memory_api: tuple[str, Path], tmp_path: Path
) -> None:
    """Issue 31, end to end: the route answers the memory champion's limit as a Slurm size and the plugin in slurmctld
    sets it as --mem for a job that asked for none; a user's --mem stays; without --raise-missing-memory none is set."""
    api, inputs = memory_api
    script = tmp_path / "align.sh"
    script.write_text(SCRIPT.format(input=inputs / "f12.fa"))
    asked = {
        "name": "align.sh",
        "partition": "debug",
        "directives": f"algorithm=mafft input={inputs / 'f12.fa'}",
        "raise_missing_memory": True,
    }
    answer = httpx.post(f"{api}/v1/slurm/estimate", json=asked).json()
    assert answer["memory_limit"] > 30 * MIB and answer["memory"] == slurm_memory(answer["memory_limit"])
    given = httpx.post(f"{api}/v1/slurm/estimate", json={**asked, "memory_given": True}).json()
    assert given["memory"] is None and given["memory_limit"] == answer["memory_limit"]
    plugin.set_plugin(render_plugin(api, 2.0, raise_missing_limit=False, raise_missing_memory=True))
    bare, mine = plugin.submit("--hold", str(script)), plugin.submit("--hold", "--mem=70M", str(script))
    assert (plugin.show(bare)["MinMemoryNode"], plugin.show(mine)["MinMemoryNode"]) == (answer["memory"], "70M")
    assert plugin.show(bare)["Comment"].startswith("predictor: algorithm=mafft platform=cpu1 estimate=")
    plugin.set_plugin(render_plugin(api, 2.0, raise_missing_limit=False, raise_missing_memory=False))
    unset = plugin.submit("--hold", str(script))
    assert plugin.show(unset)["MinMemoryNode"] != answer["memory"] and plugin.show(unset)["TimeMin"] != "N/A"
    plugin.run("scancel", bare, mine, unset)


@pytest.fixture(scope="module")
def planned_api(trained: Home, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, MeasurementStore]]:
    """The trained API as a site runs it (PREDICTOR_SLURM_TIME_MIN left at planned), cluster ``site``, over a store of
    its own (the champions come from the registry), and that store to record planning decisions in."""
    folder = tmp_path_factory.mktemp("planned")
    (folder / "rules.yaml").write_text(RULES)
    settings = trained.settings.model_copy(update={"store_url": f"sqlite:///{folder / 'store.db'}"})
    slurm = SlurmSettings(rules=folder / "rules.yaml", cluster="site")
    assert slurm.time_min == "planned"  # the default
    with serve_app(create_app(settings, api=trained.api, slurm=slurm)) as url:
        yield url, MeasurementStore(settings.resolved_store_url)


def test_time_min_follows_the_sites_planning_decision(planned_api: tuple[str, MeasurementStore], trained: Home) -> None:
    """Issue 39: time_min is set only while the cluster's newest planning decision plans with the service; before any,
    and while the site's rule (EASY++) or another cluster's decision serves, none (do no harm); the answer says why."""
    url, store = planned_api
    asked = _job(trained, directives="algorithm=mafft input=f7.fa", time_limit=30)

    def answer() -> dict[str, object]:
        return httpx.post(f"{url}/v1/slurm/estimate", json=asked).json()

    first = answer()
    assert first["time_min"] is None and first["seconds"] is not None and first["limit"] is not None
    assert "no planning decision for cluster site yet" in first["time_min_reason"]
    text = httpx.post(f"{url}/v1/slurm/estimate", params={"format": "text"}, json=asked).text
    assert [line.partition("=")[0] for line in text.splitlines()] == ["comment", "estimate"]
    record_planning(store, "other", "easy", PlanningConfig("service", "point", "doubling", "saf"))  # another cluster's
    rule = record_planning(store, "site", "easy", PlanningConfig(), promoted=False)  # EASY++ kept
    assert eventually(lambda: f"planning decision {rule} " in str(answer()["time_min_reason"]), timeout=30)
    kept = answer()
    assert kept["time_min"] is None and "keeps the site's rule" in kept["time_min_reason"]
    service = record_planning(store, "site", "conservative", PlanningConfig("service", "q0.75", "doubling"))
    assert eventually(lambda: answer()["time_min"] is not None, timeout=30)
    planned = answer()
    assert planned["time_min"] == 1  # the served limit (never the q0.75 point the planning decision names)
    assert planned["time_min_reason"] == (
        f"the served limit, below the job's limit; planning decision {service} "
        "(conservative: service, q0.75, doubling) plans with the service"
    )
    back = record_planning(store, "site", "easy", PlanningConfig("last-two", "point", "tsafrir", "saf"))
    assert eventually(lambda: f"planning decision {back} " in str(answer()["time_min_reason"]), timeout=30)
    assert answer()["time_min"] is None


def test_time_min_never_or_always_whatever_the_planning(trained: Home, tmp_path: Path) -> None:
    """PREDICTOR_SLURM_TIME_MIN=never sets none even while the service plans; always sets one with no decision."""
    (tmp_path / "rules.yaml").write_text(RULES)
    settings = trained.settings.model_copy(update={"store_url": f"sqlite:///{tmp_path / 'store.db'}"})
    store = MeasurementStore(settings.resolved_store_url)
    store.migrate()
    record_planning(store, "slurm", "easy", PlanningConfig("service", "point", "doubling", "saf"))
    asked = _job(trained, directives="algorithm=mafft input=f7.fa", time_limit=30)
    for setting, expected in (("never", None), ("always", 1)):
        slurm = SlurmSettings(rules=tmp_path / "rules.yaml", time_min=setting)
        with serve_app(create_app(settings, api=trained.api, slurm=slurm)) as url:
            body = httpx.post(f"{url}/v1/slurm/estimate", json=asked).json()
        assert body["time_min"] == expected, body
        assert f"PREDICTOR_SLURM_TIME_MIN is {setting}" in body["time_min_reason"]
