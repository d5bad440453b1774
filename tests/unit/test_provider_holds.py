"""Provider holds at the transaction level: hold, probe, back-off, release by a success or an admin."""

from __future__ import annotations

import pytest

from agen.domain import DeploymentRow
from agen.errors import NotFoundError
from agen.hub.queue import providers
from agen.store import Store, Tx, new_ulid
from tests.unit.trigger_helpers import add_usage, deployment

ACCT = "default/openai:OPENAI_API_KEY@http://127.0.0.1:9999/v1"


def task(tx: Tx, dep: DeploymentRow, state: str) -> str:
    tid = new_ulid()
    seq = int(  # Postgres: from the sequence its task INSERTs use (migration 0025)
        tx.scalar(
            "SELECT nextval('tasks_seq_seq')"
            if tx.dialect == "postgres"
            else "SELECT COALESCE(MAX(seq), 0) + 1 FROM tasks"
        )
    )
    tx.execute(
        "INSERT INTO tasks (id, namespace, deployment_id, deployment, state, input, root_task_id, seq, created_ms,"
        " updated_ms) VALUES (?,?,?,?,?,?,?,?,?,?)",
        (tid, dep.namespace, dep.id, dep.name, state, "x", tid, seq, tx.now_ms, tx.now_ms),
    )
    return tid


def test_account_ids_name_namespace_provider_key_secret_and_base_url() -> None:
    harness = {
        "provider": "openai",
        "model": "m",
        "baseUrl": "http://127.0.0.1:9999/v1/",
        "fallbackProviders": [{"provider": "openrouter", "model": "x"}, {"provider": "fake"}],
    }
    assert providers.harness_accounts("default", harness) == [
        ACCT,
        "default/openrouter:OPENROUTER_API_KEY",
    ]
    assert providers.harness_accounts("default", {"provider": "fake"}) == []
    # every provider with an account is held alike: the key names come from the bundle's one list
    assert providers.harness_accounts("default", {"provider": "anthropic", "model": "m"}) == [
        "default/anthropic:ANTHROPIC_API_KEY"
    ]


async def test_an_account_error_holds_every_deployment_of_the_account_then_one_probe_backs_off(
    store: Store,
) -> None:
    a = await deployment(store, "a")
    b = await deployment(store, "b")

    def both(tx: Tx) -> None:
        providers.sync_accounts(tx, a.id, [ACCT])
        providers.sync_accounts(tx, b.id, [ACCT])

    await store.write(both)
    failed = await store.write(lambda tx: task(tx, a, "failed"))
    outcome = {
        "status": "failed",
        "reason": "provider_account",
        "summary": "401 invalid key",
        "data": {"account": ACCT},
    }
    hold = await store.write(lambda tx: providers.on_task_failed(tx, failed, a.id, outcome, None))
    assert hold is not None and hold.backoff_ms == 5 * 60_000
    t0 = int(hold.held_since_ms)
    events = await store.all("SELECT type, severity FROM events WHERE type LIKE 'provider.%'")
    assert events == [{"type": "provider.held", "severity": "warning"}]

    gate = await store.write(lambda tx: providers.lease_gate(tx, b.id, t0 + 1000))
    assert gate.state == "held" and gate.limit == 0 and gate.retry_at_ms == t0 + 5 * 60_000
    assert await store.write(lambda tx: providers.held_deployment_ids(tx, t0 + 1000)) == {
        a.id,
        b.id,
    }

    # After retry_at exactly one probe may be leased; while it is unfinished nothing else is.
    gate = await store.write(lambda tx: providers.lease_gate(tx, b.id, t0 + 5 * 60_000))
    assert gate.state == "probe" and gate.limit == 1
    probe = await store.write(lambda tx: task(tx, b, "running"))
    await store.write(lambda tx: providers.mark_probe(tx, b.id, probe))
    assert (
        await store.write(lambda tx: providers.lease_gate(tx, a.id, t0 + 5 * 60_000 + 1))
    ).state == "held"

    # The probe fails with another account error: back-off doubles (5 -> 10 min), capped at 1 h.
    hold = await store.write(lambda tx: providers.on_task_failed(tx, probe, b.id, outcome, None))
    assert hold is not None and hold.backoff_ms == 10 * 60_000 and hold.probe_task_id is None
    for _ in range(5):
        p = await store.write(lambda tx: task(tx, b, "running"))
        await store.write(lambda tx, p=p: providers.mark_probe(tx, b.id, p))  # type: ignore[misc]
        hold = await store.write(
            lambda tx, p=p: providers.on_task_failed(  # type: ignore[misc]
                tx, p, b.id, outcome, None
            )
        )
    assert hold is not None and hold.backoff_ms == 60 * 60_000
    assert len(await store.all("SELECT 1 FROM events WHERE type = 'provider.held'")) == 1

    # A run of one of the account's deployments succeeding after the hold began ends it.
    await store.write(lambda tx: add_usage(tx, a, 0.0, day="2025-01-01", finished_ms=t0 + 1))
    assert await store.write(providers.end_recovered_holds) == [ACCT]
    assert (await store.write(lambda tx: providers.lease_gate(tx, a.id, t0))).state == "open"
    resumed = await store.all("SELECT data FROM events WHERE type = 'provider.resumed'")
    assert len(resumed) == 1 and "a run succeeded" in resumed[0]["data"]


