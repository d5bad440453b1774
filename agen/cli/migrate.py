"""``agen migrate``: move everything a store holds to another store (SQLite <-> Postgres), then point
AGEN_HOME at it so the next ``agen up`` uses it. The copy itself is agen.store.copy."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agen.cli._common import JsonOpt, err, print_json

if TYPE_CHECKING:
    from agen.store.copy import TableCheck
    from agen.store.copy_sides import Side
    from agen.store.locate import Location


def migrate(
    to: Annotated[
        str,
        typer.Option(
            "--to",
            help="The store to copy into: postgres://… or sqlite:PATH (new, or partly copied).",
        ),
    ],
    from_: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="The store to copy from (a SQLite path, sqlite:PATH or postgres://…); default: this AGEN_HOME's store.",
        ),
    ] = None,
    drain: Annotated[
        bool,
        typer.Option(
            "--drain", help="Ask the `agen up` running on the source to drain and stop first."
        ),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Print the tables and row counts it would copy; change nothing."
        ),
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Copy every table of a store into another (resumable, verified), then use the new store."""
    from agen.cli._migrate_owner import hold, refuse_or_drain
    from agen.errors import InvalidError
    from agen.store.copy import open_side
    from agen.store.locate import locate, migrated_from, resolve_store_url

    dst_loc = locate(to)
    in_use = resolve_store_url(None) or _default_url()  # the store this AGEN_HOME uses now
    home_on_target = locate(in_use).store_url == dst_loc.store_url
    earlier = migrated_from(dst_loc.store_url) if from_ is None and home_on_target else None
    src_loc = locate(from_ or earlier or in_use)
    if earlier is not None:  # the same migrate again, after it pointed AGEN_HOME at its target
        err(
            f"agen migrate: AGEN_HOME already uses {_shown(dst_loc)}; copying what is new in "
            f"{_shown(src_loc)}, the store it was migrated from, and verifying the two again"
        )
    if src_loc.store_url == dst_loc.store_url:
        raise InvalidError(
            f"--to names the source store itself ({_shown(src_loc)}); name another store",
            field="--to",
        )
    source = target = None
    try:
        source = open_side(src_loc, write=False, field="--from")
        if source is None:
            raise InvalidError(
                f"the source store {src_loc.path} does not exist; name it with --from",
                field="--from",
            )
        refuse_or_drain(src_loc, source, drain=drain, dry_run=dry_run)
        if dry_run:
            target = open_side(dst_loc, write=False, field="--to")
            _dry_run(source, target, dst_loc, json_out)
            return
        with hold(src_loc, dst_loc):
            source.close()
            # opened for writing: an older source's schema is upgraded first, as `agen up` would
            source = open_side(src_loc, write=True, field="--from")
            target = open_side(dst_loc, write=True, field="--to")
            assert source is not None and target is not None
            checks = _copy_and_verify(source, target, json_out)
        _finish(src_loc, dst_loc, checks, json_out, home_on_target=home_on_target)
    finally:
        for side in (source, target):
            if side is not None:
                side.close()


def _default_url() -> str:
    from agen.util.home import default_store_path

    return f"sqlite:{default_store_path()}"


def _shown(loc: Location) -> str:
    """A location for messages: the path, or the Postgres URL without its password."""
    if loc.path is not None:
        return str(loc.path)
    from agen.store.locate import redact_url as _redact

    return _redact(loc.url)


def _dry_run(source: Side, target: Side | None, dst: Location, json_out: bool) -> None:
    from agen.store.copy import check_schema, resume_point, source_counts
    from agen.store.copy_schema import copy_plan

    check_schema(source, "source")
    if target is not None and target.applied():
        check_schema(target, "target")
    done = resume_point(source, target)
    counts = source_counts(source)
    rows: list[dict[str, Any]] = [
        {
            "table": t.name,
            "rows": counts[t.name],
            "copied": done[t.name].copied if t.name in done else 0,
        }
        for t in copy_plan()
    ]
    state = (
        "new" if target is None or not target.applied() else ("partly copied" if done else "empty")
    )
    if json_out:
        print_json(
            {
                "dry_run": True,
                "source": source.where,
                "target": _shown(dst),
                "target_state": state,
                "tables": rows,
                "rows": sum(counts.values()),
            }
        )
        return
    from agen.cli._table import print_table

    print_table(
        ["TABLE", "ROWS", "ALREADY COPIED"],
        [[r["table"], str(r["rows"]), str(r["copied"])] for r in rows],
    )
    print(
        f"dry run: would copy {sum(counts.values())} rows in {len(rows)} tables from {source.where} "
        f"to {_shown(dst)} ({state}); nothing was changed"
    )


