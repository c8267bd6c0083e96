"""Peak memory beside run time (issue 31), served: a pair with a memory champion answers its memory and memory limit (bytes
and Slurm sizes) in the API, the batch, the matrix, the client and the CLI; a pair without one answers time with the
memory fields null; the hot swap and the disk cache follow memory champions as they follow time ones."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator

import httpx
import pytest
from typer.testing import CliRunner

from cli.app import app
from predictor.domain import Target
from predictor.intervals import quantile_at
from predictor.memsize import slurm_memory
from predictor.registry import CHAMPION_ALIAS, registered_name, registry_client
from predictor.store import MeasurementStore
from serving.app import create_app
from serving.client import PredictorClient
from tests.livesrv import free_port, serve_app
from tests.serving.test_predict import _same_answer
from tests.trained import TOKEN, Home, api_settings, measurements, peak_bytes, train_home, train_memory

AUTH = {"authorization": f"Bearer {TOKEN}"}
JOB = {"algorithm": "mafft", "params": {"input": "f13.fa"}}
MEMORY = (
    "memory",
    "memory_lower",
    "memory_upper",
    "memory_limit",
    "memory_limit_quantile",
    "memory_slurm",
    "memory_limit_slurm",
    "memory_model_name",
    "memory_model_version",
)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    """Time champions on cpu1 and cpu2; a memory champion on cpu1 only (only its runs measured their memory)."""
    home = train_home(tmp_path_factory.mktemp("memory"), ["linear_log"], memory_on=("cpu1",))
    train_memory(home, ["linear"])
    return home


@pytest.fixture(scope="module")
def base(home: Home) -> Iterator[str]:
    with serve_app(create_app(home.settings, api=home.api)) as url:
        yield url


def predict(base: str, payload: dict) -> dict[str, dict]:
    response = httpx.post(f"{base}/v1/predict", json=payload)
    assert response.status_code == 200, response.text
    return {e["platform"]: e for e in response.json()["estimates"]}


def expected_limit(memory: float, home: Home, quantile: float | None = None) -> float:
    """The memory limit the memory champion's residual quantiles give: at the memory limit's quantile (the service's
    unless ``quantile``), never below the interval's upper end (as the time limit is)."""
    version = registry_client(home.settings.resolved_tracking_uri).get_model_version_by_alias(
        "memory-mafft-cpu1", CHAMPION_ALIAS
    )
    levels = {float(k): v for k, v in json.loads(version.tags["residual_log_quantiles"]).items()}
    upper = quantile_at(levels, (1 + home.settings.interval_coverage) / 2)
    quantile = home.settings.memory_limit_quantile if quantile is None else quantile
    return memory * math.exp(max(quantile_at(levels, quantile), upper, 0.0))


def test_a_pair_with_both_champions_answers_memory_and_its_limit_and_one_without_answers_null(
    base: str, home: Home
) -> None:
    estimates = predict(base, JOB)
    both, time_only = estimates["cpu1"], estimates["cpu2"]
    assert both["seconds"] > 0 and time_only["seconds"] > 0 and not both["fallback"] and not time_only["fallback"]
    assert both["memory"] == pytest.approx(peak_bytes(both["features"]), rel=0.15)
    assert 0 < both["memory_lower"] <= both["memory"] <= both["memory_upper"] <= both["memory_limit"]
    assert both["memory_limit"] > both["memory"] and both["memory_limit"] == pytest.approx(
        expected_limit(both["memory"], home), rel=1e-9
    )
    assert both["memory_slurm"] == slurm_memory(both["memory"]) and both["memory_limit_slurm"] == slurm_memory(
        both["memory_limit"]
    )
    assert (
        both["memory_limit_slurm"].endswith("M")
        and int(both["memory_limit_slurm"][:-1]) * 1024**2 >= both["memory_limit"]
    )
    assert (both["memory_model_name"], both["memory_model_version"]) == ("memory-mafft-cpu1", "1")
    assert (both["memory_limit_quantile"], both["limit_quantile"]) == (0.99, 0.95), "each limit at its own quantile"
    assert both["extrapolating"] is False
    assert all(time_only[k] is None for k in MEMORY), time_only
    assert time_only["model_name"] == "runtime-mafft-cpu2" and time_only["limit_walltime"]


