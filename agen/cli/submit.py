"""``agen run`` against the fleet: submit to a live Hub, or start an embedded Hub + Nest.

With ``--hub``, or while an ``agen up`` owns this home or its store (decided by its lock, not by
whether it answers: a busy or stopped one is waited for, never run beside), the task goes over
HTTP. Without one, the CLI opens the local store itself (holding the store's shared lock, so an
``agen up`` starting meanwhile waits), deploys the bundle folder when given one (updating it when
its digest changed), runs a Hub and a Nest in this process scoped to that task's deployment (no
other deployment's instances, tasks, triggers or upkeep), prints the outcome and exits: the path
a system cron job uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agen.cli._common import (
    HubOpt,
    JsonOpt,
    NamespaceOpt,
    TokenOpt,
    complete_deployments,
    is_folder,
)

if TYPE_CHECKING:
    from agen.cli._stream import Follow, StreamPrinter
    from agen.client import Client
    from agen.domain.attachments import FileIn
    from agen.wire.tasks import SubmitTaskRequest, Task


@dataclass
class RunOptions:
    at: str | None = None
    in_: str | None = None
    conversation: str | None = None
    delivery: str | None = None
    expires_in: str | None = None
    idempotency_key: str | None = None
    labels: list[str] = field(default_factory=list)
    locks: list[str] = field(default_factory=list)
    no_wait: bool = False
    on_parent_end: str | None = None
    priority: str | None = None
    schedule_key: str | None = None
    tier: str | None = None
    timeout: str = "10m"
    trust: str | None = None
    attach: list[str] = field(default_factory=list)  # files given with the input (--attach)
    status_line: bool = False  # a live line on stderr while waiting (a terminal, not --json)
    task_id: str | None = None  # set once submitted: what a Ctrl-C hint names
    stream: bool | None = None  # print the answer as it streams (None: to a terminal only)
    printer: StreamPrinter | None = None  # set while streaming: what it already printed
    follow: Follow | None = None  # the live events subscribed before the task was submitted


def read_attachments(paths: list[str]) -> list[FileIn]:
    """The files of --attach, checked here (type, size, count) so a bad one fails before anything
    is submitted, naming its path."""
    import base64
    from pathlib import Path

    from agen.domain.attachments import FileIn, check_files
    from agen.errors import InvalidError

    files: list[tuple[str, bytes, str | None]] = []
    for raw in paths:
        path = Path(raw).expanduser()
        try:
            data = path.read_bytes()
        except IsADirectoryError:
            raise InvalidError(
                f"--attach {raw}: is a folder; attach files one by one", field="--attach"
            ) from None
        except OSError as e:
            raise InvalidError(
                f"--attach {raw}: cannot read it ({e.strerror or e}); give a file you can read",
                field="--attach",
            ) from None
        files.append((path.name, data, None))
    try:
        check_files(files)
    except InvalidError as e:
        raise InvalidError(f"--attach: {e.message}", field="--attach") from None
    return [FileIn(name=n, data=base64.b64encode(d).decode()) for n, d, _ in files]


def build_request(deployment: str, text: str, namespace: str, o: RunOptions) -> SubmitTaskRequest:
    import time

    from pydantic import ValidationError

    from agen.cli._common import parse_duration_ms
    from agen.cli._hub import parse_time_ms
    from agen.errors import InvalidError
    from agen.hub.events.log import parse_labels
    from agen.wire.tasks import SubmitTaskRequest

    now = int(time.time() * 1000)
    if o.at and o.in_:
        raise InvalidError("--at and --in both set the start time; pass one", field="--at")
    not_before = (
        parse_time_ms(o.at, flag="--at")
        if o.at
        else (now + parse_duration_ms(o.in_, flag="--in") if o.in_ else None)
    )
    not_after = now + parse_duration_ms(o.expires_in, flag="--expires-in") if o.expires_in else None
    try:
        return SubmitTaskRequest(
            namespace=namespace,
            deployment=deployment,
            input=text,
            conversation_key=o.conversation,
            labels=parse_labels(o.labels),
            priority=o.priority or "normal",
            idempotency_key=o.idempotency_key,
            schedule_key=o.schedule_key,
            not_before_ms=not_before,
            not_after_ms=not_after,
            locks=o.locks,
            trust=o.trust,
            model_tier=o.tier,
            delivery=o.delivery,
            on_parent_end=o.on_parent_end or "cancel",
            attachments=read_attachments(o.attach),
        )
    except ValidationError as e:
        first = e.errors()[0]
        flag = {
            "priority": "--priority",
            "trust": "--trust",
            "model_tier": "--tier",
            "delivery": "--delivery",
            "on_parent_end": "--on-parent-end",
        }.get(str(first["loc"][0]), str(first["loc"][0]))
        raise InvalidError(f"{flag}: {first['msg']}", field=flag) from None


async def submit_and_report(
    client: Client,
    target: str,
    req: SubmitTaskRequest,
    timeout_ms: int,
    o: RunOptions,
    *,
    is_bundle: bool,
) -> Task:
    """Deploy a bundle folder if given one, submit the (already validated) task, wait per --timeout/--no-wait."""

    task = await deploy_and_submit(client, target, req, o, is_bundle=is_bundle)
    if o.no_wait:
        return task
    return await wait_showing_status(client, task.id, timeout_ms, req.namespace, o)


async def wait_showing_status(
    client: Client, task_id: str, timeout_ms: int, namespace: str, o: RunOptions
) -> Task:
    """Wait for the task; streaming its answer to stdout (--stream), or in a terminal with a live
    status line on stderr while it runs."""
    from agen.cli.tasks import wait_for_task

    if o.stream:
        import sys

        from agen.cli._status import StatusLine
        from agen.cli._stream import Follow, StreamPrinter, wait_streaming

        o.printer = StreamPrinter(sys.stdout, sys.stderr)
        if o.status_line:
            printer = o.printer
            o.printer.status = StatusLine(sys.stderr, hold=lambda: printer.open_line)
        follow, o.follow = o.follow or Follow(), None
        return await wait_streaming(client, task_id, timeout_ms, namespace, o.printer, follow)

    wait = wait_for_task(client, task_id, timeout_ms, namespace)
    if not o.status_line:
        return await wait
    from agen.cli._status import with_status_line

    task: Task = await with_status_line(client, task_id, namespace, wait)
    return task


async def deploy_and_submit(
    client: Client,
    target: str,
    req: SubmitTaskRequest,
    o: RunOptions,
    *,
    is_bundle: bool,
    queued_note: str = "",
) -> Task:
    from agen.api import registry as r
    from agen.cli._common import err

    if is_bundle:
        from agen.cli.deploy import deploy_request

        resp = await client.call(
            r.CreateDeployment, deploy_request(target, req.namespace, None, None)
        )
        assert resp.deployment is not None
        req = req.model_copy(update={"deployment": resp.deployment.name})
        if resp.created or resp.changed:
            err(
                f"{req.deployment}: {'deployed' if resp.created else 'updated'} ({resp.deployment.definition_id})"
            )
    if o.stream and not o.no_wait:
        from agen.cli._stream import Follow

        o.follow = Follow()
        await o.follow.open(client, req.namespace, deployment=req.deployment)
    try:
        submitted = await client.call(r.SubmitTask, req)
    except BaseException:
        if o.follow is not None:
            await o.follow.aclose()
        raise
    task = submitted.task
    o.task_id = task.id
    if o.no_wait:
        if submitted.created:
            err(f"task {task.id} queued; `agen wait {task.id}` prints its result{queued_note}")
        else:  # the key named a task submitted before, which may have ended long ago
            err(
                f"task {task.id} already exists ({task.state}); idempotency key {req.idempotency_key}; "
                f"`agen wait {task.id}` prints its result"
            )
    else:
        err(
            f"task {task.id} {'submitted' if submitted.created else 'already submitted (same idempotency key)'}"
        )
    return task


def hub_is_live(url: str, ca_hash: str | None = None) -> bool:
    """Whether the Hub at ``url`` answers; ``ca_hash`` pins a TLS Hub's CA (local.json has it)."""
    import httpx

    from agen.errors import AgenError

    try:
        if ca_hash:
            from agen.client import pinned_context

            verify: Any = pinned_context(url, ca_hash)
        else:
            verify = True
        # 503 is a live Hub whose store is degraded: use it (and hear its error), never start a second one.
        r = httpx.get(url.rstrip("/") + "/health", timeout=1.0, verify=verify)
        return r.status_code in (200, 503)
    except (httpx.HTTPError, httpx.InvalidURL, ValueError, AgenError):
        return False


