"""A throwaway PostgreSQL cluster on 127.0.0.1 for the shared-tracking-server tests, and `mlflow server` on it.

Debian's packaged binaries (/usr/lib/postgresql/<version>/bin, or initdb on PATH): initdb with a password
(scram-sha-256) in a temporary folder, the server on a free port, listening on 127.0.0.1 only. PostgreSQL
refuses to run as root: as root, it runs as the `postgres` user the package creates (runuser). Stopped by
the postmaster's pid (SIGINT: PostgreSQL's fast shutdown), the folder removed.
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from mlgrpo.tracking.server import free_port

INSTALL = "apt-get update && apt-get install -y postgresql (and pip install -e '.[server]' for psycopg)"


def pg_bin() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[4]))
    return Path(versions[-1]).parent if versions else None


def why_not() -> str | None:
    """Why these tests cannot run here (one line with the command that fixes it), or None."""
    if pg_bin() is None:
        return f"PostgreSQL is not installed: {INSTALL}"
    try:
        import psycopg  # noqa: F401  - MLflow's SQLAlchemy store reaches PostgreSQL through it
    except ImportError:
        return "psycopg is not installed (MLflow's PostgreSQL driver): pip install -e '.[server]'"
    if os.geteuid() == 0:
        import pwd

        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return f"running as root without the `postgres` user PostgreSQL must run as: {INSTALL}"
        if shutil.which("runuser") is None:
            return "running as root and runuser (util-linux) is missing: apt-get install -y util-linux"
    return None


class Postgres:
    def __init__(self) -> None:
        self.bin = pg_bin()
        self.folder = Path(tempfile.mkdtemp(prefix="mlgrpo-pg-"))
        self.data = self.folder / "data"
        self.port = free_port()
        self.password = secrets.token_urlsafe(16)
        self.user = "mlgrpo"
        self.pid: int | None = None

    @property
    def url(self) -> str:
        return f"postgresql://{self.user}:{self.password}@127.0.0.1:{self.port}/postgres"

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        result = subprocess.run([*prefix, *command], capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(command[:2])} failed: {result.stderr[-1500:]}")

    def start(self) -> Postgres:
        pwfile = self.folder / "pw"
        pwfile.write_text(self.password + "\n", encoding="utf-8")
        if os.geteuid() == 0:
            import pwd

            entry = pwd.getpwnam("postgres")
            os.chown(self.folder, entry.pw_uid, entry.pw_gid)
            os.chown(pwfile, entry.pw_uid, entry.pw_gid)
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", self.user, "--auth=scram-sha-256",
                  f"--pwfile={pwfile}", "--encoding=UTF8", "--no-sync")
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.folder / "pg.log"),
                  "-w", "-t", "60", "start")
        self.pid = int((self.data / "postmaster.pid").read_text().splitlines()[0])
        return self

    def stop(self) -> None:
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGINT)  # fast shutdown: ends sessions, writes a checkpoint
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    os.kill(self.pid, 0)
                    time.sleep(0.2)
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.pid = None
        shutil.rmtree(self.folder, ignore_errors=True)


def require() -> None:
    reason = why_not()
    if reason:
        pytest.skip(reason)