def _copy_and_verify(source: Side, target: Side, json_out: bool) -> list[TableCheck]:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from agen.store.copy import (
        check_schema,
        copy_all,
        resume_point,
        source_counts,
        verify,
    )

    check_schema(source, "source")
    check_schema(target, "target")
    resume_point(source, target)  # refuse a foreign target before anything is written into it
    counts = source_counts(source)
    console = Console(stderr=True)
    show = console.is_terminal and not json_out
    with Progress(
        TextColumn("{task.description:<22}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        disable=not show,
    ) as bar:
        jobs: dict[str, Any] = {}

        def on_progress(t: Any, copied: int) -> None:
            if t.name not in jobs:
                jobs[t.name] = bar.add_task(t.name, total=max(counts[t.name], copied))
            bar.update(jobs[t.name], completed=copied)

        copy_all(source, target, on_progress=on_progress)
        check = bar.add_task("verifying", total=len(counts))
        return verify(source, target, on_table=lambda _n: bar.advance(check))


def _finish(
    src: Location,
    dst: Location,
    checks: list[TableCheck],
    json_out: bool,
    *,
    home_on_target: bool,
) -> None:
    import os

    from agen.errors import StoreError
    from agen.store.locate import ENV_STORE, home_pointer, point_home_at

    bad = [c for c in checks if not c.ok]
    why = (
        f"AGEN_HOME already used {_shown(dst)} before this run and still does: work done there since "
        "the earlier migrate makes the two differ, which is expected once the new store is in use"
        if home_on_target
        else "AGEN_HOME still uses the source. Was the source changed during the copy? Migrate "
        "again into a new database or file"
    )
    failed = (
        StoreError(
            f"verification failed: {len(bad)} table(s) differ between {_shown(src)} and {_shown(dst)} "
            f"({', '.join(c.table for c in bad[:5])}); {why}",
            tables=[c.table for c in bad],
        )
        if bad
        else None
    )
    if not bad:
        point_home_at(dst.store_url, migrated_from=src.store_url)
    back = (
        f"to go back, delete {home_pointer()} (the next `agen up` then uses {_shown(src)} as it was before "
        f"the copy), or copy the changes made since into a new file with `agen migrate --to sqlite:PATH`"
    )
    if json_out:
        print_json(
            {
                "source": _shown(src),
                "target": _shown(dst),
                "ok": not bad,
                "rows": sum(c.source_rows for c in checks),
                "tables": [c.to_dict() for c in checks],
                "pointer": str(home_pointer()) if not bad else None,
                # one JSON document: a failed verification's error travels in the report
                **({"error": failed.to_dict()["error"]} if failed else {}),
            }
        )
    else:
        from agen.cli._table import print_table

        print_table(
            ["TABLE", "SOURCE ROWS", "TARGET ROWS", "CHECKSUM", "OK"],
            [
                [
                    c.table,
                    str(c.source_rows),
                    str(c.target_rows),
                    c.source_checksum[:12]
                    + (
                        ""
                        if c.source_checksum == c.target_checksum
                        else f" != {c.target_checksum[:12]}"
                    ),
                    "yes" if c.ok else "NO",
                ]
                for c in checks
            ],
        )
        if not bad:
            print(
                f"copied {sum(c.source_rows for c in checks)} rows in {len(checks)} tables from {_shown(src)} "
                f"to {_shown(dst)}; verified (row counts and checksums match)"
            )
            print(
                f"AGEN_HOME now uses {_shown(dst)} ({home_pointer()}): the next `agen up` serves it"
            )
            print(back)
    if failed is not None:
        if json_out:
            err(f"error: {failed}")
            raise typer.Exit(failed.exit_code)
        raise failed
    if os.environ.get(ENV_STORE, "").strip():
        err(
            f"agen migrate: {ENV_STORE} is set and takes precedence over {home_pointer()}; "
            f"unset it (or set it to the new store) for `agen up` to use {_shown(dst)}"
        )
    sys.stdout.flush()


def register(app: typer.Typer) -> None:
    app.command("migrate")(migrate)
