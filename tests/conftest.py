"""Shared fixtures: a session PostgreSQL server, a session Slurm cluster, a fresh store URL per test on SQLite and PostgreSQL, a small catalog, the CLI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from predictor.catalog import Catalog, load_catalog
from predictor.store import MeasurementStore
from tests.pgserver import PostgresServer, find_bindir
from tests.required import required
from tests.slurmserver import SlurmCluster
from tests.slurmserver import available as slurm_available

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
    required(slurm_available(), "Slurm 22.05 and munge not installed (or not root)", "`make test` installs them (make system-deps)")
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
