"""The floor of agen's task path on Postgres: the records one task leaves, written by hand with psycopg.

What issue #32 asks for where a target is not met: the same rows agen keeps for one fake-model task
(seed 000 §5/§7/§11), on agen's own schema, at initdb's durable defaults, with no agen code in the
way and the fewest round trips the rows allow, so the figure says what this machine, this server and
Python with psycopg can do at all:

1. submit: the task row (queued) and its task.queued event;
2. lease into running and open the run: the task leased with ``FOR UPDATE SKIP LOCKED`` and marked
   running, its task.started event, the session, conversation, run, its unfinished run span, the input
   message and run.started;
3. checkpoint and complete: the answer, the model-call span, the usage row, the run and its span
   finished, run.finished, the task succeeded and task.succeeded.

Each transaction is one round trip (psycopg pipeline mode, BEGIN to COMMIT), three commits a task;
``--workers`` coroutines on a connection each submit, lease and complete tasks until ``--n`` ended.
Run in one process beside the rows agen writes, it is agen's pipeline with everything but the records
taken away.

    python -m scripts.bench.pg_floor [--n 2000] [--workers 8] [--fsync-off] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import time
from typing import Any

from agen.store.base import new_ulid

_EVENT = (
    "INSERT INTO events (id, namespace, type, deployment, task_id, run_id, data, created_ms)"
    " VALUES (%s, 'default', %s, 'bench', %s, %s, '{}', %s)"
)


def _event(type_: str, task: str, run: str | None, now: int) -> tuple[Any, ...]:
    return (new_ulid(), type_, task, run, now)


async def _worker(conn: Any, dep: str, todo: itertools.count[int], n: int, done: list[int]) -> None:
    while next(todo) < n:
        now = int(time.time() * 1000)
        task = new_ulid()
        async with conn.pipeline(), conn.transaction():  # 1. submit
            await conn.execute(
                "INSERT INTO tasks (id, namespace, deployment_id, deployment, state, input,"
                " root_task_id, created_ms, updated_ms)"
                " VALUES (%s, 'default', %s, 'bench', 'queued', 'hello', %s, %s, %s)",
                (task, dep, task, now, now),
            )
            await conn.execute(_EVENT, _event("task.queued", task, None, now))
        run, session, conv, span = new_ulid(), new_ulid(), new_ulid(), new_ulid()
        leased = await _lease_and_open(conn, dep, task, run, session, conv, span, now)
        if leased is None:  # every queued task was leased by the other workers meanwhile
            continue
        now = int(time.time() * 1000)
        async with conn.pipeline(), conn.transaction():  # 3. checkpoint and complete
            await conn.execute(
                "INSERT INTO messages (id, conversation_id, run_id, seq, turn, role, content,"
                " created_ms) VALUES (%s, %s, %s, 2, 1, 'assistant', 'hello', %s)",
                (new_ulid(), conv, run, now),
            )
            await conn.execute(
                "INSERT INTO spans (id, trace_id, parent_id, run_id, task_id, namespace,"
                " deployment, name, status, attrs, started_ms, ended_ms) VALUES (%s, %s, %s, %s,"
                " %s, 'default', 'bench', 'chat fake', 'ok', '{}', %s, %s)",
                (new_ulid(), run, span, run, task, now, now),
            )
            await conn.execute(
                "INSERT INTO usage (id, run_id, task_id, namespace, deployment, provider, model,"
                " input_tokens, output_tokens, day, created_ms) VALUES (%s, %s, %s, 'default',"
                " 'bench', 'fake', 'fake', 3, 1, '2026-01-01', %s)",
                (new_ulid(), run, task, now),
            )
            await conn.execute(
                "UPDATE runs SET turns = 1, input_tokens = 3, output_tokens = 1, status ="
                " 'succeeded', outcome = '{}', finished_ms = %s, updated_ms = %s"
                " WHERE id = %s AND epoch = 1",
                (now, now, run),
            )
            await conn.execute(
                "UPDATE spans SET status = 'ok', ended_ms = %s WHERE id = %s", (now, span)
            )
            await conn.execute(_EVENT, _event("run.finished", leased, run, now))
            await conn.execute(
                "UPDATE tasks SET state = 'succeeded', outcome = '{}', finished_ms = %s,"
                " updated_ms = %s WHERE id = %s",
                (now, now, leased),
            )
            await conn.execute(_EVENT, _event("task.succeeded", leased, run, now))
        done[0] += 1


async def one_at_a_time(url: str, samples: int) -> list[float]:
    """One task's records at a time on an otherwise idle server (ms each, after one to warm up): the
    floor of one task's submit -> done, three commits one after another and nothing between them."""
    import psycopg

    from agen.store.postgres import PostgresStore
    from tests.unit.queue_helpers import add_deployment

    store = await PostgresStore.open(url)  # agen's schema
    try:
        dep: str = await store.write(lambda tx: add_deployment(tx, "bench"))
    finally:
        await store.close()
    lat: list[float] = []
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        for i in range(samples + 1):
            t0 = time.perf_counter()
            await _worker(conn, dep, itertools.count(), 1, [0])
            if i:
                lat.append((time.perf_counter() - t0) * 1000)
            await asyncio.sleep(0.2)
    return lat


