"""A throwaway PostgreSQL server for the test session: initdb, pg_ctl start on 127.0.0.1, one database per test."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from tests import tiers


def find_bindir() -> Path | None:
    """The folder holding initdb and pg_ctl: ``pg_config --bindir`` first, then the newest /usr/lib/postgresql/*/bin."""
    candidates: list[Path] = []
    if shutil.which("pg_config"):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=False)
        candidates.append(Path(out.stdout.strip()))
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True)
    candidates += [Path(p) for p in versions]
    return next((c for c in candidates if (c / "initdb").exists() and (c / "pg_ctl").exists()), None)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresServer:
    """One server in a temporary folder; run as the ``postgres`` OS user when we are root (initdb refuses root)."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.port = _free_port()
        self.root = Path(tempfile.mkdtemp(prefix="predictor-pg-"))
        self.datadir = self.root / "data"
        self.log = self.root / "server.log"
        self._as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self._as_user:
            shutil.chown(self.root, "postgres", "postgres")

    def start(self) -> None:
        """initdb with trust auth, then start and wait until the server accepts connections."""
        tiers.starting("PostgreSQL")
        self._run("initdb", "-D", str(self.datadir), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        self._run("pg_ctl", "-D", str(self.datadir), "-o", options, "-l", str(self.log), "-w", "-t", "60", "start")

    def stop(self) -> None:
        """Stop the server fast and remove its folder."""
        if (self.datadir / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.datadir), "-m", "fast", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """Create an empty database with a unique name and return its name."""
        name = f"test_{uuid.uuid4().hex[:16]}"
        self._admin(f'CREATE DATABASE "{name}"')
        return name

    def drop_database(self, name: str) -> None:
        self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def _admin(self, sql: str) -> None:
        with psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(sql)

    def _run(self, program: str, *args: str) -> None:
        cmd = [*self._as_user, str(self.bindir / program), *args]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}{done.stderr}{log}")


@contextmanager
def throwaway_database() -> Iterator[str]:
    """The URL of an empty database on a PostgreSQL server started for the caller and stopped after (the benchmarks'
    stores); RuntimeError when the server's binaries are not installed."""
    bindir = find_bindir()
    if bindir is None:
        raise RuntimeError("PostgreSQL server binaries (initdb, pg_ctl) not found")
    server = PostgresServer(bindir)
    server.start()
    try:
        yield server.url(server.create_database())
    finally:
        server.stop()