def test_batches_and_matrices_carry_memory_as_a_job_alone_does(base: str) -> None:
    features = predict(base, JOB)["cpu1"]["features"]
    far = {**features, "input.residues": features["input.residues"] * 50}
    jobs = [
        JOB,
        {"algorithm": "mafft", "features": features},
        {"algorithm": "mafft", "features": far},
        {"algorithm": "mafft", "features": {"x": 1.0}},
    ]
    results = httpx.post(f"{base}/v1/predict/batch", json={"jobs": jobs}).json()["results"]
    for job, result in zip(jobs, results, strict=True):
        _same_answer(result["estimates"], list(predict(base, job).values()))
    assert results[1]["estimates"][0]["memory_limit_slurm"] == results[0]["estimates"][0]["memory_limit_slurm"]
    outside = results[2]["estimates"][0]
    assert outside["extrapolating"] and "input.residues" in outside["out_of_domain"] and outside["memory"] > 0
    assert results[3]["estimates"][0]["memory"] is None, "without the memory champion's features: no memory"
    lean = httpx.post(f"{base}/v1/predict/batch", json={"jobs": jobs[:2], "fields": ["memory_limit"]}).json()["results"]
    for item in lean:
        cpu1, cpu2 = item["estimates"]
        assert set(cpu1) == {
            "platform",
            "seconds",
            "walltime",
            "limit_walltime",
            "memory_limit",
            "memory_slurm",
            "memory_limit_slurm",
        }
        assert cpu1["memory_limit"] > 0 and cpu2["memory_limit"] is None and cpu2["memory_limit_slurm"] is None
    names = sorted(features)
    matrix = httpx.post(
        f"{base}/v1/predict/matrix",
        json={"algorithm": "mafft", "columns": names, "rows": [[features[n] for n in names], [far[n] for n in names]]},
    )
    assert matrix.status_code == 200, matrix.text
    columns = {c["platform"]: c for c in matrix.json()["estimates"]}
    alone = predict(base, {"algorithm": "mafft", "features": features})["cpu1"]
    assert columns["cpu1"]["memory"][0] == pytest.approx(alone["memory"], rel=1e-12)
    assert columns["cpu1"]["memory_limit_slurm"][0] == alone["memory_limit_slurm"]
    assert columns["cpu1"]["memory_model_name"] == "memory-mafft-cpu1"
    assert columns["cpu2"]["memory"] is None and columns["cpu2"]["memory_limit_slurm"] is None


def test_the_models_readiness_and_client_show_the_memory_champion(base: str) -> None:
    models = httpx.get(f"{base}/v1/models").json()
    assert sorted((m["platform"], m["target"]) for m in models) == [
        ("cpu1", "memory"),
        ("cpu1", "time"),
        ("cpu2", "time"),
    ]
    memory = next(m for m in models if m["target"] == "memory")
    assert (
        memory["name"] == "memory-mafft-cpu1"
        and memory["origin"] == "registry"
        and memory["intervals"]
        and memory["live"] is None
    )
    ready = httpx.get(f"{base}/readyz").json()
    assert ready["status"] == "ready" and (ready["champions"], ready["memory_champions"]) == (2, 1)
    assert 'predictor_predictions_total{model="memory-mafft-cpu1",version="1"}' in httpx.get(f"{base}/metrics").text
    with PredictorClient(base) as client:
        estimates = client.predict("mafft", {"input": "f13.fa"})
    api = predict(base, JOB)
    assert estimates["cpu1"].memory_limit == pytest.approx(api["cpu1"]["memory_limit"])
    assert (estimates["cpu1"].memory_slurm, estimates["cpu1"].memory_limit_slurm) == (
        api["cpu1"]["memory_slurm"],
        api["cpu1"]["memory_limit_slurm"],
    )
    assert estimates["cpu1"].limit_walltime == api["cpu1"]["limit_walltime"]
    assert (estimates["cpu2"].memory, estimates["cpu2"].memory_limit_slurm) == (None, None)


