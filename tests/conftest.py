"""Shared fixtures (a session PostgreSQL server, a session Slurm cluster, a fresh store URL per test on SQLite and
PostgreSQL, a small catalog, the CLI) and the tiers: ``server`` marks the tests that start real servers or tools,
``slow`` the unit tests that take long without one.

`make check` runs ``pytest -n 2 -m "not server and not slow"``, `make test` everything with ``-n 2`` (pytest-xdist):
each worker is a process of its own with its own session servers, its own temp folders, its own ``PREDICTOR_HOME``
and one BLAS/OpenMP thread.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from threadpoolctl import threadpool_limits
from typer.testing import CliRunner

from predictor.catalog import Catalog, load_catalog
from predictor.store import MeasurementStore
from tests import tiers
from tests.pgserver import PostgresServer, find_bindir
from tests.required import required
from tests.slurmserver import SlurmCluster
from tests.slurmserver import available as slurm_available
from tests.trained import base, trained  # noqa: F401 (fixtures: defined once, for tests/serving and tests/cli alike)

CATALOG_YAML = """
platforms:
  cpu-small:
    kind: cpu
    cores: 8
    clock_ghz: 2.4
    memory_gb: 32
    disk: ssd
    power_watts: 150
  gpu-a100:
    kind: gpu
    cores: 32
    clock_ghz: 2.0
    memory_gb: 256
    disk: nvme
    power_watts: 600
algorithms:
  blastn:
    parameters:
      query: {type: file, extractor: fasta, required: true}
      evalue: {type: float, min: 0, default: 10}
      threads: {type: int, min: 1, max: 64, default: 1}
      task: {type: categorical, choices: [megablast, blastn], default: megablast}
      ungapped: {type: bool, default: false}
    implementations:
      cpu-small: {command: [blastn, -query, "{query}"]}
      gpu-a100: {command: [gblastn, -query, "{query}"]}
  mafft:
    parameters:
      input: {type: file, extractor: fasta, required: true}
    implementations:
      cpu-small: {command: [mafft, "{input}"]}
