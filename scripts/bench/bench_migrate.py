"""`agen migrate` rows/s for a store of 100,000 tasks, SQLite -> Postgres and back, against a raw copy.

The store is made with direct inserts (tasks with realistic JSON input/labels/result, in every state).
Each direction is timed twice in the same run on the same machine:

- ``agen migrate`` as a user runs it (a fresh process: open both stores, keyed batches with progress rows,
  Postgres sequences, then the verification pass that reads both sides again);
- the raw floor: every task row (all its columns) read from the source and written into a fresh table of
  the same schema in one transaction (psycopg COPY into Postgres; sqlite3 executemany into SQLite), with no progress, no
  verification.

Postgres is a throwaway cluster (tests/pg.py) unless ``--pg-url`` names a database to create others beside.

    python -m scripts.bench.bench_migrate [--tasks 100000] [--pg-url postgresql://…]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agen.store import SQLiteStore
from agen.store.base import new_ulid

AGEN = str(Path(sys.executable).with_name("agen"))
STATES = ("succeeded", "failed", "queued", "cancelled", "waiting")
TASK_COLS = (
    "id", "namespace", "deployment_id", "deployment", "state", "input", "labels", "outcome",
    "root_task_id", "seq", "created_ms", "updated_ms",
)  # fmt: skip


def make_store(path: Path, n: int) -> None:
    """A migrated store holding ``n`` tasks, written with executemany in one transaction."""
    SQLiteStore.open_sync(path).close_sync()
    now = int(time.time() * 1000)

    def rows() -> Iterator[tuple[Any, ...]]:
        for i in range(n):
            tid = new_ulid()
            yield (
                tid, "default", "dep-1", "bench", STATES[i % len(STATES)],
                json.dumps({"text": f"task {i}: summarise the report", "n": i}),
                json.dumps({"team": "ops", "run": str(i % 7)}),
                json.dumps({"text": "done", "tokens": 42}) if i % 5 != 2 else None,
                tid, i + 1, now - n + i, now - n + i,
            )  # fmt: skip

    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    marks = ", ".join("?" * len(TASK_COLS))
    conn.executemany(f"INSERT INTO tasks ({', '.join(TASK_COLS)}) VALUES ({marks})", rows())
    conn.execute("COMMIT")
    conn.close()


def run_migrate(home: Path, src: str, dst: str) -> tuple[float, int]:
    env = {**os.environ, "AGEN_HOME": str(home)}
    env.pop("AGEN_STORE", None)
    t0 = time.perf_counter()
    r = subprocess.run(
        [AGEN, "migrate", "--from", src, "--to", dst, "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    dt = time.perf_counter() - t0
    if r.returncode:
        raise RuntimeError(f"agen migrate failed ({r.returncode}): {r.stderr}")
    report = json.loads(r.stdout)
    assert report["ok"], report
    return dt, int(report["rows"])


def all_columns() -> str:
    """Every column of tasks, as agen migrate copies them (most are NULL or their default here)."""
    from agen.store.copy_schema import copy_plan

    return ", ".join(next(t for t in copy_plan() if t.name == "tasks").columns)


def raw_to_postgres(src: Path, url: str) -> float:
    """Raw floor: SELECT every task from SQLite, COPY it into a fresh Postgres tasks table, one transaction."""
    import psycopg

    with psycopg.connect(url) as conn:
        conn.execute("CREATE TABLE raw_tasks (LIKE tasks INCLUDING ALL)")
        conn.commit()
        t0 = time.perf_counter()
        lite = sqlite3.connect(src)
        cols = all_columns()
        with conn.cursor() as cur, cur.copy(f"COPY raw_tasks ({cols}) FROM STDIN") as cp:
            for row in lite.execute(f"SELECT {cols} FROM tasks"):
                cp.write_row(row)
        conn.commit()
        dt = time.perf_counter() - t0
        lite.close()
    return dt


def raw_to_sqlite(url: str, dst: Path) -> float:
    """Raw floor back: SELECT every task from Postgres, executemany into a fresh SQLite store, one transaction."""
    import psycopg

    SQLiteStore.open_sync(dst).close_sync()
    cols = all_columns()
    marks = ", ".join("?" * (cols.count(",") + 1))
    t0 = time.perf_counter()
    lite = sqlite3.connect(dst, isolation_level=None)
    with psycopg.connect(url) as conn, conn.cursor(name="raw") as cur:
        cur.itersize = 5000
        cur.execute(f"SELECT {cols} FROM tasks")
        lite.execute("BEGIN")
        lite.executemany(f"INSERT INTO tasks ({cols}) VALUES ({marks})", cur)
        lite.execute("COMMIT")
    dt = time.perf_counter() - t0
    lite.close()
    return dt


def run(n: int = 100_000, pg_url: str | None = None) -> dict[str, Any]:
    cluster = dbs = None
    if pg_url is None:
        from tests.pg import Databases, start_cluster

        cluster = start_cluster()
        dbs = Databases(cluster)
    try:
        with tempfile.TemporaryDirectory(prefix="agen-bench-migrate-") as tmp:
            root = Path(tmp)
            src = root / "src.db"
            make_store(src, n)
            pg_a = dbs.new() if dbs else pg_url
            pg_b = dbs.new() if dbs else pg_url
            assert pg_a and pg_b
            to_pg_s, rows = run_migrate(root / "home1", f"sqlite:{src}", pg_a)
            back_s, _ = run_migrate(root / "home2", pg_a, f"sqlite:{root / 'back.db'}")
            raw_pg_s = raw_to_postgres(src, pg_b)
            raw_back_s = raw_to_sqlite(pg_a, root / "raw_back.db")
    finally:
        if dbs is not None:
            dbs.close()
        if cluster is not None:
            cluster.stop()
            import shutil

            shutil.rmtree(cluster.root, ignore_errors=True)
    return {
        "tasks": n,
        "rows": rows,
        "to_postgres": {
            "seconds": round(to_pg_s, 2),
            "rows_per_s": round(rows / to_pg_s),
            "raw_seconds": round(raw_pg_s, 2),
            "raw_rows_per_s": round(n / raw_pg_s),
        },
        "to_sqlite": {
            "seconds": round(back_s, 2),
            "rows_per_s": round(rows / back_s),
            "raw_seconds": round(raw_back_s, 2),
            "raw_rows_per_s": round(n / raw_back_s),
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--tasks", type=int, default=100_000)
    ap.add_argument("--pg-url", default=None)
    args = ap.parse_args()
    print(json.dumps(run(args.tasks, args.pg_url), indent=2))


if __name__ == "__main__":
    main()
