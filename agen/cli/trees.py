"""`agen tree <task>`: every task of the tree a task belongs to (seed 002)."""

from __future__ import annotations

from typing import Annotated

import typer

from agen.cli._common import HubOpt, JsonOpt, NamespaceOpt, TokenOpt, make_request, print_json


def tree(
    task_id: Annotated[str, typer.Argument(help="Any task of the tree.", show_default=False)],
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Every task of the tree it belongs to: indented under its parent, with state, what it waits on,
    duration and cost."""
    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.cli._table import print_table
    from agen.render.tree import COLUMNS, tree_rows
    from agen.wire.tasks import GetTaskTreeRequest

    req = make_request(GetTaskTreeRequest, {"id": "TASK"}, id=task_id, namespace=namespace)
    resp = with_client(hub, token, lambda c: c.call(r.GetTaskTree, req))
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    print_table(COLUMNS, tree_rows(resp))


def register(app: typer.Typer) -> None:
    app.command("tree")(tree)
