"""Short ids: a unique prefix or suffix of a task, run or approval id stands for the whole id.

ULIDs share their time prefix, so the TUI shows their last characters; git and docker accept any
unique part of a hash. Here both ends work (case-insensitive): one match is the id, none is
not found, several is an error that lists them so the user can type more.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

from agen.errors import InvalidError, NotFoundError
from agen.wire.ids import ResolveIdRequest, ResolveIdResponse

if TYPE_CHECKING:
    from agen.hub.auth import Principal
    from agen.hub.service import Hub

MIN_CHARS = 4  # fewer would match most ids of a busy day
SHOWN = 5  # candidates listed in an ambiguity error
_ULID_PART = re.compile(r"^[0-9A-Z]+$")
_TABLES = {
    "task": [("tasks", "id", "task")],
    "run": [("runs", "id", "run")],
    "approval": [("approvals", "id", "approval")],
    "task_or_run": [("tasks", "id", "task"), ("runs", "id", "run")],
    "any": [("tasks", "id", "task"), ("runs", "id", "run"), ("runs", "trace_id", "trace")],
}
_WHAT = {"task_or_run": "task or run", "any": "task, run or trace"}
_HINT = {"task": "agen tasks", "approval": "agen approvals --all"}


class _Match(NamedTuple):
    id: str
    namespace: str


async def resolve_id(hub: Hub, p: Principal, req: ResolveIdRequest) -> ResolveIdResponse:
    text = req.text.strip().upper()
    if len(text) >= 26 or not _ULID_PART.fullmatch(text):
        return ResolveIdResponse(id=req.text)  # a whole id, or not an id at all: used as given
    if len(text) < MIN_CHARS:
        raise InvalidError(
            f"{req.kind} id {req.text!r} is too short: give at least {MIN_CHARS} characters of its start or end",
            field="id",
        )
    found: dict[str, str] = {}  # id -> what it is
    for table, column, what in _TABLES[req.kind]:
        rows = await hub.store.rows(
            _Match,
            f"SELECT DISTINCT {column} AS id, namespace FROM {table}"
            f" WHERE (UPPER({column}) LIKE ? OR UPPER({column}) LIKE ?) LIMIT 50",
            (text + "%", "%" + text),
        )
        for row in rows:
            if p.sees(row.namespace) and req.namespace in (None, row.namespace):
                found.setdefault(str(row.id), what)
    if not found:
        raise NotFoundError(
            f"no {_WHAT.get(req.kind, req.kind)} id starts or ends with {req.text!r}; "
            f"`{_HINT.get(req.kind, 'agen runs')}` lists them",
            id=req.text,
        )
    if len(found) > 1:
        listed = ", ".join(
            f"{i} ({what})" if req.kind in _WHAT else i for i, what in list(found.items())[:SHOWN]
        )
        more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
        raise InvalidError(
            f"{req.kind if req.kind not in _WHAT else 'id'} {req.text!r} is ambiguous: it matches "
            f"{listed}{more}; give more characters",
            field="id",
            candidates=list(found)[:SHOWN],
        )
    return ResolveIdResponse(id=next(iter(found)))