def hub_wait_ms(timeout_ms: int, no_wait: bool) -> int:
    """How long to wait for the local `agen up` to answer: --timeout; with --no-wait, at most as long
    as any call to a Hub (AGEN_HUB_TIMEOUT, 30 s), since no result is awaited."""
    if not no_wait:
        return timeout_ms
    from agen.client import hub_timeout_s

    bound = int(hub_timeout_s() * 1000)
    return bound if timeout_ms == 0 else min(timeout_ms, bound)


def run_task(
    target: str,
    text: str,
    o: RunOptions,
    *,
    hub: str | None,
    token: str | None,
    namespace: str,
    json_out: bool,
) -> None:
    import sys

    from agen.cli._common import err, parse_duration_ms, print_json
    from agen.cli._hub import run as run_async
    from agen.cli._hub import with_client
    from agen.cli.oneshot import local_hub
    from agen.ownership import release

    is_bundle = is_folder(target)
    # Every flag is checked before anything happens: a bad --label must not deploy the bundle first.
    req = build_request(
        "bundle" if is_bundle else target, text, namespace, o
    )  # named once deployed
    timeout_ms = parse_duration_ms(o.timeout, flag="--timeout")
    if o.stream and (json_out or o.no_wait):
        from agen.errors import InvalidError

        flag = "--json" if json_out else "--no-wait"
        raise InvalidError(
            f"--stream prints the answer as it comes, which {flag} does not wait for or print; "
            "pass one of them",
            field="--stream",
        )
    if o.stream is None:
        from agen.cli._stream import streams_by_default

        o.stream = streams_by_default(json_out, o.no_wait)
    if o.stream:
        from agen.cli._stream import preload

        preload()  # before the task is submitted: its first words may come right after
    o.status_line = not json_out and not o.no_wait and sys.stderr.isatty()
    found = None if hub is not None else local_hub(hub_wait_ms(timeout_ms, o.no_wait))
    use_http = found is None or found.up is not None
    try:
        if use_http:
            up = found.up if found is not None else None
            url, token = (hub, token) if up is None else (up.url, token or up.token)
            task = with_client(
                url,
                token,
                lambda c: submit_and_report(c, target, req, timeout_ms, o, is_bundle=is_bundle),
            )
        else:
            assert found is not None
            try:
                task = run_async(_embedded(target, req, timeout_ms, o, is_bundle=is_bundle))
            finally:
                release(found.lock)
    except KeyboardInterrupt:
        if o.task_id is None:
            raise
        err(interrupted_hint(o.task_id, in_hub=use_http))
        raise typer.Exit(130) from None
    if o.no_wait:
        if json_out:
            print_json(task.model_dump(mode="json"))
        else:
            print(task.id)
        return
    if not use_http and task.pending_approvals:
        err(
            f"task {task.id} waits for approval {task.pending_approvals[0]}; no `agen up` is running, so start "
            f"one (`agen up`), then `agen approve {task.pending_approvals[0]}` and `agen wait {task.id}`"
        )
    from agen.cli.tasks import report_task

    report_task(task, json_out, o.printer)