"""

SERVER_MARKERS = ("postgres", "tools", "e2e")
"""Markers that already say a test needs a real server or real programs: each puts the test in the ``server`` tier."""

SERVERS = {
    # fixtures ("<file defining it>::<name>"): every test using one, directly or through another fixture
    "tests/conftest.py::postgres_server": "PostgreSQL (tests/pgserver.py)",
    "tests/conftest.py::slurm_cluster": "Slurm: munged, slurmctld, slurmd (tests/slurmserver.py)",
    "tests/slurm/conftest.py::slurm_memory_cluster": "Slurm with cgroups",
    "tests/trained.py::base": "the API under uvicorn (tests/livesrv.py), over the session's trained home",
    "tests/serving/test_scheduler_routes.py::base": "the API with its scheduler under uvicorn",
    "tests/serving/test_scheduler_routes.py::served_on": "the API under uvicorn on each store backend",
    "tests/serving/test_fallback.py::served": "the API under uvicorn",
    "tests/serving/test_jobs.py::counted": "the API under uvicorn",
    "tests/serving/test_fuzz.py::fuzzed": "the API under uvicorn",
    "tests/serving/test_jsonbody.py::base": "a small app under uvicorn",
    "tests/serving/test_limits.py::strict": "the API under uvicorn",
    "tests/serving/test_limits.py::process": "`predictor serve` in a subprocess",
    "tests/serving/test_memory.py::base": "the API under uvicorn",
    "tests/serving/test_observations.py::service": "the API under uvicorn on each store backend",
    "tests/serving/test_slurm.py::slurm_api": "the API under uvicorn",
    "tests/serving/test_slurm.py::memory_api": "the API under uvicorn",
    "tests/serving/test_slurm.py::planned_api": "the API under uvicorn",
    "tests/serving/test_planning.py::planning_api": "the API under uvicorn",
    "tests/serving/test_slurm.py::test_time_min_never_or_always_whatever_the_planning": "the API under uvicorn, twice",
    "tests/serving/test_slurm_classes.py::class_home": "the API under uvicorn",
    # tests ("<file>" for all its tests, "<file>::<test>" for one) that start a server in their own body
    "tests/serving/test_scheduler_routes_backfill.py": "the API with its scheduler under uvicorn",
    "tests/serving/test_hotswap.py": "the API under uvicorn, restarted against registries up, down and silent",
    "tests/serving/test_learning_loop.py": "the API under uvicorn",
    "tests/serving/test_poison.py": "the API under uvicorn, with the worker and train commands beside it",
    "tests/serving/test_one_service.py": "the API under uvicorn beside the replay's loop",
    "tests/serving/test_token.py": "`predictor serve` in a subprocess",
    "tests/serving/test_limits.py::test_a_request_head_that_trickles_in_or_never_comes_is_refused_with_408": "uvicorn",
    "tests/serving/test_memory.py": "the API under uvicorn (three tests start their own)",
    "tests/serving/test_operations.py::test_an_unexpected_error_is_a_logged_json_500_with_the_request_id": "uvicorn",
    "tests/serving/test_observations.py::test_the_token_is_required": "uvicorn",
}
"""What starts a real server, and which: the tests it concerns are marked ``server`` (out of `make check`). A test
missing here that starts one fails in `make check` (the starters call :func:`tests.tiers.starting`)."""

SLOW = {
    # the same keys as SERVERS ("<file>", "<file>::<test>", "<file>::<test>[<params>]", "<file>::<fixture>")
    "tests/models/test_estimator_checks.py": "scikit-learn's check_estimator on every zoo member (the MLPs the most)",
    "tests/models/test_network.py::test_passes_check_estimator": "scikit-learn's check_estimator on the network",
    "tests/models/test_network.py::test_the_zoo_members_reproduce_for_a_seed": "three fits of the MLP member",
    "tests/models/test_network.py::test_a_seed_fixes_the_fit": "three fits of a network to its full length",
    "tests/predictor/test_envelope.py::test_every_member_answers_within_the_invariant_over_fuzzed_features[mlp]": (
        "the MLP member fitted and fuzzed"
    ),
    "tests/predictor/test_envelope.py::test_every_member_answers_within_the_invariant_over_fuzzed_features[mlp_log]": (
        "the MLP member fitted and fuzzed"
    ),
    "tests/predictor/test_champion_cache.py::test_a_champion_loaded_once_loads_again_without_mlflow": (
        "a new Python process loads the champion"
    ),
    "tests/predictor/test_store.py::test_concurrent_migrations_take_turns": "six Python processes migrating at once",
    "tests/cli/test_serve.py::test_a_local_predict_reads_the_aliases_without_mlflow_and_loads_its_algorithms_champions_alone": (
        "a registry made through MLflow and two local predicts in new Python processes"
    ),
    "tests/training/test_pipeline.py::trained": "two training sessions of four and two models through MLflow",
    "tests/training/test_peak_memory.py::trained": "three training sessions through MLflow",
    "tests/training/test_mlflow_clients.py": "trackers and registries on fresh MLflow databases",
    "tests/training/test_convergence.py": "the default zoo fitted on a bundled dataset",
    "tests/training/test_guard.py::test_the_cli_keeps_the_champion_from_the_mean_unless_forced": "`train` runs",
    "tests/training/test_guard.py::test_make_run_again_on_unchanged_data_trains_nothing_and_says_how_to_force": (
        "`train` runs"
    ),
    "tests/training/test_censored.py::test_censored_long_runs_raise_the_served_limit": "training through MLflow",
    "tests/training/test_worker.py::test_the_worker_reads_the_champions_of_its_settings_not_mlflows_default": (
        "the worker trains through MLflow"
    ),
    "tests/cli/test_learn.py::trained": "a home trained through the CLI, for each test",
    "tests/cli/test_plan.py::test_a_choice_is_recorded_and_the_next_one_starts_from_it": "two plan choices",
    "tests/trained.py::trained": "the API and CLI tests' trained home",
    "tests/simulator/test_learning.py::run": "a simulated run that retrains through the pipeline as jobs end",
    "tests/simulator/test_plan_choice.py::test_a_candidate_better_on_one_window_alone_is_not_promoted": (
        "replays of every candidate configuration"
    ),
    "tests/simulator/test_plan_choice.py::test_the_online_source_learns_a_known_asymmetric_target_on_a_hand_made_log": (
        "an online learner over a long log"
    ),
    "tests/simulator/test_plan_choice.py::test_the_guard_keeps_the_serving_configuration_unless_a_candidate_wins_by_the_margin": (
        "replays of every candidate configuration"
    ),
    "tests/simulator/test_memory.py::test_without_memory_the_hpc2n_replay_is_unchanged_and_ignoring_memory_overcommits": (
        "replays of the real HPC2N log"
    ),
    "tests/simulator/test_memory.py::test_hpc2n_on_its_nodes_without_memory_gives_the_figures_measured_before_memory": (
        "a replay of the real HPC2N log"
    ),
    "tests/simulator/test_compare.py::test_one_row_per_policy_estimates_and_seed": "a comparison in subprocesses",
    "tests/data/test_swf_ingest.py::real_store": "both real logs imported",
    "tests/test_registries.py::test_importing_the_comparison_alone_fills_the_policy_registry": "a new Python process",
    "tests/test_durations.py::test_the_longest_files_are_collected_first": ("a new pytest process collects four files"),
    "tests/test_docs.py::test_a_broken_link_fails_the_strict_build": "a strict mkdocs build of the site",
    "tests/data/test_describe.py::test_cli_describes_the_bundled_dataset": "plots of the bundled dataset",
}
"""Unit tests that start no server but take long (training through MLflow, scikit-learn's checks, replays of the
real logs, new Python processes): marked ``slow``, out of `make check`, still in `make test`."""


def _listed(item: pytest.Item, root: Path, listing: dict[str, str]) -> bool:
    """Whether ``item`` is in ``listing`` (:data:`SERVERS` or :data:`SLOW`): its test (with or without its
    parameters) or module, or a fixture of its closure (by the file defining it)."""
    test = item.nodeid.split("[")[0]
    if item.nodeid in listing or test in listing or test.split("::")[0] in listing:
        return True
    closure = getattr(item, "_fixtureinfo", None)  # test functions have one (pytest's own, private but long stable)
    for name in item.fixturenames:
        for definition in closure.name2fixturedefs.get(name, ())[-1:] if closure else ():  # the one the test gets
            source = inspect.getsourcefile(definition.func)
            if source is not None and f"{Path(source).relative_to(root).as_posix()}::{name}" in listing:
                return True
    return False


def _is_server(item: pytest.Item, root: Path) -> bool:
    """Whether ``item`` starts a real server or real programs: a marker of :data:`SERVER_MARKERS`, or listed in
    :data:`SERVERS`."""
    return any(item.get_closest_marker(name) for name in SERVER_MARKERS) or _listed(item, root, SERVERS)


DURATIONS: dict[str, float] = json.loads((Path(__file__).parent / "durations.json").read_text())
"""Seconds each test file took in a measured full run (``scripts/test_durations.py`` writes it from a junit report)."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``server`` the tests that start real servers or real programs (:func:`_is_server`), ``slow`` those of
    :data:`SLOW`; and collect the longest files first (:data:`DURATIONS`; a file's tests keep their order, files not
    measured come last in their order): with ``--dist loadfile --no-loadscope-reorder`` pytest-xdist hands the files
    out in this order, so a long file starts early instead of ending alone on one worker while the other idles."""
    items.sort(key=lambda item: -DURATIONS.get(item.nodeid.split("::")[0], 0.0))
    for item in items:
        if _is_server(item, config.rootpath):
            item.add_marker(pytest.mark.server)
        if _listed(item, config.rootpath, SLOW):
            item.add_marker(pytest.mark.slow)


_HOME = pytest.StashKey[Path]()
THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
"""The thread counts of OpenBLAS, OpenMP (PyTorch, LightGBM) and MKL, set to one unless the environment says."""


def pytest_configure(config: pytest.Config) -> None:
    """Give this process (a pytest-xdist worker, or the one process) its own ``PREDICTOR_HOME``: code that builds
    ``Settings()`` without a home (a simulator's learning oracle, say) writes there, not into ``.predictor`` of the
    checkout that another worker shares. And one BLAS/OpenMP thread, here and in the programs it starts: the workers
    are the parallelism, and a second thread per worker on two cores only spins (a network's fits took 3.6x the CPU)."""
    for variable in THREADS:
        os.environ.setdefault(variable, "1")
    threadpool_limits(int(os.environ["OPENBLAS_NUM_THREADS"]))  # numpy's OpenBLAS is loaded already
    home = Path(tempfile.mkdtemp(prefix="predictor-home-"))
    config.stash[_HOME] = home
    os.environ["PREDICTOR_HOME"] = str(home)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the process's ``PREDICTOR_HOME``."""
    if (home := config.stash.get(_HOME, None)) is not None:
        shutil.rmtree(home, ignore_errors=True)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Arm the tripwire for a quick-tier test before its fixtures start (see tests/tiers.py)."""
    tiers.running = None if item.get_closest_marker("server") else item.nodeid


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Disarm it once the test's fixtures are torn down."""
    tiers.running = None


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the whole session; missing binaries skip locally and fail in CI."""
    bindir = find_bindir()
    what = "PostgreSQL server binaries (initdb, pg_ctl) not found via pg_config or /usr/lib/postgresql/*/bin"
    required(bindir is not None, what, "CI must run the PostgreSQL tests")
    server = PostgresServer(bindir)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    """A single-node Slurm (munged, slurmctld, slurmd on 127.0.0.1) for the whole session; skipped locally, failed in CI."""
    required(
        slurm_available(),
        "Slurm 22.05 and munge not installed (or not root)",
        "`make test` installs them (make system-deps)",
    )
    cluster = SlurmCluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL of an empty database: a SQLite file in tmp_path, or a new uniquely named PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store' / 'measurements.db'}"
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    name = server.create_database()
    yield server.url(name)
    server.drop_database(name)


@pytest.fixture
def store(store_url: str) -> Iterator[MeasurementStore]:
    """A migrated store on each backend, disposed after the test."""
    store = MeasurementStore(store_url)
    store.migrate()
    yield store
    store.dispose()


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    """A small catalog written for the test so it does not depend on the bundled one."""
    path = tmp_path / "catalog.yaml"
    path.write_text(CATALOG_YAML)
    return load_catalog(path)


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """The CLI, invoked in-process, over a fresh PREDICTOR_HOME in tmp_path."""
    monkeypatch.setenv("PREDICTOR_HOME", str(tmp_path / "home"))
    return CliRunner()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say how many store tests ran on each backend, so CI's log shows PostgreSQL really ran."""
    counts: dict[str, dict[str, int]] = {}
    for outcome in ("passed", "failed", "error", "skipped"):
        for report in terminalreporter.stats.get(outcome, []):
            nodeid = getattr(report, "nodeid", "")
            for backend in ("sqlite", "postgresql"):
                if f"[{backend}" in nodeid or f"-{backend}]" in nodeid or f"-{backend}-" in nodeid:
                    counts.setdefault(backend, {}).setdefault(outcome, 0)
                    counts[backend][outcome] += 1
    for backend, by_outcome in sorted(counts.items()):
        summary = ", ".join(f"{n} {outcome}" for outcome, n in sorted(by_outcome.items()))
        terminalreporter.write_line(f"store tests on {backend}: {summary}")
