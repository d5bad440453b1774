"""Registry handlers are named by import path (an HTTP-only client never imports the Hub), so mypy
cannot see that a name points at the right function: this test does, for every RPC."""

from __future__ import annotations

import inspect
import typing

import pytest

from agen.api import registry as r
from agen.hub.auth import Principal
from agen.hub.service import Hub


@pytest.mark.parametrize("rpc", list(r.RPCS.values()), ids=lambda rpc: rpc.name)
def test_every_rpc_handler_takes_the_hub_a_principal_and_its_request_and_returns_its_response(
    rpc: r.Rpc[typing.Any, typing.Any],
) -> None:
    fn = rpc.handler()
    assert inspect.iscoroutinefunction(fn), f"{rpc.handler_path} is not async"
    # a handler module may import Hub, Principal and its own models only for its annotations (if
    # TYPE_CHECKING), so they resolve here by name: the registry's own models under those names
    models = {m.__name__: m for m in (rpc.request, rpc.response)}
    hints = typing.get_type_hints(fn, localns={"Hub": Hub, "Principal": Principal, **models})
    params = [p.name for p in inspect.signature(fn).parameters.values()]
    assert len(params) == 3, f"{rpc.handler_path} takes {params}"
    hub, principal, request = (hints[p] for p in params)
    assert hub is Hub and principal is Principal
    assert issubclass(rpc.request, request), f"{rpc.handler_path} takes {request}"
    assert issubclass(hints["return"], rpc.response), (
        f"{rpc.handler_path} returns {hints['return']}"
    )
