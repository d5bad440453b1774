"""The one path every call takes, whatever door it came through: scope, drain, handler."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from agen.api.registry import Rpc
from agen.errors import UnavailableError

if TYPE_CHECKING:
    from agen.hub.auth import Principal
    from agen.hub.service import Hub

RETRY_AFTER_S = 5


async def dispatch(
    hub: Hub, principal: Principal, rpc: Rpc[Any, Any], request: BaseModel
) -> BaseModel:
    principal.require(rpc.scope, rpc.name)
    if hub.draining and rpc.starts_work:
        raise UnavailableError(
            f"the Hub is draining (shutting down); {rpc.name} starts new work and is refused. "
            f"Retry in {RETRY_AFTER_S}s against a running Hub.",
            reason="draining",
            retry_after=RETRY_AFTER_S,
        )
    result: BaseModel = await rpc.handler()(hub, principal, request)
    return result
