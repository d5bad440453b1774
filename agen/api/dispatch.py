"""The one path every call takes, whatever door it came through: scope, drain, handler."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from agen.api.registry import Rpc
from agen.errors import DeniedError, UnavailableError

if TYPE_CHECKING:
    from agen.hub.auth import Principal
    from agen.hub.service import Hub

RETRY_AFTER_S = 5


def authorize(principal: Principal, rpc: Rpc[Any, Any]) -> None:
    """May this caller call this method at all (before its body is read)?"""
    principal.require(rpc.scope, rpc.name)
    if principal.for_task is not None and rpc.name == "DecideApproval":
        raise DeniedError(
            "an on-behalf token cannot decide approvals: the person it acts for decides them"
        )


async def dispatch(
    hub: Hub, principal: Principal, rpc: Rpc[Any, Any], request: BaseModel
) -> BaseModel:
    authorize(principal, rpc)
    if hub.draining and rpc.starts_work:
        raise UnavailableError(
            f"the Hub is draining (shutting down); {rpc.name} starts new work and is refused. "
            f"Retry in {RETRY_AFTER_S}s against a running Hub.",
            reason="draining",
            retry_after=RETRY_AFTER_S,
        )
    result: BaseModel = await rpc.handler()(hub, principal, request)
    return result
