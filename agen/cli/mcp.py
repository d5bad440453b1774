"""``agen mcp``: the MCP servers that ship with agen, run over stdio for a bundle's mcp.json."""

from __future__ import annotations

from typing import Annotated

import typer

from agen.cli._common import group, parse_duration_ms


def register(app: typer.Typer) -> None:
    mcp = group(
        name="mcp",
        help="Built-in MCP servers (stdio): a confined workspace and read-only SQL; OAuth login to remote servers.",
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
        and symlinks that lead outside are refused. run is not confined by this server: it
        runs `sh -c COMMAND` in ROOT as your user. When an agent starts this server, agen runs
        the whole server in its sandbox (ROOT the only writable path, no network but the
        bundle's allowed hosts; docs/security.md). run returns when the shell exits; on timeout, and
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

    @mcp.command("login")
    def login(
        server: Annotated[
            str,
            typer.Argument(
                help="A server of the bundle's mcp.json (type http), or the server's URL."
            ),
        ],
        bundle: Annotated[
            str, typer.Option("--bundle", help="The bundle folder whose mcp.json names SERVER.")
        ] = ".",
        no_browser: Annotated[
            bool, typer.Option("--no-browser", help="Print the URL only; never open a browser.")
        ] = False,
        timeout: Annotated[
            str,
            typer.Option("--timeout", help="How long to wait for the login to come back, e.g. 5m."),
        ] = "5m",
    ) -> None:
        """Log in to a remote MCP server with OAuth, for the runs of this machine.

        Runs the MCP authorization flow: discovery, dynamic client registration (agen registers
        as a public client), PKCE, and a redirect to http://127.0.0.1:PORT/callback, which this
        command serves until the code comes back. It prints the URL to open and opens a browser
        only where there is a display. The tokens are kept sealed in AGEN_HOME/mcp-oauth (0600)
        and runs on this machine use them for that server's URL, refreshing them as they expire;
        a run whose login cannot be refreshed fails the call with a message to run this again.
        """
        from agen.cli._hub import run
        from agen.runner.tools.mcp_oauth import login as oauth_login

        name, url, headers = _http_server(server, bundle)
        timeout_s = parse_duration_ms(timeout, flag="--timeout") / 1000

        async def show(auth_url: str) -> None:
            print(f"Open this URL to log in to {name}:\n  {auth_url}", flush=True)
            if not no_browser and _has_display():
                import webbrowser

                webbrowser.open(auth_url)

        tools = run(oauth_login(name, url, show=show, timeout_s=timeout_s, headers=headers))
        print(f"logged in to {name} ({url}): it lists {tools} tool{'s' if tools != 1 else ''}")

    @mcp.command(
        "launch",
        hidden=True,
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )
    def launch(ctx: typer.Context) -> None:
        """Internal: start an MCP server with a parent-death signal and a cleared environment."""
        from agen.runner.tools._pdeath import run

        run(list(ctx.args))

    @mcp.command(
        "bridge",
        hidden=True,
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )
    def bridge(ctx: typer.Context) -> None:
        """Internal (the single-file binary): the sandbox's bridge to the egress proxy."""
        from agen.sandbox.bridge import run

        run(list(ctx.args))

    app.add_typer(mcp)


def _http_server(server: str, bundle: str) -> tuple[str, str, dict[str, str]]:
    """(name, URL, headers without Authorization) of the server ``agen mcp login`` logs in to."""
    from urllib.parse import urlsplit

    from agen.bundle import load_bundle
    from agen.bundle.standard import HttpServer
    from agen.errors import InvalidError

    if server.startswith(("http://", "https://")):
        try:
            host = urlsplit(server).hostname
        except ValueError as e:
            host, why = None, str(e)
        else:
            why = "it names no host"
        if not host:
            raise InvalidError(f"{server} is not a URL agen can log in to ({why})")
        return host, server, {}
    bundle_obj = load_bundle(bundle)
    found = bundle_obj.mcp.mcp_servers.get(server)
    where = f"{bundle}/mcp.json mcpServers"
    if found is None:
        names = ", ".join(sorted(bundle_obj.mcp.mcp_servers)) or "none"
        raise InvalidError(
            f'{where} has no server "{server}" (it has: {names}); pass --bundle DIR or the server\'s URL'
        )
    if not isinstance(found, HttpServer):
        raise InvalidError(
            f"{where}.{server} is a stdio server; OAuth login is for remote (type http) servers"
        )
    if "${" in found.url:
        raise InvalidError(
            f"{where}.{server}.url is {found.url}; log in with the URL it stands for instead"
        )
    headers = {k: v for k, v in found.headers.items() if k.lower() != "authorization"}
    if any("${" in v for v in headers.values()):
        headers = {}  # secrets are a run's; the authorization flow does not need them
    return server, found.url, headers


def _has_display() -> bool:
    """Whether a browser can be shown here (macOS and Windows always; elsewhere a display)."""
    import os
    import sys

    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
