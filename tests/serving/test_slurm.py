"""The Slurm plugin's route, and the plugin in a real slurmctld: sbatch -> job_submit.lua -> API -> time_min and comment."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from predictor.slurm.plugin import render_plugin
from serving import create_app
from tests.livesrv import Silent, serve_app
from tests.serving.conftest import Home
from tests.slurmserver import PASS_THROUGH, SlurmCluster


@pytest.fixture(scope="module")
def slurm_api(trained: Home, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The trained API with a rule file: partition debug runs on cpu1, jobs named align-* are mafft."""
    rules = tmp_path_factory.mktemp("rules") / "rules.yaml"
    rules.write_text('partitions: {debug: cpu1}\nrules:\n  - name: "align-*"\n    algorithm: mafft\n')
    with serve_app(create_app(trained.settings.model_copy(update={"slurm_rules": rules}))) as url:
        yield url


def _job(trained: Home, **fields: object) -> dict[str, object]:
    return {"name": "x.sh", "partition": "debug", "work_dir": str(trained.inputs), **fields}


def test_the_route_maps_estimates_and_tags_a_job(slurm_api: str, trained: Home) -> None:
    asked = _job(trained, comment="user words", directives="algorithm=mafft input=f7.fa", time_limit=30)
    answer = httpx.post(f"{slurm_api}/v1/slurm/estimate", json=asked).json()
    assert (answer["algorithm"], answer["platform"]) == ("mafft", "cpu1")
    assert answer["time_min"] == 1 and answer["time_limit"] is None  # seconds-long estimate: one minute; the limit left alone
    assert answer["comment"].startswith("user words predictor: algorithm=mafft platform=cpu1 estimate=")
    assert f"input={trained.inputs / 'f7.fa'}" in answer["comment"] and f"version={answer['model_version']}" in answer["comment"]
    assert answer["estimate"].startswith("00:00:")
    text = httpx.post(f"{slurm_api}/v1/slurm/estimate", params={"format": "text"}, json=asked)
    assert text.headers["content-type"].startswith("text/plain")
    assert text.text.splitlines()[:2] == ["time_min=1", f"comment={answer['comment']}"]
    raised = httpx.post(f"{slurm_api}/v1/slurm/estimate", json=_job(trained, name="align-7", environment="input=f7.fa", raise_missing_limit=True))
    assert raised.json()["time_limit"] >= raised.json()["time_min"] >= 1  # the served limit, for a job without one


def test_without_a_model_the_route_tags_the_job_and_sets_no_time_min(slurm_api: str, trained: Home) -> None:
    """No champion for clustalo: nothing to set, but the tag, so the job's run is learned from when it ends."""
    answer = httpx.post(f"{slurm_api}/v1/slurm/estimate", json=_job(trained, directives="algorithm=clustalo input=f7.fa"))
    body = answer.json()
    assert answer.status_code == 200 and body["time_min"] is None and body["seconds"] is None and body["reason"]
    assert body["comment"] == f"predictor: algorithm=clustalo platform=cpu1 input={trained.inputs / 'f7.fa'}"
    text = httpx.post(f"{slurm_api}/v1/slurm/estimate", params={"format": "text"}, json=_job(trained, directives="algorithm=clustalo input=f7.fa"))
    assert text.text == f"comment={body['comment']}\n"


def test_the_route_leaves_jobs_that_are_not_ours_and_refuses_bad_words(slurm_api: str, trained: Home) -> None:
    assert httpx.post(f"{slurm_api}/v1/slurm/estimate", json=_job(trained)).status_code == 204
    unknown = httpx.post(f"{slurm_api}/v1/slurm/estimate", json=_job(trained, directives="algorithm=nosuch"))
    assert unknown.status_code == 422 and "unknown algorithm 'nosuch'" in unknown.json()["detail"]
    outside = httpx.post(f"{slurm_api}/v1/slurm/estimate", json=_job(trained, directives="algorithm=mafft input=/etc/passwd"))
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


def test_sbatch_goes_through_the_plugin_to_the_api(plugin: SlurmCluster, slurm_api: str, trained: Home, tmp_path: Path) -> None:
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
    limit = plugin.show(raised)["TimeLimit"]
    assert limit != "00:05:00" and limit >= plugin.show(raised)["TimeMin"]  # the served limit, not the partition's default
    plugin.run("scancel", tagged, untouched, raised)


def test_with_the_api_down_or_hanging_jobs_go_in_unchanged_within_the_timeout(plugin: SlurmCluster, trained: Home, tmp_path: Path) -> None:
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