async def _lease_and_open(
    conn: Any, dep: str, task: str, run: str, session: str, conv: str, span: str, now: int
) -> str | None:
    """Step 2 in one round trip; the id of the task it leased. When every queued task is locked by
    another worker's lease just then, that transaction is rolled back and the lease tried again,
    until one is leased or none is queued any more (None)."""
    import psycopg

    while True:
        leased = None
        async with conn.pipeline(), conn.transaction():  # 2. lease into running, open the run
            cur = await conn.execute(
                "UPDATE tasks SET state = 'running', lease_id = %s, lease_expires_ms = %s,"
                " leased_ms = %s, started_ms = %s, attempts = attempts + 1 WHERE id ="
                " (SELECT id FROM tasks WHERE deployment_id = %s AND state = 'queued'"
                " ORDER BY priority, seq LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id",
                (new_ulid(), now + 60_000, now, now, dep),
            )
            await conn.execute(_EVENT, _event("task.started", task, None, now))
            await conn.execute(
                "INSERT INTO sessions (id, namespace, deployment, created_ms, updated_ms)"
                " VALUES (%s, 'default', 'bench', %s, %s)",
                (session, now, now),
            )
            await conn.execute(
                "INSERT INTO conversations (id, session_id, namespace, deployment, next_seq,"
                " created_ms, updated_ms) VALUES (%s, %s, 'default', 'bench', 2, %s, %s)",
                (conv, session, now, now),
            )
            await conn.execute(
                "INSERT INTO runs (id, namespace, deployment, task_id, session_id, conversation_id,"
                " root_run_id, trace_id, span_id, status, input, epoch, started_ms, updated_ms)"
                " VALUES (%s, 'default', 'bench', %s, %s, %s, %s, %s, %s, 'running', 'hello', 1,"
                " %s, %s)",
                (run, task, session, conv, run, run, span, now, now),
            )
            await conn.execute(
                "INSERT INTO spans (id, trace_id, run_id, task_id, namespace, deployment, name,"
                " status, attrs, started_ms) VALUES (%s, %s, %s, %s, 'default', 'bench',"
                " 'agen.run', 'unfinished', '{}', %s)",
                (span, run, run, task, now),
            )
            await conn.execute(
                "INSERT INTO messages (id, conversation_id, run_id, seq, turn, role, content,"
                " created_ms) VALUES (%s, %s, %s, 1, 0, 'user', 'hello', %s)",
                (new_ulid(), conv, run, now),
            )
            await conn.execute(_EVENT, _event("run.started", task, run, now))
            row = await cur.fetchone()
            if row is None:
                raise psycopg.Rollback()
            leased = row[0]
        if leased is not None:
            return str(leased)
        left = await conn.execute(
            "SELECT EXISTS (SELECT 1 FROM tasks WHERE deployment_id = %s AND state = 'queued')",
            (dep,),
        )
        if not (await left.fetchone())[0]:
            return None


async def floor(url: str, n: int, workers: int) -> dict[str, Any]:
    import psycopg

    from agen.store.postgres import PostgresStore
    from tests.unit.queue_helpers import add_deployment

    store = await PostgresStore.open(url)  # agen's schema
    try:
        dep: str = await store.write(lambda tx: add_deployment(tx, "bench"))
    finally:
        await store.close()
    conns = [await psycopg.AsyncConnection.connect(url, autocommit=True) for _ in range(workers)]
    done = [0]
    todo = itertools.count()
    t0, c0 = time.perf_counter(), time.process_time()
    await asyncio.gather(*(_worker(c, dep, todo, n, done) for c in conns))
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    for c in conns:
        await c.close()
    return {
        "tasks": done[0],
        "workers": workers,
        "tasks_per_s": round(done[0] / seconds),
        "cpu_us_per_task": round(cpu / n * 1e6),
        "commits_per_task": 3,
    }


def run(n: int, workers: int, *, durable: bool = True) -> dict[str, Any]:
    from tests.pg import Databases, start_cluster

    cluster = start_cluster(durable=durable)
    dbs = Databases(cluster)
    try:
        os.environ.setdefault("AGEN_HOME", "/tmp/agen-pg-floor")
        return asyncio.run(floor(dbs.new(), n, workers))
    finally:
        dbs.close()
        cluster.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--fsync-off", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out = run(a.n, a.workers, durable=not a.fsync_off)
    if a.json:
        json.dump(out, sys.stdout)
        print()
        return
    print(
        f"the records of {out['tasks']} tasks by hand ({out['workers']} connections, 3 commits a task):"
        f" {out['tasks_per_s']:,} tasks/s, {out['cpu_us_per_task']} us of client CPU a task"
    )


if __name__ == "__main__":
    main()
