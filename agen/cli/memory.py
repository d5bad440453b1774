"""Memory blocks and artifacts (seed 002 ``agen memory``, ``agen artifacts``): see what agents remember
and saved, set a block (value on stdin, optionally compare-and-set), read its history, roll it back."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from agen.cli._common import (
    HubOpt,
    JsonOpt,
    NamespaceOpt,
    NoTruncOpt,
    TokenOpt,
    err,
    group,
    make_request,
    print_json,
)

memory_app = group(help="Memory blocks: durable text agents read and update.", no_args_is_help=True)
artifacts_app = group(help="Artifacts agents saved with save_artifact.", no_args_is_help=True)

LabelArg = Annotated[str, typer.Argument(help="Memory block id (its label).", show_default=False)]
ExpectedOpt = Annotated[
    int | None,
    typer.Option(
        "--expected-version",
        min=0,
        show_default=False,
        help="Only if the block is at this version (0: only if it does not exist yet); otherwise exit 5.",
    ),
]


_FLAGS = {"label": "ID", "to_version": "--to"}


def _read_stdin() -> str:
    """The value for `memory set`: all of stdin, as UTF-8 text."""
    from agen.errors import InvalidError

    if sys.stdin is None:
        raise InvalidError(
            "agen memory set reads the value from stdin, and there is none", field="stdin"
        )
    if sys.stdin.isatty():
        err("reading the value from stdin (end with Ctrl-D)")
    try:
        return sys.stdin.read()
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidError(
            f"cannot read the value from stdin ({e}); pipe it in: echo 'text' | agen memory set ID",
            field="stdin",
        ) from None


def _who(kind: str | None, author: str | None) -> str:
    return "-" if not author else (f"run {author}" if kind == "run" else author)


@memory_app.command("ls")
def memory_ls(
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    no_trunc: NoTruncOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Memory blocks in the namespace."""
    from agen.api import registry as r
    from agen.cli._hub import ago, with_client
    from agen.cli._table import print_table
    from agen.wire.memory import ListMemoryRequest

    resp = with_client(
        hub,
        token,
        lambda c: c.call(r.ListMemory, make_request(ListMemoryRequest, namespace=namespace)),
    )
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    if not resp.blocks:
        err(f"no memory blocks in namespace {namespace}; `agen memory set <id>` creates one")
        return
    print_table(
        ("ID", "TITLE", "VERSION", "SIZE", "UPDATED", "BY"),
        [
            (
                b.label,
                b.title or "-",
                str(b.version),
                f"{b.chars}/{b.limit_chars}",
                ago(b.updated_ms),
                _who(b.author_kind, b.author),
            )
            for b in resp.blocks
        ],
        no_trunc=no_trunc,
        flexible=("TITLE",),
    )


