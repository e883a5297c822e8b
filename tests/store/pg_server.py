"""A real, throwaway PostgreSQL server for tests: `start_pg_server()` and a session fixture.

initdb + pg_ctl from Debian's package (`/usr/lib/postgresql/<n>/bin`), on a free private
port, with its data directory and socket under a temp dir and fsync off. As root the
server must run as another user, so the commands go through `runuser -u postgres --`.
Skips with the reason only when the binaries (or that user) are missing.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class PgServer:
    dsn: str
    admin_dsn: str
    start_seconds: float


def _pg_bin() -> Path | None:
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                  key=lambda d: int(d.split("/")[-2]) if d.split("/")[-2].isdigit() else 0)
    for d in reversed(dirs):
        if (Path(d) / "initdb").exists() and (Path(d) / "pg_ctl").exists():
            return Path(d)
    found = shutil.which("initdb")
    return Path(found).parent if found and shutil.which("pg_ctl") else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class RunningPg:
    """A started server; `stop()` stops it and removes its directory."""

    server: PgServer
    base: Path
    pg_ctl: list[str]

    def stop(self) -> None:
        subprocess.run([*self.pg_ctl, "-m", "immediate", "-w", "stop"], capture_output=True,
                       timeout=60)
        shutil.rmtree(self.base, ignore_errors=True)


def start_pg_server() -> RunningPg:
    """initdb + pg_ctl start on a free loopback port. Raises `PgUnavailable` (with the
    reason) when the binaries or the `postgres` user are missing, RuntimeError if the
    server does not start."""
    pg_bin = _pg_bin()
    if pg_bin is None:
        raise PgUnavailable("PostgreSQL binaries (initdb, pg_ctl) not found in "
                            "/usr/lib/postgresql/*/bin or on PATH; install Debian's "
                            "postgresql package (scripts/ensure-postgres.sh)")
    as_user: list[str] = []
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError as exc:
            raise PgUnavailable("running as root and there is no 'postgres' user to run "
                                "the server as") from exc
        as_user = ["runuser", "-u", "postgres", "--"]
    base = Path(tempfile.mkdtemp(prefix="agentloom-pg-"))
    data, sock, log = base / "data", base / "sock", base / "server.log"
    sock.mkdir()
    if as_user:
        shutil.chown(base, "postgres", "postgres")
        shutil.chown(sock, "postgres", "postgres")
        base.chmod(0o755)
    port = _free_port()
    started = time.perf_counter()
    try:
        subprocess.run([*as_user, str(pg_bin / "initdb"), "-D", str(data), "-U", "postgres",
                        "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"],
                       check=True, capture_output=True, timeout=60)
        subprocess.run([*as_user, str(pg_bin / "pg_ctl"), "-D", str(data), "-l", str(log), "-w",
                        "-t", "30", "-o",
                        f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off "
                        "-c synchronous_commit=off -c full_page_writes=off",
                        "start"], check=True, capture_output=True, timeout=60)
    except subprocess.CalledProcessError as exc:
        server_log = log.read_text() if log.exists() else ""
        shutil.rmtree(base, ignore_errors=True)
        raise RuntimeError(f"could not start PostgreSQL: {exc.stderr.decode()}\n{server_log}"
                           ) from exc
    dsn = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    return RunningPg(server=PgServer(dsn=dsn, admin_dsn=dsn,
                                     start_seconds=time.perf_counter() - started),
                     base=base, pg_ctl=[*as_user, str(pg_bin / "pg_ctl"), "-D", str(data)])


class PgUnavailable(Exception):
    pass


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    try:
        running = start_pg_server()
    except PgUnavailable as exc:
        pytest.skip(str(exc))
    print(f"\n[pg_server] initdb + start took {running.server.start_seconds:.2f}s "
          f"({running.server.dsn})")
    try:
        yield running.server
    finally:
        running.stop()
