"""Two checks the list and by-id handlers share, so a filter or -n never silently matches nothing.

Ids are global, so a task or run is found without a namespace; a request that names one anyway
(`agen cancel ID -n ops`) means "the one in ops", and anything else is not found there. A deployment
filter that names a deployment that has never existed is a typo, not an empty result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agen.errors import NotFoundError

if TYPE_CHECKING:
    from agen.hub.service import Hub


def check_namespace(kind: str, ref: str, actual: str, wanted: str | None) -> None:
    """``wanted`` None: any namespace (the caller already checked the principal sees ``actual``)."""
    if wanted is not None and actual != wanted:
        raise NotFoundError(
            f"{kind} {ref} not found in namespace {wanted} (it is in {actual}: pass -n {actual})",
            namespace=wanted,
            **{kind: ref},
        )


async def require_known_deployment(
    hub: Hub, namespaces: Sequence[str], name: str | None, table: str
) -> None:
    """NotFound unless ``name`` is a deployment of these namespaces, now or once (rows of it in ``table``)."""
    if not name:
        return
    marks = ",".join("?" * len(namespaces))
    where = f" AND namespace IN ({marks})" if namespaces else ""
    for sql in (
        f"SELECT 1 FROM deployments WHERE name = ?{where} LIMIT 1",
        f"SELECT 1 FROM {table} WHERE deployment = ?{where} LIMIT 1",
    ):
        if await hub.store.scalar(sql, (name, *namespaces)):
            return
    shown = ", ".join(namespaces) or "any namespace"
    raise NotFoundError(
        f"deployment {name} not found in {shown}; `agen ps` lists deployments", deployment=name
    )
