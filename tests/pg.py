"""A throwaway PostgreSQL cluster for tests: initdb into a temp folder, served on a Unix socket there.

The server binaries come from the system (``/usr/lib/postgresql/*/bin``, or ``initdb`` on PATH). PostgreSQL
refuses to run as root, so as root the cluster belongs to an unprivileged user (``postgres`` if it exists,
else one made with ``useradd``). Without binaries the Postgres tests skip with the reason; with
``AGEN_REQUIRE_POSTGRES=1`` (set by .ci/run) they fail instead, so CI cannot pass without them.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

_USER = "postgres"


@dataclass
class Cluster:
    root: Path
    bindir: Path
    user: str | None  # run the binaries as this user (we are root), else as ourselves
    durable: bool = (
        False  # initdb's defaults (fsync, synchronous_commit, full_page_writes on): benchmarks
    )

    @property
    def socket_dir(self) -> Path:
        return self.root / "sock"

    def url(self, dbname: str) -> str:
        return f"postgresql://{self._role()}@/{dbname}?host={self.socket_dir}&port=5432"

    def _role(self) -> str:
        return self.user or pwd.getpwuid(os.getuid()).pw_name

    def _run(self, *args: str) -> None:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if self.user:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode:
            raise RuntimeError(
                f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr or proc.stdout}"
            )

    def start(self) -> None:
        data = self.root / "data"
        self.socket_dir.mkdir()
        if self.user:
            entry = pwd.getpwnam(self.user)
            for p in (self.root, self.socket_dir):
                os.chown(p, entry.pw_uid, entry.pw_gid)
        self._run(
            "initdb", "-D", str(data), "-A", "trust", "-U", self._role(), "--no-sync", "-E", "UTF8"
        )
        opts = f"-k {self.socket_dir} -c listen_addresses='' -c port=5432 -c max_connections=200"
        if (self.bindir.parent / "lib" / "pg_stat_statements.so").exists():
            # statements and locks per task are counted (tests/unit/test_pg_concurrent_writers.py, pg_bench)
            opts += " -c shared_preload_libraries=pg_stat_statements"
        if not self.durable:  # tests measure agen, not this disk
            opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run(
            "pg_ctl", "-D", str(data), "-o", opts, "-l", str(self.root / "log"), "-w", "start"
        )

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")


def find_bindir() -> Path | None:
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True):
        return Path(candidate).parent
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def _unprivileged_user() -> str:
    try:
        pwd.getpwnam(_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", _USER], check=True, capture_output=True
        )
    return _USER


_OWNER = "owner.pid"  # the pytest process a cluster belongs to


def _stop_orphans(bindir: Path) -> None:
    """Stop clusters left by test processes that were killed before their teardown (a timeout, ^C twice)."""
    for owner in glob.glob(os.path.join(tempfile.gettempdir(), "agen-pg-*", _OWNER)):
        root = Path(owner).parent
        try:
            pid = int(Path(owner).read_text())
            os.kill(pid, 0)
            continue  # its owner still runs
        except ProcessLookupError:
            pass
        except (ValueError, OSError):
            continue
        entry = root.stat()
        user = (
            pwd.getpwuid(entry.st_uid).pw_name if os.getuid() == 0 and entry.st_uid != 0 else None
        )
        with contextlib.suppress(RuntimeError):
            Cluster(root, bindir, user).stop()
        shutil.rmtree(root, ignore_errors=True)


def start_cluster(*, durable: bool = False) -> Cluster:
    """Start a cluster, or skip (fail under AGEN_REQUIRE_POSTGRES=1) when this machine has no server."""
    bindir = find_bindir()
    if bindir is None:
        reason = (
            "no PostgreSQL server binaries (initdb) found in /usr/lib/postgresql/*/bin or on PATH"
        )
        if os.environ.get("AGEN_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"AGEN_REQUIRE_POSTGRES=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    try:
        import psycopg  # noqa: F401
    except ImportError:
        reason = "psycopg is not installed (pip install -e '.[postgres]')"
        if os.environ.get("AGEN_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"AGEN_REQUIRE_POSTGRES=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    _stop_orphans(bindir)
    user = _unprivileged_user() if os.getuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="agen-pg-"))
    os.chmod(root, 0o755)
    cluster = Cluster(root, bindir, user, durable)
    cluster.start()
    (root / _OWNER).write_text(str(os.getpid()))
    return cluster


class Databases:
    """Fresh databases for tests, each a copy of one migrated template (a copy is much faster than migrating)."""

    def __init__(self, cluster: Cluster) -> None:
        import psycopg

        from agen.store._pg_migrate import migrate_postgres
        from agen.store.base import now_ms

        self.cluster = cluster
        self._n = 0
        self._admin = psycopg.connect(cluster.url("postgres"), autocommit=True)
        self._admin.execute("CREATE DATABASE agen_template")
        with psycopg.connect(cluster.url("agen_template")) as conn:
            migrate_postgres(conn, "template", now_ms())

    def new(self, *, migrated: bool = True) -> str:
        self._n += 1
        name = f"agen_test_{os.getpid()}_{self._n}"
        template = "agen_template" if migrated else "template0"
        self._admin.execute(f"CREATE DATABASE {name} TEMPLATE {template}")
        return self.cluster.url(name)

    def close(self) -> None:
        self._admin.close()
