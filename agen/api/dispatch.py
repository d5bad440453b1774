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


def may_call(principal: Principal, rpc: Rpc[Any, Any]) -> bool:
    """Whether ``authorize`` lets this caller call this method (what /mcp's tools/list shows)."""
    try:
        authorize(principal, rpc)
    except DeniedError:
        return False
    return True


def authorize(principal: Principal, rpc: Rpc[Any, Any]) -> None:
    """May this caller call this method at all (before its body is read)? docs/security.md has the
    rules; tests/integration/test_authorization_matrix.py checks every RPC against every kind of token."""
    principal.require(rpc.scope, rpc.name)
    if rpc.every_namespace and principal.namespaces:
        raise DeniedError(
            f"{rpc.name} acts on every namespace, so it needs a token without a namespace limit; this "
            f"one is limited to {', '.join(sorted(principal.namespaces))}",
            scope=rpc.scope,
        )
    if principal.call is not None and not rpc.call_token:
        raise DeniedError(
            f"a call token only calls its agent over A2A ({principal.call.callee}); {rpc.name} "
            "needs an API token (`agen token create`)"
        )
    if (principal.on_behalf or principal.for_task is not None) and rpc.person_only:
        raise DeniedError(
            f"an on-behalf token cannot call {rpc.name}: approvals and decisions like it are the "
            "person's own, made with that person's own token"
        )


async def dispatch(
    hub: Hub, principal: Principal, rpc: Rpc[Any, Any], request: BaseModel
) -> BaseModel:
    authorize(principal, rpc)
    if principal.call is not None:
        _require_callee(principal, request)
    if hub.draining and rpc.starts_work:
        raise UnavailableError(
            f"the Hub is draining (shutting down); {rpc.name} starts new work and is refused. "
            f"Retry in {RETRY_AFTER_S}s against a running Hub.",
            reason="draining",
            retry_after=RETRY_AFTER_S,
        )
    result: BaseModel = await rpc.handler()(hub, principal, request)
    return result


def _require_callee(principal: Principal, request: BaseModel) -> None:
    """A call token's request naming a deployment names its callee (SubmitTask, GetDeployment,
    ResolveAgent); requests by task id are checked by their handlers against the task's deployment."""
    deployment = getattr(request, "deployment", None) or getattr(request, "name", None)
    namespace = getattr(request, "namespace", None)
    if isinstance(deployment, str) and isinstance(namespace, str):
        principal.require_callee(namespace, deployment)
    if getattr(request, "tree", False):
        raise DeniedError("a call token acts on one A2A task at a time, not a whole tree")
