"""Approvals: list them, read one whole, approve or deny one (seed 002 ``agen approvals | approve <id> |
deny <id>``; ``agen approvals show <id>`` prints the whole tool call, which the list's ARGUMENTS cell cuts)."""

from __future__ import annotations

from typing import Annotated

import typer

from agen.cli._common import (
    HubOpt,
    JsonOpt,
    NamespaceOpt,
    NoTruncOpt,
    TokenOpt,
    complete_approvals,
    err,
    group,
    make_request,
    print_json,
)

IdArg = Annotated[
    str,
    typer.Argument(help="Approval id.", show_default=False, autocompletion=complete_approvals),
]


approvals_app = group(
    help="Pending approvals (--all: decided ones too); `show ID` prints one whole.",
    invoke_without_command=True,
)


@approvals_app.callback()
def approvals(
    ctx: typer.Context,
    all_: Annotated[bool, typer.Option("--all", help="Include decided approvals.")] = False,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    no_trunc: NoTruncOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Pending approvals (--all: decided ones too); `agen approvals show ID` prints one whole."""
    import json

    if ctx.invoked_subcommand is not None:
        return

    from agen.api import registry as r
    from agen.cli._hub import ago, with_client
    from agen.cli._table import print_table
    from agen.wire.approvals import ListApprovalsRequest

    resp = with_client(
        hub,
        token,
        lambda c: c.call(
            r.ListApprovals, make_request(ListApprovalsRequest, namespace=namespace, all=all_)
        ),
    )
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    if not resp.approvals:
        err("no pending approvals" if not all_ else "no approvals")
        return
    print_table(
        ("ID", "DEPLOYMENT", "TASK", "TOOL", "ARGUMENTS", "STATE", "ASKED"),
        [
            (
                a.id,
                a.deployment,
                a.task_id or "-",
                a.tool,
                json.dumps(a.arguments, ensure_ascii=False),
                a.state,
                ago(a.created_ms),
            )
            for a in resp.approvals
        ],
        no_trunc=no_trunc,
        flexible=("ARGUMENTS",),
    )


@approvals_app.command("show")
def show(
    approval_id: IdArg,
    hub: HubOpt = None,
    token: TokenOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """One approval with its tool call's whole arguments as indented JSON: what approving lets run."""
    import json

    from agen.api import registry as r
    from agen.cli._hub import ago, with_client
    from agen.cli._ids import call_resolved
    from agen.wire.approvals import GetApprovalRequest

    resp = with_client(
        hub,
        token,
        lambda c: call_resolved(
            c, r.GetApproval, make_request(GetApprovalRequest, id=approval_id), "approval"
        ),
    )
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    a = resp.approval
    print(f"approval    {a.id}")
    print(f"state       {a.state}" + (f" by {a.decided_by}" if a.decided_by else ""))
    print(f"deployment  {a.namespace}/{a.deployment}")
    print(f"task        {a.task_id or '-'} (run {a.run_id})")
    print(f"requested   {ago(a.created_ms)}" + (f" by {a.requested_by}" if a.requested_by else ""))
    if a.note:
        print(f"note        {a.note}")
    print(f"tool        {a.tool}")
    print("arguments")
    print(json.dumps(a.arguments, ensure_ascii=False, indent=2, sort_keys=True))


def _decide(
    approval_id: str,
    approve: bool,
    note: str | None,
    hub: str | None,
    token: str | None,
    json_out: bool,
) -> None:
    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.cli._ids import call_resolved
    from agen.wire.approvals import DecideApprovalRequest

    resp = with_client(
        hub,
        token,
        lambda c: call_resolved(
            c,
            r.DecideApproval,
            make_request(DecideApprovalRequest, id=approval_id, approve=approve, note=note),
            "approval",
        ),
    )
    if json_out:
        print_json(resp.model_dump(mode="json"))
    else:
        a = resp.approval
        print(f"{a.id}: {a.state} ({a.tool}{', task ' + a.task_id if a.task_id else ''})")


def approve(
    approval_id: IdArg,
    note: Annotated[
        str | None, typer.Option("--note", help="Why, kept with the decision.", show_default=False)
    ] = None,
    hub: HubOpt = None,
    token: TokenOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Approve a pending tool call; the waiting run goes on."""
    _decide(approval_id, True, note, hub, token, json_out)


def deny(
    approval_id: IdArg,
    note: Annotated[
        str | None,
        typer.Option("--note", help="Why, shown to the agent and kept.", show_default=False),
    ] = None,
    hub: HubOpt = None,
    token: TokenOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Deny a pending tool call; the run is told it was refused."""
    _decide(approval_id, False, note, hub, token, json_out)


def register(app: typer.Typer) -> None:
    app.add_typer(approvals_app, name="approvals")
    app.command("approve")(approve)
    app.command("deny")(deny)
