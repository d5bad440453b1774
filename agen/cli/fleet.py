"""Fleet commands: scale, ps, stop, start, rm, logs (seed 002)."""

from __future__ import annotations

from typing import Annotated

import typer

from agen.cli._common import (
    HubOpt,
    JsonOpt,
    NamespaceOpt,
    NoTruncOpt,
    TokenOpt,
    complete_deployments,
    err,
    make_request,
    print_json,
)

NameArg = Annotated[
    str,
    typer.Argument(
        help="Deployment name.", show_default=False, autocompletion=complete_deployments
    ),
]
HoldRuns = Annotated[
    bool,
    typer.Option(
        "--hold-runs",
        help="Also hold every unfinished task of the deployment, not just stop leasing new ones.",
    ),
]
AtOpt = Annotated[
    str | None,
    typer.Option(
        "--at",
        help="hold-runs only: end the hold at this time (RFC 3339), instead of waiting for agen start.",
        show_default=False,
    ),
]
InOpt = Annotated[
    str | None,
    typer.Option(
        "--in",
        help="hold-runs only: end the hold this long from now (e.g. 30m).",
        show_default=False,
    ),
]
ReasonOpt = Annotated[
    str | None,
    typer.Option(
        "--reason",
        help="hold-runs only: why, for anyone who looks at a held task later.",
        show_default=False,
    ),
]