def test_the_memory_limit_quantile_can_be_asked_per_request_on_every_route(base: str, home: Home) -> None:
    """Issue 31: ``memory_limit_quantile`` moves the memory limit alone; at 0.99 (the default) it is at least the 0.95 one."""
    served = predict(base, JOB)["cpu1"]
    at_95 = predict(base, {**JOB, "memory_limit_quantile": 0.95})["cpu1"]
    assert at_95["memory_limit_quantile"] == 0.95 and at_95["memory_limit"] == pytest.approx(
        expected_limit(at_95["memory"], home, 0.95)
    )
    assert served["memory_limit"] >= at_95["memory_limit"] and served["memory"] == at_95["memory"]
    assert (at_95["limit"], at_95["limit_quantile"]) == (served["limit"], served["limit_quantile"]), (
        "the walltime limit stays"
    )
    features = served["features"]
    batch = httpx.post(
        f"{base}/v1/predict/batch",
        json={"jobs": [JOB, {"algorithm": "mafft", "features": features}], "memory_limit_quantile": 0.95},
    ).json()["results"]
    assert [r["estimates"][0]["memory_limit"] for r in batch] == pytest.approx([at_95["memory_limit"]] * 2, rel=1e-12)
    assert [r["estimates"][0]["memory_limit_quantile"] for r in batch] == [0.95, 0.95]
    names = sorted(features)
    matrix = httpx.post(
        f"{base}/v1/predict/matrix",
        json={
            "algorithm": "mafft",
            "columns": names,
            "rows": [[features[n] for n in names]],
            "memory_limit_quantile": 0.95,
        },
    ).json()
    cpu1 = next(c for c in matrix["estimates"] if c["platform"] == "cpu1")
    assert (
        cpu1["memory_limit"][0] == pytest.approx(at_95["memory_limit"], rel=1e-12)
        and cpu1["memory_limit_quantile"] == 0.95
    )
    with PredictorClient(base) as client:
        assert client.predict("mafft", {"input": "f13.fa"}, memory_limit_quantile=0.95)[
            "cpu1"
        ].memory_limit == pytest.approx(at_95["memory_limit"])


@pytest.mark.parametrize("value", [0, 1, 1.5, -0.1, "high", True])
@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/predict", JOB),
        ("/v1/predict/batch", {"jobs": [JOB]}),
        ("/v1/predict/matrix", {"algorithm": "mafft", "columns": ["input.sequences"], "rows": [[40.0]]}),
    ],
)
def test_a_bad_memory_limit_quantile_is_a_422(base: str, path: str, body: dict, value: object) -> None:
    refused = httpx.post(f"{base}{path}", json={**body, "memory_limit_quantile": value})
    assert refused.status_code == 422 and "memory_limit_quantile" in refused.text, refused.text


def _cells(stdout: str, platform: str) -> list[str]:
    row = next(line for line in stdout.splitlines() if line.startswith(f"│ {platform} "))
    return [c.strip() for c in row.strip("│ ").split("│")]