def interrupted_hint(task_id: str, *, in_hub: bool) -> str:
    """What Ctrl-C left behind, and the two commands that follow it up."""
    if in_hub:
        return (
            f"\ninterrupted: only the wait stopped; task {task_id} goes on in the Hub. "
            f"`agen wait {task_id}` waits for its result, `agen cancel {task_id}` cancels it"
        )
    return (
        f"\ninterrupted: task {task_id} stopped with this command (no `agen up` is running); "
        f"`agen up` resumes it, then `agen wait {task_id}` prints its result; `agen cancel {task_id}` cancels it"
    )


async def _embedded(
    target: str, req: SubmitTaskRequest, timeout_ms: int, o: RunOptions, *, is_bundle: bool
) -> Task:
    """A Hub and a Nest in this process over the local store, scoped to this one task's deployment.

    The Nest has its own name (``oneshot-<pid>``), so enrolling it never voids another Nest's leases;
    with --no-wait nothing starts at all (the task waits for ``agen up``).
    """
    import os

    from agen.client import Client
    from agen.hub.service import Hub
    from agen.node import LocalNode
    from agen.store import open_store

    store = await open_store(None)
    try:
        hub = Hub(store)
        task = await deploy_and_submit(
            Client.in_process(hub),
            target,
            req,
            o,
            is_bundle=is_bundle,
            queued_note=" once `agen up` runs it",
        )
        if o.no_wait:
            return task
        node = LocalNode(
            store,
            hub=hub,
            tick_s=0.2,
            heartbeat_s=0.2,
            nest_name=f"oneshot-{os.getpid()}",
            only_deployment=task.deployment_id,
            only_tree=task.id,
        )  # a CLI task is its own root
        try:
            await node.start()
            return await wait_showing_status(
                Client.in_process(hub), task.id, timeout_ms, req.namespace, o
            )
        finally:
            await node.drain(30)
    finally:
        await store.close()


