"""OpenRouter: OpenAI-compatible, plus request extras, reasoning effort, cost and routing tiers.

Routing models (seed 000 §8) pick a model within a tier band; the run's tier is the
task's model_tier, else router.tier, capped by router.maxTier and the router's top tier,
and at most router.budgetTier under budget pressure.
"""

from __future__ import annotations

import copy
from typing import Any

from agen.bundle.harness import Router
from agen.runner.providers._http import MAX_IN_FLIGHT
from agen.runner.providers.base import DeltaSink, ModelRequest, ModelResponse
from agen.runner.providers.openai import OpenAIProvider

OPENROUTER_URL = "https://openrouter.ai/api/v1"
TIERS = ("low", "medium", "high", "xhigh", "max")
ROUTERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "typesafe/jev-router": ("jev-router", TIERS[:3]),
    "openrouter/auto": ("auto-router", TIERS),
    "openrouter/auto-beta": ("auto-beta-router", TIERS),
}


def _rank(tier: str) -> int:
    return TIERS.index(tier)


def route_tier(
    model: str, task_tier: str | None, router: Router | None, budget_pressure: bool
) -> str | None:
    """The tier a routing model runs at for this run (None for a plain model or no tier asked)."""
    spec = ROUTERS.get(model)
    if spec is None:
        return None
    top = spec[1][-1]
    tier = task_tier if task_tier in TIERS else (router.tier if router else None)
    if tier is None:
        return None
    caps = [top]
    if router and router.max_tier:
        caps.append(router.max_tier)
    if budget_pressure:
        caps.append(router.budget_tier if router else "low")
    cap = min(caps, key=_rank)
    return tier if _rank(tier) <= _rank(cap) else cap


class OpenRouterProvider(OpenAIProvider):
    name = "openrouter"

    def __init__(
        self,
        *,
        api_key: str | None,
        model: str = "",
        base_url: str | None = None,
        timeout_s: float = 120.0,
        extras: dict[str, Any] | None = None,
        router: Router | None = None,
        max_in_flight: int = MAX_IN_FLIGHT,
    ) -> None:
        super().__init__(
            api_key=api_key,
            model=model,
            base_url=base_url or OPENROUTER_URL,
            timeout_s=timeout_s,
            extra_headers={"x-title": "agen"},
            max_in_flight=max_in_flight,
        )
        self.direct = False
        self.extras = extras or {}
        self.router = router

    @property
    def takes_pdf(self) -> bool:
        return True  # OpenRouter takes OpenAI's file parts and parses PDFs for any model

    def body(self, request: ModelRequest) -> dict[str, Any]:
        effort = request.reasoning_effort
        request.reasoning_effort = None  # OpenRouter takes reasoning.effort, not reasoning_effort
        try:
            body = super().body(request)
        finally:
            request.reasoning_effort = effort
        for key, value in copy.deepcopy(self.extras).items():
            body[key] = value
        if effort:
            body.setdefault("reasoning", {})["effort"] = effort
        body["usage"] = {"include": True}  # ask for cost in usage
        spec = ROUTERS.get(body["model"])
        if spec is not None and request.tier:
            plugin: dict[str, Any] = {"id": spec[0], "cost_tier": request.tier}
            if self.router and self.router.allowed_models:
                plugin["allowed_models"] = list(self.router.allowed_models)
            if self.router and self.router.excluded_models:
                plugin["excluded_models"] = list(self.router.excluded_models)
            body["plugins"] = [*list(body.get("plugins") or []), plugin]
        return body

    def route_tier(self, model: str, task_tier: str | None, budget_pressure: bool) -> str | None:
        return route_tier(model, task_tier, self.router, budget_pressure)

    async def complete(
        self, request: ModelRequest, on_delta: DeltaSink | None = None
    ) -> ModelResponse:
        response = await self.post(self.body(request), on_delta)
        raw = response.raw or {}
        if request.tier:
            response.attrs["agen.router.tier"] = request.tier
        for key in ("provider", "router", "metadata"):
            if key in raw:
                response.attrs[f"agen.router.{key}"] = raw[key]
        return response