async def test_a_success_before_the_hold_does_not_end_it_but_resume_provider_does(
    store: Store,
) -> None:
    a = await deployment(store, "a")
    await store.write(lambda tx: add_usage(tx, a, 0.0, day="2025-01-01", finished_ms=0))
    await store.write(
        lambda tx: providers.record_account_error(tx, ACCT, reason="402", deployment_id=a.id)
    )
    assert await store.write(providers.end_recovered_holds) == []
    assert [
        r["account"] for r in await store.write(lambda tx: providers.list_holds(tx, ["default"]))
    ] == [ACCT]
    await store.write(lambda tx: providers.resume_provider(tx, ACCT, by="admin"))
    assert await store.write(lambda tx: providers.list_holds(tx, ["default"])) == []
    with pytest.raises(NotFoundError):
        await store.write(lambda tx: providers.resume_provider(tx, ACCT))


async def test_other_failures_do_not_hold_anything(store: Store) -> None:
    a = await deployment(store, "a")
    await store.write(lambda tx: providers.sync_accounts(tx, a.id, [ACCT]))
    out = await store.write(
        lambda tx: providers.on_task_failed(
            tx,
            "t",
            a.id,
            {"status": "failed", "reason": "max_turns"},
            None,
        )
    )
    assert out is None
    # An account error that names no account blames the deployment's account.
    out = await store.write(
        lambda tx: providers.on_task_failed(
            tx,
            "t",
            a.id,
            {"status": "failed", "reason": "provider_account"},
            "401",
        )
    )
    assert out is not None and out.account == ACCT and out.reason == "401"


async def test_a_hold_belongs_to_the_key_it_failed_with_and_a_changed_key_ends_it(
    store: Store,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agen.crypto.keyprint import key_fingerprint

    monkeypatch.setenv("PAID_KEY", "sk-old")
    a = await deployment(store, "a")
    await store.write(lambda tx: providers.sync_accounts(tx, a.id, [ACCT], {ACCT: "PAID_KEY"}))
    failed = await store.write(lambda tx: task(tx, a, "failed"))
    outcome = {
        "status": "failed",
        "reason": "account_error",
        "summary": "401 invalid key",
        "data": {"account": ACCT, "key_fingerprint": key_fingerprint("sk-old")},
    }
    hold = await store.write(
        lambda tx: providers.on_task_failed(tx, failed, a.id, outcome, "401 invalid key")
    )
    assert hold is not None and hold.key_fingerprint == key_fingerprint("sk-old")
    assert "sk-old" not in str(hold)  # only the fingerprint is stored
    t0 = int(hold.held_since_ms)
    assert (await store.write(lambda tx: providers.lease_gate(tx, a.id, t0 + 1))).state == "held"
    assert await store.write(providers.end_recovered_holds) == []  # the same key: still held

    monkeypatch.setenv(
        "PAID_KEY", "sk-new"
    )  # a changed key is a new account: the hold no longer applies
    assert (await store.write(lambda tx: providers.lease_gate(tx, a.id, t0 + 1))).state == "open"
    assert await store.write(lambda tx: providers.held_deployment_ids(tx, t0 + 1)) == set()
    assert await store.write(providers.end_recovered_holds) == [ACCT]
    resumed = await store.all("SELECT data FROM events WHERE type = 'provider.resumed'")
    assert len(resumed) == 1 and "the key was changed" in resumed[0]["data"]


async def test_the_failure_that_starts_a_hold_says_so_and_how_to_end_it(store: Store) -> None:
    a = await deployment(store, "a")
    await store.write(lambda tx: providers.sync_accounts(tx, a.id, [ACCT]))
    outcome = {
        "status": "failed",
        "reason": "account_error",
        "summary": "401 invalid key",
        "data": {"account": ACCT},
    }
    first, second = await store.write(lambda tx: (task(tx, a, "failed"), task(tx, a, "failed")))
    for tid in (first, second):
        await store.write(
            lambda tx, tid=tid: providers.on_task_failed(  # type: ignore[misc]
                tx, tid, a.id, outcome, "401 invalid key"
            )
        )
    errors = {r["id"]: r["error"] for r in await store.all("SELECT id, error FROM tasks")}
    assert errors[first].startswith("401 invalid key; provider account " + ACCT + " is now held")
    assert f"`agen providers resume {ACCT}`" in errors[first]
    assert errors[second] is None  # only the failure that started the hold explains it


def test_agen_providers_lists_and_resumes_a_hold_without_agen_up(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import asyncio

    from agen.store import open_store
    from tests.cli_helpers import run_agen

    async def hold() -> None:
        store = await open_store(None)
        try:
            await store.write(
                lambda tx: providers.record_account_error(tx, ACCT, reason="401 invalid key")
            )
        finally:
            await store.close()

    async def resumed_ms() -> object:
        store = await open_store(None)
        try:
            return await store.scalar(
                "SELECT resumed_ms FROM provider_holds WHERE account = ?", (ACCT,)
            )
        finally:
            await store.close()

    asyncio.run(hold())
    code, out, _ = run_agen(capsys, "providers")
    assert code == 0 and ACCT in out
    code, out, err = run_agen(capsys, "providers", "resume", ACCT)
    assert code == 0, err
    assert out.strip() == f"{ACCT}: resumed"
    assert asyncio.run(resumed_ms()) is not None