def run(
    target: Annotated[
        str,
        typer.Argument(
            help="Deployment name, or a bundle folder (deployed first).",
            show_default=False,
            autocompletion=complete_deployments,
        ),
    ],
    text: Annotated[
        str, typer.Argument(metavar="INPUT", help="The task's input.", show_default=False)
    ],
    at: Annotated[
        str | None,
        typer.Option("--at", help="Run no earlier than this time (RFC 3339).", show_default=False),
    ] = None,
    in_: Annotated[
        str | None,
        typer.Option(
            "--in", help="Run no earlier than this long from now (e.g. 30m).", show_default=False
        ),
    ] = None,
    conversation: Annotated[
        str | None,
        typer.Option(
            "--conversation",
            help="Continue the conversation of earlier tasks with this key.",
            show_default=False,
        ),
    ] = None,
    delivery: Annotated[
        str | None,
        typer.Option(
            "--delivery",
            help="Override the conversation's queue mode for this submission only: followup, collect, "
            "steer or interrupt.",
            show_default=False,
        ),
    ] = None,
    expires_in: Annotated[
        str | None,
        typer.Option(
            "--expires-in",
            help="Fail as expired if still queued this long from now.",
            show_default=False,
        ),
    ] = None,
    idempotency_key: Annotated[
        str | None,
        typer.Option(
            "--idempotency-key",
            help="Resubmitting the same key returns the same task.",
            show_default=False,
        ),
    ] = None,
    label: Annotated[
        list[str] | None,
        typer.Option("--label", help="Label the task, key=value (repeatable).", show_default=False),
    ] = None,
    lock: Annotated[
        list[str] | None,
        typer.Option(
            "--lock",
            help="Wait until this (and every other --lock) is free, then hold it until the task ends "
            "(repeatable).",
            show_default=False,
        ),
    ] = None,
    no_wait: Annotated[
        bool,
        typer.Option(
            "--no-wait",
            help="Print the task id and return (the Hub gets AGEN_HUB_TIMEOUT, default 30s, to take it).",
        ),
    ] = False,
    on_parent_end: Annotated[
        str | None,
        typer.Option(
            "--on-parent-end",
            help="What happens to this task's own children when it ends: cancel (default) or abandon.",
            show_default=False,
        ),
    ] = None,
    priority: Annotated[
        str | None,
        typer.Option(
            "--priority",
            help="Lease order within the deployment's queue: urgent, high, normal or background.",
            show_default=False,
        ),
    ] = None,
    schedule_key: Annotated[
        str | None,
        typer.Option(
            "--schedule-key",
            help="At most one queued task per deployment and key; submitting again with the same "
            "key cancels the queued one.",
            show_default=False,
        ),
    ] = None,
    tier: Annotated[
        str | None,
        typer.Option(
            "--tier",
            help="Cost tier for a routing model: low, medium, high, xhigh or max.",
            show_default=False,
        ),
    ] = None,
    timeout: Annotated[
        str,
        typer.Option(
            "--timeout",
            help="How long to wait for the result (0: no limit); the task keeps running after it.",
        ),
    ] = "10m",
    trust: Annotated[
        str | None,
        typer.Option(
            "--trust",
            help="A trust at most this high: operator, trusted or untrusted (default: the token's own).",
            show_default=False,
        ),
    ] = None,
    attach: Annotated[
        list[str] | None,
        typer.Option(
            "--attach",
            metavar="FILE",
            help="Give the model this file with the input (repeatable): an image (png, jpeg, gif, "
            "webp), a PDF or a text file, at most 10 MiB each and 20 MiB together.",
            show_default=False,
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Only say whether the task would be admitted now and, if not, which stage refuses it "
            "(exit 0 admitted, 7 refused, 3 paused as a submission would); nothing is queued.",
        ),
    ] = False,
    stream: Annotated[
        bool | None,
        typer.Option(
            "--stream/--no-stream",
            help="Print the answer on stdout as the model writes it (default: when stdout is a "
            "terminal), or only the outcome at the end.",
            show_default=False,
        ),
    ] = None,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Submit a task and wait for its result (no `agen up` running: an embedded Hub runs it here).

    The outcome goes to stdout and the status to stderr; the exit code is 1 when the task
    failed, was cancelled or expired, and 8 when it has not ended yet (it waits for an approval,
    or --timeout ran out: the task goes on).
    """
    opts = RunOptions(
        at=at,
        in_=in_,
        conversation=conversation,
        delivery=delivery,
        expires_in=expires_in,
        idempotency_key=idempotency_key,
        labels=label or [],
        locks=lock or [],
        no_wait=no_wait,
        on_parent_end=on_parent_end,
        priority=priority,
        schedule_key=schedule_key,
        tier=tier,
        timeout=timeout,
        trust=trust,
        stream=stream,
        attach=attach or [],
    )
    if dry_run:
        from agen.cli.dryrun import dry_run as check

        code = check(
            target, text, opts, hub=hub, token=token, namespace=namespace, json_out=json_out
        )
        raise typer.Exit(code)
    run_task(target, text, opts, hub=hub, token=token, namespace=namespace, json_out=json_out)


def register(app: typer.Typer) -> None:
    app.command("run")(run)
