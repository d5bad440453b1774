"""The workspace tools themselves, one function per tool, shared by the two ways agen serves them.

``agen mcp workspace`` (workspace.py) puts them behind an MCP server; the Runner's built-in
workspace toolset (agen.runner.tools.workspace) calls them in process. Both get the same
confinement and the same messages because both call these. A failure the model should read
raises ``WorkspaceToolError``; each caller turns it into its own tool error.

Every path a file tool takes is confined to the root (``..``, absolute paths and symlinks
that lead outside are refused); reads and writes open each path component relative to the
root's descriptor without following symlinks (_confine.py), so swapping a folder for a
symlink mid-call cannot send them outside. ``run`` starts in the root; it is confined only when
its caller wraps it in the OS sandbox (the built-in toolset does; ``agen mcp workspace`` runs
inside the sandbox as a whole when an agent starts it).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import BinaryIO

from agen.mcpservers._confine import OutsideRootError, Root
from agen.mcpservers._shell import MAX_TIMEOUT_S, SERVER_SCOPE, run_command

READ_LIMIT = 2000
LINE_CAP = 2000
GLOB_CAP = 1000
GREP_CAP = 500
_BINARY_SNIFF = 8192

TOOL_NAMES = ("read", "write", "edit", "glob", "grep", "run")
"""Every workspace tool, in the order they are listed."""
READ_ONLY = frozenset({"read", "glob", "grep"})
"""The tools that change nothing (write, edit and run go through the effect ledger)."""


class WorkspaceToolError(Exception):
    """A workspace tool call failed in a way the model should read and act on."""


def is_binary(data: bytes) -> bool:
    return b"\x00" in data[:_BINARY_SNIFF]


def _regular(f: BinaryIO, path: str) -> None:
    kind = os.fstat(f.fileno()).st_mode
    if not stat.S_ISREG(kind):
        what = "a directory" if stat.S_ISDIR(kind) else "not a regular file"
        raise WorkspaceToolError(f"{path} is {what}; give a file path")


def _replace_contents(f: BinaryIO, data: bytes) -> None:
    f.seek(0)
    f.truncate()
    f.write(data)


class WorkspaceTools:
    """read, write, edit, glob, grep and run over one root directory."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.box = Root(root)
        if not self.box.path.is_dir():
            raise FileNotFoundError(f"workspace root {root} is not a directory")

    @property
    def path(self) -> Path:
        return self.box.path

    def _where(self, path: str) -> Path:
        try:
            return self.box.resolve(path)
        except OutsideRootError as e:
            raise WorkspaceToolError(str(e)) from None

    def _opened(self, path: str, flags: int, *, make_dirs: bool = False) -> tuple[int, str]:
        """Open inside the root with no check-then-use gap (see _confine.Root.open_file)."""
        try:
            return self.box.open_file(path, flags, make_dirs=make_dirs)
        except OutsideRootError as e:
            raise WorkspaceToolError(str(e)) from None
        except FileNotFoundError:
            raise WorkspaceToolError(f"{path}: no such file in the workspace") from None
        except IsADirectoryError:
            raise WorkspaceToolError(f"{path} is a directory; give a file path") from None
        except NotADirectoryError:
            raise WorkspaceToolError(
                f"{path}: a part of the path is a file, not a directory"
            ) from None
        except OSError as e:
            raise WorkspaceToolError(f"{path}: {e.strerror or e}") from None

    def _read_file(self, path: str) -> tuple[bytes, str]:
        fd, rel = self._opened(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            _regular(f, path)
            return f.read(), rel

    def read(self, path: str, offset: int = 1, limit: int = READ_LIMIT) -> str:
        """A text file with line numbers, from line ``offset`` (1-based), ``limit`` lines."""
        data, _ = self._read_file(path)
        if is_binary(data):
            return f"{path} is a binary file ({len(data)} bytes); not shown"
        lines = data.decode("utf-8", "replace").splitlines()
        if not lines:
            return f"{path} is empty"
        start = max(offset, 1)
        if start > len(lines):
            return f"{path} has {len(lines)} lines; offset {offset} is past its end"
        chosen = lines[start - 1 : start - 1 + max(limit, 1)]
        out = [
            f"{n:6d}\t{ln[:LINE_CAP]}{' …' if len(ln) > LINE_CAP else ''}"
            for n, ln in enumerate(chosen, start)
        ]
        end = start - 1 + len(chosen)
        if end < len(lines):
            out.append(f"[lines {start}-{end} of {len(lines)}; read on with offset={end + 1}]")
        return "\n".join(out)

    def write(self, path: str, content: str) -> str:
        """Write a file (replacing it), creating parent directories as needed."""
        data = content.encode("utf-8")
        fd, rel = self._opened(path, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK, make_dirs=True)
        with os.fdopen(fd, "wb") as f:
            _regular(f, path)
            _replace_contents(f, data)
        return f"wrote {len(data)} bytes to {rel}"

    def edit(self, path: str, old_string: str, new_string: str, replace_all: bool = False) -> str:
        """Replace the one exact occurrence of ``old_string`` (every one with ``replace_all``)."""
        if not old_string:
            raise WorkspaceToolError(
                "old_string is empty; give the exact text to replace (use write to create a file)"
            )
        fd, rel = self._opened(path, os.O_RDWR | os.O_NONBLOCK)
        with os.fdopen(fd, "r+b") as f:
            _regular(f, path)
            text = f.read().decode("utf-8", "surrogateescape")
            count = text.count(old_string)
            if count == 0:
                raise WorkspaceToolError(
                    f"old_string was not found in {path}; nothing was changed. Read the file and "
                    "copy the text exactly (spaces and line breaks included)"
                )
            if count > 1 and not replace_all:
                raise WorkspaceToolError(
                    f"old_string occurs {count} times in {path}; nothing was changed. Include more "
                    "surrounding text so it is unique, or set replace_all to replace every one"
                )
            new = text.replace(old_string, new_string, -1 if replace_all else 1)
            _replace_contents(f, new.encode("utf-8", "surrogateescape"))
        return f"edited {rel}" + (f" ({count} replacements)" if count > 1 else "")

    def glob(self, pattern: str, path: str = ".") -> str:
        """Files matching a glob pattern such as ``**/*.py``, sorted, relative to the root."""
        base = self._where(path)
        box = self.box
        try:
            matches = list(base.glob(pattern))
        except (ValueError, NotImplementedError) as e:
            raise WorkspaceToolError(f"invalid glob pattern {pattern!r}: {e}") from None
        found = sorted(
            box.relative(Path(os.path.realpath(m)))
            for m in matches
            if m.is_file() and box.contains(Path(os.path.realpath(m)))
        )
        if not found:
            return f"no files match {pattern!r} under {box.relative(base)}"
        more = f"\n… {len(found) - GLOB_CAP} more not shown" if len(found) > GLOB_CAP else ""
        return "\n".join(found[:GLOB_CAP]) + more

    def grep(
        self,
        pattern: str,
        path: str = ".",
        include: str | None = None,
        context: int = 0,
        ignore_case: bool = False,
        limit: int = GREP_CAP,
    ) -> str:
        """``path:line:text`` for each line matching a regex, in files under ``path`` (only those
        matching the ``include`` glob), with ``context`` lines around; at most ``limit`` matches,
        then ``… N more matches`` saying how many were left out."""
        try:
            rx = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        except re.error as e:
            raise WorkspaceToolError(f"invalid regular expression {pattern!r}: {e}") from None
        cap = max(1, min(limit, GREP_CAP))
        base = self._where(path)
        box = self.box
        files = [base] if base.is_file() else sorted(base.rglob(include or "*"))
        out: list[str] = []
        hits = 0
        for f in files:
            real = Path(os.path.realpath(f))
            if not f.is_file() or not box.contains(real) or ".git" in f.parts:
                continue
            try:
                data, _ = self._read_file(box.relative(real))
            except WorkspaceToolError:
                continue  # changed or left the root since it was listed
            if is_binary(data):
                continue
            lines = data.decode("utf-8", "replace").splitlines()
            shown = -1
            for i, line in enumerate(lines):
                if not rx.search(line):
                    continue
                hits += 1
                if hits > cap:
                    continue  # counted for the "more" line, not shown
                lo = max(i - context, shown + 1)
                for j in range(lo, min(i + context + 1, len(lines))):
                    sep = ":" if j == i else "-"
                    out.append(f"{box.relative(real)}{sep}{j + 1}{sep}{lines[j][:LINE_CAP]}")
                    shown = j
        if not out:
            return f"no matches for {pattern!r}"
        if hits > cap:
            out.append(f"… {hits - cap} more matches not shown; narrow the pattern or path")
        return "\n".join(out)

    async def run(
        self,
        command: str,
        timeout_s: float,
        *,
        scope: str = SERVER_SCOPE,
        env: Mapping[str, str] | None = None,
        wrap: Callable[[list[str]], list[str]] | None = None,
        preexec_fn: Callable[[], None] | None = None,
    ) -> str:
        """Run ``command`` (``sh -c``) in the root; output capped, the exit code (or the timeout)
        said last. On timeout every process the command started is stopped."""
        if not command.strip():
            raise WorkspaceToolError("command is empty; give a shell command to run")
        if timeout_s <= 0 or timeout_s > MAX_TIMEOUT_S:
            raise WorkspaceToolError(
                f"timeout_seconds must be between 0 and {MAX_TIMEOUT_S:g} (got {timeout_s:g})"
            )
        result = await run_command(
            command,
            str(self.box.path),
            timeout_s,
            scope=scope,
            env=env,
            wrap=wrap,
            preexec_fn=preexec_fn,
        )
        return result.render(command, timeout_s)
