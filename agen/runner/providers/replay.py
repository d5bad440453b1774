"""Replay a cassette of recorded interactions, and the recording wrapper that makes them.

A cassette is ``{"interactions": [{"turn", "request", "response"}]}`` (or the bare list).
Replay answers a request with the next recorded response for the same run turn, so a
resumed run replays from where it stopped. Recording wraps a real provider and keeps each
run's interactions until the runner saves them to the Store (``cassettes``). A streamed call's
deltas are recorded in order (``"deltas": [{"text", "kind"}]``) and replayed the same way, so a
replayed run streams what the recorded one streamed.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from agen.runner.providers.base import (
    Delta,
    DeltaSink,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    ProviderError,
)


def cassette_interactions(data: Any) -> list[dict[str, Any]]:
    items = data.get("interactions") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError('a cassette is {"interactions": [...]} or a list of interactions')
    return [i for i in items if isinstance(i, dict)]


class ReplayProvider(ModelProvider):
    name = "replay"
    default_model = "replay"

    def __init__(self, interactions: list[dict[str, Any]]) -> None:
        self._by_turn: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for i, item in enumerate(interactions):
            self._by_turn[int(item.get("turn", i))].append(item)
        self._used: dict[tuple[str, int], int] = defaultdict(int)

    async def complete(
        self, request: ModelRequest, on_delta: DeltaSink | None = None
    ) -> ModelResponse:
        items = self._by_turn.get(request.run_turn, [])
        key = (request.run_id, request.run_turn)
        n = self._used[key]
        if n >= len(items):
            raise ProviderError(
                "other",
                f"the cassette has no recorded answer for turn {request.run_turn + 1} (call {n + 1}); "
                "record the run again with recordInteractions",
            )
        self._used[key] = n + 1
        item = items[n]
        if on_delta is not None:
            for d in item.get("deltas") or []:
                await on_delta(Delta(str(d.get("text") or ""), d.get("kind", "text")))
        if "error" in item:
            err = item["error"]
            raise ProviderError(
                err.get("kind", "other"),
                err.get("message", "recorded error"),
                status=err.get("status"),
                retry_after_s=0.0,
            )
        return ModelResponse.from_dict(item["response"])


class RecordingProvider(ModelProvider):
    """Wraps a real provider and records every interaction per run (config.recordInteractions)."""

    def __init__(self, inner: ModelProvider) -> None:
        self.inner = inner
        self.name = inner.name
        self.default_model = inner.default_model
        self._recorded: dict[str, list[dict[str, Any]]] = defaultdict(list)

    async def complete(
        self, request: ModelRequest, on_delta: DeltaSink | None = None
    ) -> ModelResponse:
        entry: dict[str, Any] = {"turn": request.run_turn, "request": request.to_dict()}
        sink: DeltaSink | None = None
        if on_delta is not None:
            deltas: list[dict[str, Any]] = []
            entry["deltas"] = deltas

            async def sink(d: Delta) -> None:
                deltas.append({"text": d.text, "kind": d.kind})
                await on_delta(d)

        try:
            response = await self.inner.complete(request, sink)
        except ProviderError as e:
            entry["error"] = {"kind": e.kind, "message": e.message, "status": e.status}
            self._recorded[request.run_id].append(entry)
            raise
        entry["response"] = response.to_dict()
        self._recorded[request.run_id].append(entry)
        return response

    def take_recorded(self, run_id: str) -> list[dict[str, Any]] | None:
        return self._recorded.pop(run_id, [])

    def route_tier(self, model: str, task_tier: str | None, budget_pressure: bool) -> str | None:
        return self.inner.route_tier(model, task_tier, budget_pressure)

    async def aclose(self) -> None:
        await self.inner.aclose()