@memory_app.command("show")
def memory_show(
    block_id: LabelArg,
    version: Annotated[
        int | None, typer.Option("--version", min=0, show_default=False, help="An earlier version.")
    ] = None,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """A memory block's value (stdout) and its version (stderr)."""
    from agen.api import registry as r
    from agen.cli._hub import when, with_client
    from agen.wire.memory import GetMemoryRequest

    resp = with_client(
        hub,
        token,
        lambda c: c.call(
            r.GetMemory,
            make_request(
                GetMemoryRequest,
                {"label": "ID"},
                namespace=namespace,
                label=block_id,
                version=version,
            ),
        ),
    )
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    b = resp.block
    err(
        f"{b.label} version {b.version}, {len(b.value)}/{b.limit_chars} characters, "
        f"{when(b.updated_ms)} by {_who(b.author_kind, b.author)}"
    )
    sys.stdout.write(b.value + ("" if b.value.endswith("\n") or not b.value else "\n"))


@memory_app.command("set")
def memory_set(
    block_id: LabelArg,
    title: Annotated[str | None, typer.Option("--title", show_default=False)] = None,
    description: Annotated[
        str | None,
        typer.Option("--description", show_default=False, help="Shown to agents above the value."),
    ] = None,
    limit_chars: Annotated[
        int | None,
        typer.Option(
            "--limit-chars", min=1, show_default=False, help="Most characters the block may hold."
        ),
    ] = None,
    expected_version: ExpectedOpt = None,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Replace a memory block's value with stdin (creating the block)."""
    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.wire.memory import SetMemoryRequest

    req = make_request(
        SetMemoryRequest,
        {**_FLAGS, "value": "the value on stdin"},
        namespace=namespace,
        label=block_id,
        value="",
        title=title,
        description=description,
        limit_chars=limit_chars,
        expected_version=expected_version,
    )  # flags checked before waiting on stdin
    req = make_request(
        SetMemoryRequest,
        {**_FLAGS, "value": "the value on stdin"},
        **{**req.model_dump(exclude_unset=True), "value": _read_stdin()},
    )
    resp = with_client(hub, token, lambda c: c.call(r.SetMemory, req))
    if json_out:
        print_json(resp.model_dump(mode="json"))
    else:
        print(
            f"{resp.block.label}: version {resp.block.version} ({len(resp.block.value)} characters)"
        )


@memory_app.command("history")
def memory_history(
    block_id: LabelArg,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    no_trunc: NoTruncOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Every version of a memory block: who wrote it (a run or a person), when, and the value."""
    from agen.api import registry as r
    from agen.cli._hub import when, with_client
    from agen.cli._table import print_table
    from agen.wire.memory import MemoryHistoryRequest

    resp = with_client(
        hub,
        token,
        lambda c: c.call(
            r.MemoryHistory,
            make_request(
                MemoryHistoryRequest, {"label": "ID"}, namespace=namespace, label=block_id
            ),
        ),
    )
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    print_table(
        ("VERSION", "WHEN", "BY", "NOTE", "VALUE"),
        [
            (
                str(v.version),
                when(v.created_ms),
                _who(v.author_kind, v.author),
                v.note or "-",
                v.value.replace("\n", "⏎"),
            )
            for v in resp.versions
        ],
        no_trunc=no_trunc,
        flexible=("VALUE", "NOTE"),
    )


@memory_app.command("rollback")
def memory_rollback(
    block_id: LabelArg,
    to: Annotated[
        int,
        typer.Option(
            "--to", min=0, show_default=False, help="The version to bring back (as a new version)."
        ),
    ],
    expected_version: ExpectedOpt = None,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Bring back an earlier version of a memory block; it is written as a new version."""
    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.wire.memory import RollbackMemoryRequest

    resp = with_client(
        hub,
        token,
        lambda c: c.call(
            r.RollbackMemory,
            make_request(
                RollbackMemoryRequest,
                _FLAGS,
                namespace=namespace,
                label=block_id,
                to_version=to,
                expected_version=expected_version,
            ),
        ),
    )
    if json_out:
        print_json(resp.model_dump(mode="json"))
    else:
        print(f"{resp.block.label}: version {resp.block.version} (= version {to})")


@artifacts_app.command("ls")
def artifacts_ls(
    task: Annotated[
        str | None, typer.Argument(help="Only this task's artifacts.", show_default=False)
    ] = None,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    no_trunc: NoTruncOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Artifacts in the namespace, or one task's."""
    from agen.api import registry as r
    from agen.cli._hub import ago, with_client
    from agen.cli._table import print_table
    from agen.wire.memory import ListArtifactsRequest

    resp = with_client(
        hub,
        token,
        lambda c: c.call(
            r.ListArtifacts,
            make_request(
                ListArtifactsRequest, {"task_id": "TASK"}, namespace=namespace, task_id=task
            ),
        ),
    )
    if json_out:
        print_json(resp.model_dump(mode="json"))
        return
    if not resp.artifacts:
        err("no artifacts" + (f" for task {task}" if task else f" in namespace {namespace}"))
        return
    print_table(
        ("ID", "NAME", "TYPE", "SIZE", "TASK", "SAVED"),
        [
            (a.id, a.name, a.media_type, str(a.size), a.task_id or "-", ago(a.created_ms))
            for a in resp.artifacts
        ],
        no_trunc=no_trunc,
    )


@artifacts_app.command("get")
def artifacts_get(
    artifact_id: Annotated[
        str,
        typer.Argument(help="Artifact id (sha256:..., or a unique prefix).", show_default=False),
    ],
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", show_default=False, help="Write the content to this file."),
    ] = None,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """An artifact's content (stdout, or -o FILE)."""
    from agen.api import registry as r
    from agen.cli._hub import with_client
    from agen.client import Client
    from agen.errors import InvalidError
    from agen.wire.memory import GetArtifactRequest, GetArtifactResponse

    req = make_request(GetArtifactRequest, namespace=namespace, id=artifact_id)

    async def fetch_all(c: Client) -> GetArtifactResponse:
        first = await c.call(r.GetArtifact, req)
        parts, nxt = [first.content], first.next_offset
        while nxt is not None:
            page = await c.call(
                r.GetArtifact,
                GetArtifactRequest(namespace=namespace, id=first.artifact.id, offset=nxt),
            )
            parts.append(page.content)
            nxt = page.next_offset
        return first.model_copy(update={"content": "".join(parts), "next_offset": None})

    resp = with_client(hub, token, fetch_all)
    if json_out:
        print_json(resp.model_dump(mode="json"))
    elif output is not None:
        try:
            output.write_text(resp.content, encoding="utf-8")
        except (OSError, ValueError) as e:
            raise InvalidError(
                f"-o {output}: cannot write the artifact there ({e})", field="output"
            ) from None
        err(f"wrote {resp.artifact.name} ({resp.artifact.size} bytes) to {output}")
    else:
        sys.stdout.write(resp.content)
        sys.stdout.flush()


def register(app: typer.Typer) -> None:
    app.add_typer(memory_app, name="memory")
    app.add_typer(artifacts_app, name="artifacts")
