"""The engine's DelegationPort over the Nest's Hub client: the delegation RPCs (scope ``nest``).

The runner knows only its own shapes (agen.runner.delegation); this adapter turns them into
the API's requests and back, in-process or over HTTP alike.
"""

from __future__ import annotations

import time
from typing import Any

from agen.api import registry as r
from agen.client import Client
from agen.errors import UnavailableError
from agen.runner.delegation import ChildResult, ChildSpec, ChildState, ResolvedAgent, TurnCheck
from agen.wire import delegation as m


def _state(c: m.ChildTask) -> ChildState:
    return ChildState(
        id=c.id, deployment=c.deployment, state=c.state, outcome=c.outcome, error=c.error
    )


class NestDelegation:
    def __init__(self, client: Client) -> None:
        self.client = client
        # (caller ns/deployment, callee ns, callee deployment) -> the Hub's last answer: used while
        # the Hub is unreachable, until its token expires (seed 000 §10: the Manager caches them)
        self._resolved: dict[tuple[str, str, str], ResolvedAgent] = {}

    async def submit_child(self, spec: ChildSpec) -> ChildState:
        resp = await self.client.call(
            r.SubmitChildTask,
            m.SubmitChildTaskRequest(
                parent_task_id=spec.parent_task_id,
                namespace=spec.namespace,
                deployment=spec.deployment,
                input=spec.input,
                call_key=spec.call_key,
                trust=spec.trust,
                overrides=spec.overrides,
                traceparent=spec.traceparent,
                reply_conversation_key=spec.reply_conversation_key,
            ),
        )
        return _state(resp.child)

    async def wait_child(self, task_id: str, child_id: str, wait_s: float) -> ChildState:
        resp = await self.client.call(
            r.WaitChildTask,
            m.WaitChildTaskRequest(
                task_id=task_id, child_id=child_id, wait_seconds=max(0.0, min(wait_s, 60.0))
            ),
        )
        return _state(resp.child)

    async def turn_check(self, task_id: str) -> TurnCheck:
        resp = await self.client.call(r.CheckTurn, m.CheckTurnRequest(task_id=task_id))
        return TurnCheck(
            unfinished_children=resp.unfinished_children,
            results=[ChildResult(x.inbox_id, _state(x.child)) for x in resp.results],
            tree_budget_exceeded=resp.tree_budget_exceeded,
        )

    async def ack_results(self, task_id: str, inbox_ids: list[str]) -> None:
        await self.client.call(r.AckInbox, m.AckInboxRequest(task_id=task_id, inbox_ids=inbox_ids))

    async def query_child(self, task_id: str, target: str) -> dict[str, Any]:
        resp = await self.client.call(
            r.QueryChildTask, m.ChildTaskRef(task_id=task_id, target=target)
        )
        return dict(resp.task)

    async def signal_child(self, task_id: str, target: str, message: str) -> None:
        await self.client.call(
            r.SignalChildTask,
            m.SignalChildTaskRequest(task_id=task_id, target=target, message=message),
        )

    async def acquire_lock(self, task_id: str, name: str, ttl_s: float) -> int | None:
        resp = await self.client.call(
            r.AcquireLock, m.AcquireLockRequest(task_id=task_id, name=name, ttl_seconds=ttl_s)
        )
        return resp.fence

    async def release_lock(self, task_id: str, name: str) -> bool:
        resp = await self.client.call(
            r.ReleaseLock, m.ReleaseLockRequest(task_id=task_id, name=name)
        )
        return resp.released

    async def resolve_agent(
        self, task_id: str, namespace: str, deployment: str, *, caller: str
    ) -> ResolvedAgent:
        now = int(time.time() * 1000)
        try:
            resp = await self.client.call(
                r.ResolveChildAgent,
                m.ResolveChildAgentRequest(
                    task_id=task_id, namespace=namespace, deployment=deployment
                ),
            )
        except UnavailableError:  # the Hub is down: a cached token keeps delegation going
            cached = self._resolved.get((caller, namespace, deployment))
            if cached is None or cached.expires_ms <= now:
                raise
            return cached
        found = ResolvedAgent(resp.urls, resp.call_token, resp.expires_ms)
        self._resolved[(caller, namespace, deployment)] = found
        return found

    async def count_a2a_call(self, task_id: str, call_key: str) -> None:
        await self.client.call(
            r.CountA2ACall, m.CountA2ACallRequest(task_id=task_id, call_key=call_key)
        )