def scale(
    name: NameArg,
    replicas: Annotated[int, typer.Argument(help="Desired instances.", show_default=False)],
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Set desired instances."""
    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.wire.deployments import ScaleDeploymentRequest

    resp = with_client(
        hub,
        token,
        lambda c: c.call(
            r.ScaleDeployment,
            make_request(ScaleDeploymentRequest, namespace=namespace, name=name, replicas=replicas),
        ),
    )
    if json_out:
        print_json(resp.model_dump(mode="json"))
    else:
        print(f"{name}: desired {replicas}")


def ps(
    all_instances: Annotated[
        bool, typer.Option("--all", help="List every instance on every nest, in all namespaces.")
    ] = False,
    all_namespaces: Annotated[bool, typer.Option("-A", help="All namespaces.")] = False,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    no_trunc: NoTruncOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Deployments (--all: every instance on every nest)."""
    from agen.api import registry as r
    from agen.cli._hub import ago, with_client
    from agen.cli._table import print_table
    from agen.wire.deployments import ListDeploymentsRequest, ListInstancesRequest

    if all_instances:
        inst = with_client(
            hub, token, lambda c: c.call(r.ListInstances, make_request(ListInstancesRequest))
        )
        if json_out:
            print_json(inst.model_dump(mode="json"))
            return
        print_table(
            (
                "NAMESPACE",
                "DEPLOYMENT",
                "INSTANCE",
                "NEST",
                "STATE",
                "IN FLIGHT",
                "DIGEST",
                "STARTED",
            ),
            [
                (
                    i.namespace,
                    i.deployment,
                    i.id,
                    i.nest,
                    i.state,
                    str(i.in_flight),
                    i.digest[7:19],
                    ago(i.started_ms),
                )
                for i in inst.instances
            ],
            no_trunc=no_trunc,
        )
        return
    resp = with_client(
        hub,
        token,
        lambda c: c.call(
            r.ListDeployments,
            make_request(
                ListDeploymentsRequest, namespace=namespace, all_namespaces=all_namespaces
            ),
        ),
    )
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    cols = (["NAMESPACE"] if all_namespaces else []) + [
        "NAME",
        "KIND",
        "ACTIVITY",
        "FAILED (1h)",
        "READY",
        "QUEUED",
        "RUNNING",
        "DIGEST",
        "LAST ACTIVE",
    ]
    rows = []
    for d in resp.deployments:
        # The one activity word (agen.hub.observe.activity) every screen shows, so `ps` and the TUI agree.
        word = (
            f"{d.activity} ({d.stopped_reason})"
            if d.activity == "stopped" and d.stopped_reason
            else f"failing ({d.failing_reason})"
            if d.activity == "failing" and d.failing_reason
            else f"{d.activity} (waiting on a {d.waiting_on})"
            if d.waiting_on
            else f"needs {d.needs}"
            if d.activity == "needs" and d.needs
            else d.activity
        )
        row = [
            d.name,
            d.kind,
            word,
            str(d.failed_1h),
            f"{d.ready}/{d.desired}",
            str(d.queued + d.scheduled),
            str(d.running),
            d.digest[7:19],
            ago(d.last_activity_ms),
        ]
        rows.append([*([d.namespace] if all_namespaces else []), *row])
    if not resp.deployments:
        err("no deployments; create one with `agen deploy <bundle-dir>`")
        return
    print_table(cols, rows, no_trunc=no_trunc, flexible=("ACTIVITY",))


def _pause(
    name: str,
    paused: bool,
    hold_runs: bool,
    at: str | None,
    in_: str | None,
    reason: str | None,
    hub: str | None,
    token: str | None,
    namespace: str,
    json_out: bool,
) -> None:
    from agen.api import registry as r
    from agen.cli._hub import hold_until, with_client
    from agen.errors import InvalidError
    from agen.wire.deployments import PauseDeploymentRequest

    until = hold_until(at, in_)
    if (until is not None or reason) and not hold_runs and paused:
        raise InvalidError("--at, --in and --reason go with --hold-runs", field="--hold-runs")
    req = make_request(
        PauseDeploymentRequest,
        namespace=namespace,
        name=name,
        paused=paused,
        hold_runs=hold_runs,
        hold_until_ms=until,
        reason=reason,
    )
    resp = with_client(hub, token, lambda c: c.call(r.PauseDeployment, req))
    if json_out:
        print_json(resp.model_dump(mode="json"))
    else:
        print(f"{name}: {'stopped' if paused else 'started'}")


def stop(
    name: NameArg,
    hold_runs: HoldRuns = False,
    at: AtOpt = None,
    in_: InOpt = None,
    reason: ReasonOpt = None,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Stop all instances and hold at zero (paused)."""
    _pause(name, True, hold_runs, at, in_, reason, hub, token, namespace, json_out)


def start(
    name: NameArg,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Resume a stopped deployment (back to its minimum; ends holds from stop --hold-runs)."""
    _pause(name, False, False, None, None, None, hub, token, namespace, json_out)


def rm(
    name: NameArg,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Delete a deployment (cancels its unfinished tasks, ends its unfinished runs)."""
    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.wire.deployments import DeleteDeploymentRequest

    resp = with_client(
        hub,
        token,
        lambda c: c.call(
            r.DeleteDeployment,
            make_request(DeleteDeploymentRequest, namespace=namespace, name=name),
        ),
    )
    if json_out:
        print_json(resp.model_dump(mode="json"))
    else:
        print(
            f"{name}: deleted ({resp.cancelled_tasks} tasks cancelled, {resp.ended_runs} runs ended)"
        )


def logs(
    name: NameArg,
    follow: Annotated[bool, typer.Option("-f", "--follow", help="Follow.")] = False,
    instance: Annotated[
        str | None, typer.Option("--instance", help="Only this instance.", show_default=False)
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="Lines.")] = 200,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Operational logs: instance starts, failures, exits, task releases, lease expiries."""
    import asyncio

    from agen.api import registry as r
    from agen.cli._hub import when
    from agen.client import Client
    from agen.wire.deployments import GetLogsRequest, LogLine

    def show(lines: list[LogLine]) -> None:
        for line in lines:
            if json_out:
                print(line.model_dump_json(), flush=True)
            else:
                inst = f" [{line.instance_id}]" if line.instance_id else ""
                print(f"{when(line.created_ms)} {line.level:5} {line.message}{inst}", flush=True)

    async def go() -> None:
        async with Client.from_options(hub, token) as c:
            req = make_request(
                GetLogsRequest, namespace=namespace, name=name, instance=instance, limit=limit
            )
            resp = await c.call(r.GetLogs, req)
            show(list(resp.lines))
            after = resp.last_seq
            while follow:
                resp = await c.call(
                    r.GetLogs,
                    req.model_copy(update={"after_seq": after, "wait_seconds": 25, "limit": 1000}),
                )
                show(list(resp.lines))
                after = resp.last_seq

    asyncio.run(go())


def register(app: typer.Typer) -> None:
    app.command("scale")(scale)
    app.command("ps")(ps)
    app.command("logs")(logs)
    app.command("stop")(stop)
    app.command("start")(start)
    app.command("rm")(rm)
