"""Ids as people type them: a whole id, or the unique prefix or suffix the TUI shows (like git)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from pydantic import BaseModel

    from agen.api.registry import Rpc
    from agen.client import Client
    from agen.wire.ids import IdKind

Req = TypeVar("Req", bound="BaseModel")
Resp = TypeVar("Resp", bound="BaseModel")

MIN_CHARS = 4  # agen.hub.short_ids.MIN_CHARS: fewer would match most ids of a busy day
_SHORT = re.compile(r"^[0-9A-Za-z]{1,25}$")  # shorter than a ULID: worth asking the Hub about


async def full_id(client: Client, kind: IdKind, text: str, namespace: str | None = None) -> str:
    """The whole id ``text`` stands for; a whole id (or anything not shaped like part of one) as is."""
    if not _SHORT.fullmatch(text):
        return text
    if len(text) < MIN_CHARS:
        from agen.errors import InvalidError

        raise InvalidError(
            f"{kind.replace('_', ' ')} id {text!r} is too short: give at least {MIN_CHARS} characters "
            "of its start or end (or the whole id)",
            field="id",
        )
    from agen.api import registry as r
    from agen.wire.ids import ResolveIdRequest

    req = ResolveIdRequest(kind=kind, text=text, namespace=namespace)
    return (await client.call(r.ResolveId, req)).id


async def call_resolved(
    client: Client, rpc: Rpc[Req, Resp], req: Req, kind: IdKind, field: str = "id"
) -> Resp:
    """Call ``rpc`` with ``req``'s ``field`` (an id as typed) replaced by the whole id it stands for."""
    value = getattr(req, field)
    if value is None:
        return await client.call(rpc, req)
    whole = await full_id(client, kind, value, getattr(req, "namespace", None))
    return await client.call(rpc, req.model_copy(update={field: whole}))
