"""The built-in workspace MCP server: read, write, edit, glob, grep and run, inside one root.

Run as ``agen mcp workspace --root DIR``. Every path a file tool takes is confined to the
root (``..``, absolute paths and symlinks that lead outside are refused); reads and writes
open each path component relative to the root's descriptor without following symlinks
(_confine.py), so swapping a folder for a symlink mid-call cannot send them outside.
``run`` is not confined (see _shell.py). read/glob/grep are marked read-only;
write/edit/run are not.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any, BinaryIO

from agen.mcpservers._confine import OutsideRootError, Root
from agen.mcpservers._shell import (
    DEFAULT_TIMEOUT_S,
    MAX_TIMEOUT_S,
    run_command,
    stop_everything,
    stop_everything_on_exit,
)

READ_LIMIT = 2000
LINE_CAP = 2000
GLOB_CAP = 1000
GREP_CAP = 500
_BINARY_SNIFF = 8192


def is_binary(data: bytes) -> bool:
    return b"\x00" in data[:_BINARY_SNIFF]


def build_server(
    root: str, *, allow_run: bool = True, run_timeout_s: float = DEFAULT_TIMEOUT_S
) -> Any:
    """An MCPServer exposing the workspace tools over ``root``."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import ToolAnnotations

    box = Root(root)
    if not box.path.is_dir():
        raise FileNotFoundError(f"workspace root {root} is not a directory")
    server = MCPServer(
        "agen-workspace",
        instructions=(
            f"Files inside the workspace {box.path} (paths are relative to it; read/write/edit/glob/grep "
            "cannot leave it). run executes shell commands there as the user, without that confinement."
        ),
        log_level="WARNING",
    )
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    writes = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)

    def where(path: str) -> Path:
        try:
            return box.resolve(path)
        except OutsideRootError as e:
            raise ToolError(str(e)) from None

    def opened(path: str, flags: int, *, make_dirs: bool = False) -> tuple[int, str]:
        """Open inside the root with no check-then-use gap (see _confine.Root.open_file)."""
        try:
            return box.open_file(path, flags, make_dirs=make_dirs)
        except OutsideRootError as e:
            raise ToolError(str(e)) from None
        except FileNotFoundError:
            raise ToolError(f"{path}: no such file in the workspace") from None
        except IsADirectoryError:
            raise ToolError(f"{path} is a directory; give a file path") from None
        except NotADirectoryError:
            raise ToolError(f"{path}: a part of the path is a file, not a directory") from None
        except OSError as e:
            raise ToolError(f"{path}: {e.strerror or e}") from None

    def read_file(path: str) -> tuple[bytes, str]:
        fd, rel = opened(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            regular(f, path)
            return f.read(), rel

    @server.tool(annotations=read_only)
    def read(path: str, offset: int = 1, limit: int = READ_LIMIT) -> str:
        """Read a text file with line numbers. offset is the first line (1-based), limit the line count."""
        data, _ = read_file(path)
        if is_binary(data):
            return f"{path} is a binary file ({len(data)} bytes); not shown"
        lines = data.decode("utf-8", "replace").splitlines()
        start = max(offset, 1)
        chosen = lines[start - 1 : start - 1 + max(limit, 1)]
        out = [
            f"{n:6d}\t{ln[:LINE_CAP]}{' …' if len(ln) > LINE_CAP else ''}"
            for n, ln in enumerate(chosen, start)
        ]
        end = start - 1 + len(chosen)
        if end < len(lines):
            out.append(f"[lines {start}-{end} of {len(lines)}; read on with offset={end + 1}]")
        if not lines:
            return f"{path} is empty"
        return "\n".join(out)

    def regular(f: BinaryIO, path: str) -> None:
        kind = os.fstat(f.fileno()).st_mode
        if not stat.S_ISREG(kind):
            what = "a directory" if stat.S_ISDIR(kind) else "not a regular file"
            raise ToolError(f"{path} is {what}; give a file path")

    def replace_contents(f: BinaryIO, data: bytes) -> None:
        f.seek(0)
        f.truncate()
        f.write(data)

    @server.tool(annotations=writes)
    def write(path: str, content: str) -> str:
        """Write a file (replacing it), creating parent directories as needed."""
        data = content.encode("utf-8")
        fd, rel = opened(path, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK, make_dirs=True)
        with os.fdopen(fd, "wb") as f:
            regular(f, path)
            replace_contents(f, data)
        return f"wrote {len(data)} bytes to {rel}"

    @server.tool(annotations=writes)
    def edit(path: str, old_string: str, new_string: str) -> str:
        """Replace one exact, unique occurrence of old_string with new_string."""
        if not old_string:
            raise ToolError(
                "old_string is empty; give the exact text to replace (use write to create a file)"
            )
        fd, rel = opened(path, os.O_RDWR | os.O_NONBLOCK)
        with os.fdopen(fd, "r+b") as f:
            regular(f, path)
            text = f.read().decode("utf-8")
            count = text.count(old_string)
            if count == 0:
                raise ToolError(
                    f"old_string was not found in {path}; read the file and copy the text exactly"
                )
            if count > 1:
                raise ToolError(
                    f"old_string occurs {count} times in {path}; include more surrounding text so it is unique"
                )
            replace_contents(f, text.replace(old_string, new_string, 1).encode("utf-8"))
        return f"edited {rel}"

    @server.tool(annotations=read_only)
    def glob(pattern: str, path: str = ".") -> str:
        """Files matching a glob pattern such as **/*.py, sorted, relative to the workspace root."""
        base = where(path)
        found = sorted(
            box.relative(Path(os.path.realpath(m)))
            for m in base.glob(pattern)
            if m.is_file() and box.contains(Path(os.path.realpath(m)))
        )
        if not found:
            return f"no files match {pattern!r} under {box.relative(base)}"
        more = f"\n[{len(found) - GLOB_CAP} more not shown]" if len(found) > GLOB_CAP else ""
        return "\n".join(found[:GLOB_CAP]) + more

    @server.tool(annotations=read_only)
    def grep(
        pattern: str,
        path: str = ".",
        include: str | None = None,
        context: int = 0,
        ignore_case: bool = False,
    ) -> str:
        """Regex search in files (optionally only those matching the include glob), with context lines."""
        try:
            rx = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        except re.error as e:
            raise ToolError(f"invalid regular expression {pattern!r}: {e}") from None
        base = where(path)
        files = [base] if base.is_file() else sorted(base.rglob(include or "*"))
        out: list[str] = []
        hits = 0
        for f in files:
            real = Path(os.path.realpath(f))
            if not f.is_file() or not box.contains(real) or ".git" in f.parts:
                continue
            try:
                data, _ = read_file(box.relative(real))
            except ToolError:
                continue  # changed or left the root since it was listed
            if is_binary(data):
                continue
            lines = data.decode("utf-8", "replace").splitlines()
            shown = -1
            for i, line in enumerate(lines):
                if not rx.search(line):
                    continue
                hits += 1
                if hits > GREP_CAP:
                    out.append(f"[more than {GREP_CAP} matches; narrow the pattern or path]")
                    return "\n".join(out)
                lo = max(i - context, shown + 1)
                for j in range(lo, min(i + context + 1, len(lines))):
                    sep = ":" if j == i else "-"
                    out.append(f"{box.relative(real)}{sep}{j + 1}{sep}{lines[j][:LINE_CAP]}")
                    shown = j
        return "\n".join(out) if out else f"no matches for {pattern!r}"

    if allow_run:

        @server.tool(annotations=ToolAnnotations(read_only_hint=False, open_world_hint=True))
        async def run(command: str, timeout_seconds: float | None = None) -> str:
            """Run a shell command (sh -c) with the workspace root as working directory; returns when the
            shell exits. Not confined to the root. Default timeout as configured, 10 minutes at most;
            on timeout every process the command started is stopped."""
            limit = run_timeout_s if timeout_seconds is None else timeout_seconds
            if limit <= 0 or limit > MAX_TIMEOUT_S:
                raise ToolError(
                    f"timeout_seconds must be between 0 and {MAX_TIMEOUT_S:g} (got {limit:g})"
                )
            result = await run_command(command, str(box.path), limit)
            return result.render(command, limit)

    return server


def serve(root: str, *, allow_run: bool = True, run_timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
    """Serve over stdio until the client goes away; then stop every process a ``run`` started."""
    server = build_server(root, allow_run=allow_run, run_timeout_s=run_timeout_s)
    stop_everything_on_exit()
    try:
        server.run()
    finally:
        stop_everything()
