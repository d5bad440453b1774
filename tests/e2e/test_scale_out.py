"""Issue #19's end-to-end: two `agen hub serve` on one Postgres over TLS, two `agen nest run` (one
`process`, one `inproc` backend) enrolled by join tokens and pinned by --ca-hash, four deployments
placed by labels, 200 tasks; one Nest and one Hub SIGKILLed midway; every task ends exactly once."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import Up, wait_until
from tests.e2e.test_nest_run import Nest
from tests.fleet_helpers import write_bundle

TEST_SERVER = str(Path(__file__).parent.parent / "fixtures" / "mcp_test_server.py")
KEK = "scale-out-test-key-encryption-key-0123456789abcdef"
TASKS = 200

# deployment -> (the labels it is placed by, its scale)
DEPLOYMENTS: dict[str, tuple[dict[str, str], dict[str, int]]] = {
    "alpha": ({"zone": "a"}, {"min": 1, "max": 1, "maxConcurrency": 4}),
    "beta": ({"zone": "b"}, {"min": 1, "max": 1, "maxConcurrency": 4}),
    "gamma": ({"pool": "shared"}, {"min": 2, "max": 2, "maxConcurrency": 4}),
    "delta": ({"pool": "shared"}, {"min": 2, "max": 2, "maxConcurrency": 4}),
}


def marker_bundle(
    root: Path, name: str, labels: dict[str, str], scale: dict[str, int], *, gated: bool = False
) -> Path:
    """One tool step that appends the task's id to ``markers`` (a side effect per task), then done.
    ``gated``: then a step that waits until the file ``gate`` exists (idempotent: a resumed run waits
    again), so the test knows work is in flight when it kills the Nest running it."""
    steps: list[dict[str, Any]] = [
        {"toolCalls": [{"name": "t_append_task", "arguments": {"path": str(root / "markers")}}]}
    ]
    if gated:
        gate = {"gate": str(root / "gate"), "started": str(root / "started")}
        steps.append({"toolCalls": [{"name": "t_wait_for_gate", "arguments": gate}]})
    bundle = write_bundle(
        root / name,
        name,
        script=[*steps, {"text": "done"}],
        config={
            "kind": "pool",
            "scale": scale,
            "placement": {"labels": labels},
            "permissions": {"default": "allow"},
        },
    )
    server = {"command": sys.executable, "args": [TEST_SERVER]}
    (bundle / "mcp.json").write_text(json.dumps({"mcpServers": {"t": server}}))
    return bundle


def _rows(pg_url: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(pg_url) as conn:
        return list(conn.execute(sql, args).fetchall())


def _submit(hub: Up, deployment: str, i: int) -> str:
    r = hub.http("SubmitTask", {"deployment": deployment, "input": f"job {i}"})
    assert r.status_code == 200, r.text
    return str(r.json()["task"]["id"])


def test_two_hubs_and_two_nests_over_tls_run_200_tasks_exactly_once_through_a_nest_and_a_hub_kill(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGEN_HUB_KEK", KEK)  # the same KEK on every Hub: they share the sealed CA
    hub_a = Up(tmp_path / "hub-a", command=("hub", "serve"), args=("--tls", "--store", pg_url))
    hub_b = Up(tmp_path / "hub-b", command=("hub", "serve"), args=("--tls", "--store", pg_url))
    nests: list[Nest] = []
    try:
        hub_a.start()  # first: it makes the CA and leads
        wait_until(  # ready is not leading: B must start after A holds the leadership lease
            lambda: _rows(
                pg_url,
                "SELECT 1 FROM events WHERE type = 'leader.elected' AND data LIKE '%%hub-leader%%'",
            ),
            60,
            "hub A elected leader",
        )
        hub_b.start()
        monkeypatch.delenv("AGEN_HUB_KEK")  # Nests never hold the KEK
        pinned = hub_a.local()["ca_hash"]
        assert hub_b.local()["ca_hash"] == pinned  # one CA for every Hub on the store

        for name, (labels, scale) in DEPLOYMENTS.items():
            # alpha runs only on the process Nest, and its tasks wait at a gate opened after that
            # Nest is killed: the kill always finds work in flight, however fast the rest runs
            bundle = marker_bundle(tmp_path / "bundles", name, labels, scale, gated=name == "alpha")
            hub_a.agen("deploy", str(bundle))

        def nest(name: str, backend: str, labels: dict[str, str], join: str | None) -> Nest:
            args = ["--ca-hash", pinned, "--backend", backend, "--capacity", "8"]
            if join is not None:
                args += ["--join-token", join]
            n = Nest(hub_a, tmp_path / name, name, *args, store=pg_url, more_hubs=(hub_b,))
            nests.append(n)
            return n

        def join(labels: dict[str, str]) -> str:
            flags = [f for k, v in labels.items() for f in ("--label", f"{k}={v}")]
            return str(hub_b.json("join-token", "create", *flags)["token"])

        p_labels, i_labels = {"zone": "a", "pool": "shared"}, {"zone": "b", "pool": "shared"}
        proc_nest = nest("proc", "process", p_labels, join(p_labels))
        nest("inproc", "inproc", i_labels, join(i_labels))

        def nest_ids() -> dict[str, str]:
            return dict(_rows(pg_url, "SELECT name, id FROM nests WHERE state = 'active'"))

        ids = wait_until(lambda: len(nest_ids()) == 2 and nest_ids(), 60, "both Nests enrolled")
        labels_seen = {n["name"]: n["labels"] for n in hub_b.json("nests")["nests"]}
        assert labels_seen == {"proc": p_labels, "inproc": i_labels}

        names = list(DEPLOYMENTS)
        tasks: dict[str, str] = {}  # task id -> deployment
        for i in range(TASKS // 2):  # the first half through both Hubs
            dep = names[i % len(names)]
            tasks[_submit(hub_a if i % 2 else hub_b, dep, i)] = dep

        def succeeded() -> int:
            [(n,)] = _rows(pg_url, "SELECT COUNT(*) FROM tasks WHERE state = 'succeeded'")
            return int(n)

        def running_on_proc() -> bool:
            [(n,)] = _rows(
                pg_url,
                "SELECT COUNT(*) FROM tasks WHERE state = 'running' AND lease_nest_id = %s",
                ids["proc"],
            )
            at_gate = (tmp_path / "bundles" / "started").exists()  # an alpha run waits there
            return succeeded() >= 20 and int(n) > 0 and at_gate

        wait_until(running_on_proc, 90, "work under way on the process Nest")
        proc_nest.kill()  # mid-task: no drain, no report; its leases must expire
        hub_a.kill()  # the leader and one Nest's first Hub: the other Hub takes over both
        (tmp_path / "bundles" / "gate").touch()  # alpha's tasks, run again elsewhere, go through
        for i in range(TASKS // 2, TASKS):
            dep = names[i % len(names)]
            tasks[_submit(hub_b, dep, i)] = dep
        # The killed Nest comes back (its supervisor restarts it) with its saved credential.
        nest("proc", "process", p_labels, None)

        def all_ended() -> bool:
            [(n,)] = _rows(
                pg_url,
                "SELECT COUNT(*) FROM tasks WHERE state IN ('succeeded', 'failed', 'cancelled',"
                " 'expired')",
            )
            return int(n) == TASKS

        try:
            wait_until(all_ended, 150, "every task to end")
        except AssertionError:
            left = _rows(
                pg_url,
                "SELECT deployment, state, lease_nest_id, COUNT(*) FROM tasks"
                " GROUP BY deployment, state, lease_nest_id",
            )
            logs = {n.name: n.log.read_text()[-3000:] for n in nests}
            raise AssertionError(f"tasks left: {left}\nnests: {ids}\nlogs: {logs}") from None

        states = Counter(s for (s,) in _rows(pg_url, "SELECT state FROM tasks"))
        why = _rows(  # a task that did not succeed: how it ended, in its own events
            pg_url,
            "SELECT e.task_id, e.type, e.data FROM events e JOIN tasks t ON t.id = e.task_id"
            " WHERE t.state <> 'succeeded' ORDER BY e.task_id, e.seq",
        )
        assert states == {"succeeded": TASKS}, (states, why)
        ends = Counter(
            t
            for (t,) in _rows(
                pg_url,
                "SELECT task_id FROM events WHERE type IN ('task.succeeded', 'task.failed',"
                " 'task.cancelled', 'task.expired')",
            )
        )
        assert set(ends) == set(tasks) and set(ends.values()) == {1}  # one end per task
        runs = Counter(t for (t,) in _rows(pg_url, "SELECT task_id FROM runs"))
        assert set(runs.values()) == {1}  # a re-leased task resumed its run, never a second one

        # The side effect happened once per task, never twice. A Nest killed between the step's start
        # and its record leaves the run marked effect_unknown for an operator (the step is not run
        # again): its marker is there once (the step ran before the kill) or not at all.
        markers = Counter((tmp_path / "bundles" / "markers").read_text().split())
        assert set(markers) <= set(tasks) and set(markers.values()) == {1}, markers.most_common(3)
        unknown = {
            t for (t,) in _rows(pg_url, "SELECT task_id FROM runs WHERE effect_unknown <> 0")
        }
        assert set(tasks) - set(markers) <= unknown

        # Placement by labels: alpha ran only on zone=a, beta only on zone=b.
        starts = _rows(pg_url, "SELECT task_id, data FROM events WHERE type = 'task.started'")
        named = dict(_rows(pg_url, "SELECT id, name FROM nests"))
        placed = {(tasks[t], named[json.loads(d)["nest_id"]]) for t, d in starts}
        assert {n for dep, n in placed if dep == "alpha"} == {"proc"}, (placed, named, ids)
        assert {n for dep, n in placed if dep == "beta"} == {"inproc"}, placed
        leases = Counter(t for t, _ in starts)
        again = {t for t, n in leases.items() if n >= 2}
        assert again  # the kill hit work in flight: it ran again
        assert unknown <= again  # only an interrupted run meets a step it cannot confirm

        def elections() -> int:
            return len(
                _rows(
                    pg_url,
                    "SELECT data FROM events WHERE type = 'leader.elected'"
                    " AND data LIKE '%%hub-leader%%'",
                )
            )

        # Hub B takes the lead once A's leadership lease runs out. The tasks need no leader (Nests lease
        # through either Hub), so they can all end before that: wait for it, don't race it.
        wait_until(lambda: elections() >= 2, 90, "hub B to take the lead after hub A died")
    finally:
        for n in nests:
            if n.proc.poll() is None:
                n.stop()
        hub_b.stop()
        hub_a.stop()
