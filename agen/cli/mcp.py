"""``agen mcp``: the MCP servers that ship with agen, run over stdio for a bundle's mcp.json."""

from __future__ import annotations

from typing import Annotated

import typer

from agen.cli._common import group, parse_duration_ms


def register(app: typer.Typer) -> None:
    mcp = group(
        name="mcp",
        help="Built-in MCP servers (stdio): a confined workspace and read-only SQL.",
        no_args_is_help=True,
    )

    @mcp.command("workspace")
    def workspace(
        root: Annotated[
            str,
            typer.Option(
                "--root",
                help="Directory the file tools are confined to (run starts in it, unconfined).",
            ),
        ],
        no_run: Annotated[
            bool, typer.Option("--no-run", help="Leave out the run (shell) tool.")
        ] = False,
        run_timeout: Annotated[
            str,
            typer.Option("--run-timeout", help="Default timeout of run, e.g. 2m (at most 10m)."),
        ] = "2m",
    ) -> None:
        """Serve read, write, edit, glob, grep and run (stdio MCP) over ROOT.

        The file tools are confined to ROOT: `..` that climbs out, absolute paths outside it
        and symlinks that lead outside are refused. run is NOT confined and is not a sandbox:
        it runs `sh -c COMMAND` in ROOT as your user, so the command can read and write any
        path you can and use the network. run returns when the shell exits; on timeout, and
        when the server exits, every process the command started is killed (setsid children
        included; on Linux). Use --no-run to leave it out.
        """
        import os

        from agen.errors import InvalidError
        from agen.mcpservers._shell import MAX_TIMEOUT_S
        from agen.mcpservers.workspace import serve

        timeout_s = parse_duration_ms(run_timeout, flag="--run-timeout") / 1000
        if not 0 < timeout_s <= MAX_TIMEOUT_S:
            raise InvalidError(
                f"--run-timeout must be more than 0 and at most 10m (got {run_timeout})"
            )
        if not os.path.isdir(root):
            raise InvalidError(f"--root {root} is not a directory; create it first", field="--root")
        serve(root, allow_run=not no_run, run_timeout_s=timeout_s)

    @mcp.command("sql")
    def sql(
        dsn_env: Annotated[
            str,
            typer.Option(
                "--dsn-env",
                help="Environment variable holding the DSN (sqlite:///path.db, postgres://...).",
            ),
        ] = "AGEN_SQL_DSN",
    ) -> None:
        """Serve read-only SQL queries (row-capped) against the database named by --dsn-env.

        Runs SELECT, WITH, EXPLAIN and VALUES, plus only these PRAGMAs (as PRAGMA name or
        PRAGMA name(arg), never name = value): table_info, table_xinfo, table_list,
        index_list, index_info, index_xinfo, foreign_key_list, database_list. Writes and
        other PRAGMAs are refused before they reach the database; a statement SQLite cannot
        parse is reported as a syntax error with SQLite's message.
        """
        from agen.errors import InvalidError
        from agen.mcpservers.sql import serve

        try:
            serve(dsn_env)
        except (ValueError, FileNotFoundError, RuntimeError) as e:
            raise InvalidError(str(e)) from None

    @mcp.command(
        "launch",
        hidden=True,
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )
    def launch(ctx: typer.Context) -> None:
        """Internal: start an MCP server with a parent-death signal and a cleared environment."""
        from agen.runner.tools._pdeath import run

        run(list(ctx.args))

    app.add_typer(mcp)
