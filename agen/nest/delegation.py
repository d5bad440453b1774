"""The engine's DelegationPort over the Nest's Hub client: the delegation RPCs (scope ``nest``).

The runner knows only its own shapes (agen.runner.delegation); this adapter turns them into
the API's requests and back, in-process or over HTTP alike.

Resolving a deployment for A2A (seed 000 §10) asks the Hub every time it answers, so the token
held is always the one from the last time it did; while the Hub is unreachable that token is used
until it expires (an agent's: 1 h after that answer), then the call fails saying so. With ``saved``
(``agen nest run``'s data folder) the tokens are also kept in that file (0600), for a Manager
started again during the outage.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from agen.api import registry as r
from agen.client import Client
from agen.errors import UnavailableError
from agen.runner.delegation import ChildResult, ChildSpec, ChildState, ResolvedAgent, TurnCheck
from agen.util.home import write_private

if TYPE_CHECKING:  # requests are built from the registry's models: agen.wire.delegation (~15 ms)
    # loads on the first delegation, not for every Nest whose agents never delegate
    from agen.wire import delegation as m
    from agen.wire.delegation import ChildTaskView


def _state(c: m.ChildTask) -> ChildState:
    return ChildState(
        id=c.id, deployment=c.deployment, state=c.state, outcome=c.outcome, error=c.error
    )


log = logging.getLogger("agen.nest")
Callee = tuple[str, str, str]  # (caller ns/deployment, callee ns, callee deployment)


def _now_ms() -> int:
    return int(time.time() * 1000)


class NestDelegation:
    def __init__(
        self,
        client: Client,
        *,
        saved: Path | None = None,
        clock: Callable[[], int] = _now_ms,
    ) -> None:
        self.client = client
        self._saved = saved
        self._clock = clock
        # the Hub's last answer per caller and callee, used while the Hub is unreachable
        self._resolved: dict[Callee, ResolvedAgent] = _read_saved(saved, clock()) if saved else {}

    async def submit_child(self, spec: ChildSpec) -> ChildState:
        resp = await self.client.call(
            r.SubmitChildTask,
            r.SubmitChildTask.request(
                parent_task_id=spec.parent_task_id,
                namespace=spec.namespace,
                deployment=spec.deployment,
                input=spec.input,
                call_key=spec.call_key,
                trust=spec.trust,
                overrides=spec.overrides,
                traceparent=spec.traceparent,
                reply_conversation_key=spec.reply_conversation_key,
                siblings=spec.siblings,
            ),
        )
        return _state(resp.child)

    async def wait_child(self, task_id: str, child_id: str, wait_s: float) -> ChildState:
        resp = await self.client.call(
            r.WaitChildTask,
            r.WaitChildTask.request(
                task_id=task_id, child_id=child_id, wait_seconds=max(0.0, min(wait_s, 60.0))
            ),
        )
        return _state(resp.child)

    async def turn_check(self, task_id: str) -> TurnCheck:
        resp = await self.client.call(r.CheckTurn, r.CheckTurn.request(task_id=task_id))
        return TurnCheck(
            unfinished_children=resp.unfinished_children,
            results=[ChildResult(x.inbox_id, _state(x.child)) for x in resp.results],
            tree_budget_exceeded=resp.tree_budget_exceeded,
        )

    async def ack_results(self, task_id: str, inbox_ids: list[str]) -> None:
        await self.client.call(r.AckInbox, r.AckInbox.request(task_id=task_id, inbox_ids=inbox_ids))

    async def query_child(self, task_id: str, target: str) -> ChildTaskView:
        resp = await self.client.call(
            r.QueryChildTask, r.QueryChildTask.request(task_id=task_id, target=target)
        )
        return resp.task

    async def signal_child(self, task_id: str, target: str, message: str) -> None:
        await self.client.call(
            r.SignalChildTask,
            r.SignalChildTask.request(task_id=task_id, target=target, message=message),
        )

    async def acquire_lock(self, task_id: str, name: str, ttl_s: float) -> int | None:
        resp = await self.client.call(
            r.AcquireLock, r.AcquireLock.request(task_id=task_id, name=name, ttl_seconds=ttl_s)
        )
        return resp.fence

    async def release_lock(self, task_id: str, name: str) -> bool:
        resp = await self.client.call(
            r.ReleaseLock, r.ReleaseLock.request(task_id=task_id, name=name)
        )
        return resp.released

    async def resolve_agent(
        self, task_id: str, namespace: str, deployment: str, *, caller: str
    ) -> ResolvedAgent:
        key = (caller, namespace, deployment)
        try:
            resp = await self.client.call(
                r.ResolveChildAgent,
                r.ResolveChildAgent.request(
                    task_id=task_id, namespace=namespace, deployment=deployment
                ),
            )
        except UnavailableError as e:  # the Hub is down: a held token keeps delegation going
            held = self._resolved.get(key)
            now = self._clock()
            if held is not None and held.expires_ms > now:
                return held
            why = (
                f"the call token this Nest held for it expired {(now - held.expires_ms) // 60_000} "
                "min ago (a token lives 1 h from the Hub's last answer)"
                if held is not None
                else f"this Nest holds no call token for it (none resolved for {caller} yet)"
            )
            raise UnavailableError(
                f"cannot call {namespace}/{deployment} by name now: the Hub does not answer ({e}) "
                f"and {why}; it can be called again once the Hub answers",
                **e.details,
            ) from None
        found = ResolvedAgent(resp.urls, resp.call_token, resp.expires_ms)
        self._resolved[key] = found
        if self._saved is not None:
            self._save()
        return found

    def _save(self) -> None:
        assert self._saved is not None
        now = self._clock()
        held = [
            {"caller": c, "namespace": ns, "deployment": dep, **asdict(found)}
            for (c, ns, dep), found in self._resolved.items()
            if found.expires_ms > now
        ]
        try:
            write_private(self._saved, json.dumps({"resolved": held}) + "\n")
        except OSError as e:  # the call goes on; only an outage would have needed the file
            log.warning("nest: cannot keep the resolved call tokens in %s (%s)", self._saved, e)

    async def count_a2a_call(self, task_id: str, call_key: str) -> None:
        await self.client.call(
            r.CountA2ACall, r.CountA2ACall.request(task_id=task_id, call_key=call_key)
        )


def _read_saved(path: Path, now_ms: int) -> dict[Callee, ResolvedAgent]:
    """The unexpired tokens a Manager kept (``resolved.json``); none when there is no file yet. A
    file that cannot be read is reported and ignored: tokens are resolved from the Hub again."""
    try:
        entries = json.loads(path.read_text())["resolved"]
        held = {
            (str(e["caller"]), str(e["namespace"]), str(e["deployment"])): ResolvedAgent(
                [str(u) for u in e["urls"]], str(e["call_token"]), int(e["expires_ms"])
            )
            for e in entries
        }
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError) as e:
        log.warning("nest: ignoring %s (%s); call tokens are resolved from the Hub again", path, e)
        return {}
    return {key: found for key, found in held.items() if found.expires_ms > now_ms}