def test_the_cli_table_shows_the_memory_columns_locally_and_through_the_service(
    base: str, home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PREDICTOR_HOME", str(home.settings.home))
    monkeypatch.setenv("COLUMNS", "250")
    runner = CliRunner()
    api = predict(base, JOB)
    for args in (["--param", f"input={home.inputs / 'f13.fa'}"], ["--param", "input=f13.fa", "--url", base]):
        table = runner.invoke(app, ["predict", "--algorithm", "mafft", *args])
        assert table.exit_code == 0, table.output
        header = next(line for line in table.stdout.splitlines() if "platform" in line)
        assert [c.strip() for c in header.strip("┃ ").split("┃")][-4:] == [
            "model",
            "memory",
            "memory limit",
            "memory model",
        ]
        assert _cells(table.stdout, "cpu1")[-3:] == [
            api["cpu1"]["memory_slurm"],
            api["cpu1"]["memory_limit_slurm"],
            "memory-mafft-cpu1 v1",
        ]
        assert _cells(table.stdout, "cpu2")[-3:] == ["-", "-", "-"]
        as_json = runner.invoke(app, ["predict", "--algorithm", "mafft", *args, "--json"])
        shown = json.loads(as_json.stdout)
        assert (
            shown["cpu1"]["memory_limit_slurm"] == api["cpu1"]["memory_limit_slurm"] and shown["cpu2"]["memory"] is None
        )


def test_the_disk_cache_serves_the_memory_champion_when_the_registry_is_down(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    with serve_app(create_app(home.settings, api=home.api)) as base:  # a reachable registry fills the cache
        served = predict(base, JOB)["cpu1"]
    dead = home.settings.model_copy(update={"mlflow_tracking_uri": f"http://127.0.0.1:{free_port()}"})
    with serve_app(create_app(dead, api=api_settings(registry_wait_s=5.0))) as base:
        ready = httpx.get(f"{base}/readyz").json()
        assert ready["source"] == "cache" and (ready["champions"], ready["memory_champions"]) == (2, 1), ready
        cached = predict(base, JOB)["cpu1"]
        assert (cached["memory_model_version"], cached["memory_limit_slurm"]) == (
            served["memory_model_version"],
            served["memory_limit_slurm"],
        )
        origins = {(m["target"], m["origin"]) for m in httpx.get(f"{base}/v1/models").json()}
        assert origins == {("time", "cache"), ("memory", "cache")}


def test_the_hot_swap_follows_memory_champions_in_and_out(home: Home) -> None:
    with serve_app(create_app(home.settings, api=home.api)) as base:
        before = predict(base, JOB)
        cpu2_runs = [m for m in measurements(home.inputs, ("cpu2",), suffix="-memory") if m.platform == "cpu2"]
        train_memory(home, ["mean"], cpu2_runs)  # a new version on cpu1 (the mean), a first one on cpu2
        assert predict(base, JOB)["cpu2"]["memory"] is None, "nothing moves until the service looks"
        reload = httpx.post(f"{base}/v1/models/reload", headers=AUTH, timeout=120)
        assert reload.status_code == 200, reload.text
        assert sorted(reload.json()["changed"]) == ["mafft/cpu1 (memory)", "mafft/cpu2 (memory)"]
        assert reload.json()["memory_champions"] == 2 and reload.json()["champions"] == 2
        after = predict(base, JOB)
        assert (after["cpu1"]["memory_model_version"], after["cpu2"]["memory_model_version"]) == ("2", "1")
        assert after["cpu1"]["memory"] != pytest.approx(before["cpu1"]["memory"], rel=1e-6), "the mean answers now"
        assert after["cpu2"]["memory"] > 0 and after["cpu2"]["memory"] <= after["cpu2"]["memory_limit"]
        assert after["cpu1"]["seconds"] == before["cpu1"]["seconds"], "the time champions stay"
        client = registry_client(home.settings.resolved_tracking_uri)
        name = registered_name("mafft", "cpu2", Target.MEMORY)
        client.delete_registered_model_alias(name, CHAMPION_ALIAS)
        withdrawn = httpx.post(f"{base}/v1/models/reload", headers=AUTH, timeout=120).json()
        assert withdrawn["removed"] == ["mafft/cpu2 (memory)"] and withdrawn["memory_champions"] == 1
        assert all(predict(base, JOB)["cpu2"][k] is None for k in MEMORY)
        assert httpx.get(f"{base}/readyz").json()["status"] == "ready"
    assert not home.settings.resolved_model_cache.joinpath(name, "current.json").exists()


def test_recorded_runs_keep_the_memory_they_were_served_and_memory_has_a_live_error(
    base: str, home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 42: a run recorded without what it was served is kept beside the peak memory and memory limit the service
    serves it (as its time is), one that says what it was served keeps that; the memory champion's live error is then
    in /v1/models, /metrics, `report --live` and `models list`."""
    answer = predict(base, JOB)["cpu1"]
    peak = peak_bytes(answer["features"])
    run = {"algorithm": "mafft", "platform": "cpu1", "features": answer["features"], "wall_seconds": answer["seconds"]}
    runs = [
        {**run, "run_id": f"live-memory-{i}", "max_rss_kb": round(peak * factor / 1024)}
        for i, factor in enumerate((0.5, 4.0, 4.0))
    ]
    told = {"seconds": answer["seconds"], "memory": peak, "memory_limit": 2 * peak, "memory_model_version": "7"}
    runs.append({**run, "run_id": "live-memory-told", "max_rss_kb": round(4 * peak / 1024), "served": told})
    recorded = httpx.post(f"{base}/v1/observations", json=runs, headers=AUTH)
    assert recorded.status_code == 200 and len(recorded.json()["stored"]) == 4, recorded.text

    store = MeasurementStore(home.settings.resolved_store_url)
    window = store.live_window("mafft", "cpu1", 100).set_index("run_id")
    store.dispose()
    assert sorted(window.index) == sorted(r["run_id"] for r in runs)
    served = window.loc[["live-memory-0", "live-memory-1", "live-memory-2"]]
    assert served["memory"].tolist() == pytest.approx([answer["memory"]] * 3)
    assert served["memory_limit"].tolist() == pytest.approx([answer["memory_limit"]] * 3)
    assert set(served["memory_model_version"]) == {answer["memory_model_version"]}
    assert window.loc["live-memory-told", ["memory", "memory_limit", "memory_model_version"]].tolist() == [
        peak,
        2 * peak,
        "7",
    ]

    took = window["max_rss_kb"].to_numpy() * 1024
    rae = 100 * abs(window["memory"].to_numpy() - took).sum() / abs(took - took.mean()).sum()
    models = httpx.get(f"{base}/v1/models").json()
    live = next(m for m in models if (m["platform"], m["target"]) == ("cpu1", "memory"))["live"]
    assert live["runs"] == 4 and live["rae"] == pytest.approx(rae)
    assert (live["underestimate_rate"], live["limit_exceeded"]) == (0.75, 0.75), "the three runs of 4x the peak"
    assert live["interval_coverage"] == 0.0, "the told run has no interval; neither 0.5x nor 4x the peak is in one"
    timed = next(m for m in models if (m["platform"], m["target"]) == ("cpu1", "time"))["live"]
    assert timed["runs"] == 4
    scraped = httpx.get(f"{base}/metrics").text
    assert 'predictor_live_memory_runs{algorithm="mafft",platform="cpu1"} 4.0' in scraped

    monkeypatch.setenv("PREDICTOR_HOME", str(home.settings.home))
    monkeypatch.setenv("COLUMNS", "250")
    runner = CliRunner()
    report = runner.invoke(app, ["report", "--live"])
    assert report.exit_code == 0, report.output
    rows = [[c.strip() for c in line.strip("│ ").split("│")] for line in report.stdout.splitlines()]
    assert ["mafft", "cpu1", "memory", "4", f"{rae:.3g}"] in [r[:5] for r in rows], report.stdout
    listed = runner.invoke(app, ["models", "list", "--url", base])
    row = next(line for line in listed.stdout.splitlines() if line.startswith("│ mafft") and "memory" in line)
    assert f"{rae:.4g}" in row, listed.stdout
