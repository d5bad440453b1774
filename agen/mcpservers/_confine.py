"""Keep every path a tool touches inside one root directory.

``resolve`` says where a path leads (symlinks followed, ``..`` applied) and refuses a path
that lands outside the root; glob and grep use it to choose what to list.

``open_file`` is what reads and writes go through. Checking a resolved path and then
opening it by name leaves a gap: a folder swapped for a symlink in between sends the
open outside. So ``open_file`` walks the path one component at a time from a file
descriptor on the root, opening each directory relative to the previous one with
``O_NOFOLLOW | O_DIRECTORY`` and the last component with ``O_NOFOLLOW``. A symlink met on
the way is read (``readlink`` relative to its directory's descriptor) and its target
walked the same way, so a link that stays inside the root still works, one that leads
out is refused, and nothing is ever opened by a name the kernel could re-resolve.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections import deque
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_LINKS = 40


class OutsideRootError(ValueError):
    """A path resolved to somewhere outside the workspace root."""


class Root:
    """The confinement root of a workspace server."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.path = Path(os.path.realpath(root))
        self._given = Path(os.path.abspath(root))

    def resolve(self, path: str) -> Path:
        """The real location of ``path`` (relative to the root, or absolute inside it)."""
        if not path or not path.strip():
            path = "."
        given = Path(path).expanduser()
        candidate = given if given.is_absolute() else self.path / given
        real = Path(os.path.realpath(candidate))
        if not self.contains(real):
            why = (
                "it is an absolute path"
                if given.is_absolute()
                else (
                    "it climbs out with '..'"
                    if ".." in given.parts
                    else "a symlink on the way leads out"
                )
            )
            raise self._outside(path, f"{why}, resolving to {real}")
        return real

    def contains(self, real: Path) -> bool:
        return real == self.path or self.path in real.parents

    def relative(self, real: Path) -> str:
        rel = os.path.relpath(real, self.path)
        return "." if rel == "." else rel.replace(os.sep, "/")

    def open_file(
        self, path: str, flags: int, *, mode: int = 0o644, make_dirs: bool = False
    ) -> tuple[int, str]:
        """Open ``path`` inside the root with no gap between check and use: (fd, path relative to root).

        Raises OutsideRootError, or the OSError of the failing step (FileNotFoundError,
        IsADirectoryError, NotADirectoryError, ...). ``make_dirs`` creates missing folders on
        the way (each with ``mkdir`` relative to its parent's descriptor).
        """
        todo: deque[str] = deque(self._parts(path))
        stack = [os.open(self.path, _DIR_FLAGS)]
        names: list[str] = []
        links = 0
        try:
            while True:
                while todo and todo[0] in ("", "."):
                    todo.popleft()
                if not todo:  # the path names a directory (the root, or one a symlink led to)
                    return os.open(".", flags | os.O_CLOEXEC, dir_fd=stack[-1]), "/".join(
                        names
                    ) or "."
                name = todo.popleft()
                if name == "..":
                    if len(stack) == 1:
                        raise self._outside(path, "it climbs out with '..'")
                    os.close(stack.pop())
                    names.pop()
                    continue
                top = stack[-1]
                try:
                    if todo:  # a directory on the way
                        fd = os.open(name, _DIR_FLAGS, dir_fd=top)
                        stack.append(fd)
                        names.append(name)
                        continue
                    return os.open(
                        name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=top
                    ), "/".join([*names, name])
                except FileNotFoundError:
                    if not (todo and make_dirs):
                        raise
                    with contextlib.suppress(
                        FileExistsError
                    ):  # made meanwhile, or a symlink appeared
                        os.mkdir(name, 0o777, dir_fd=top)
                    todo.appendleft(name)
                except OSError as e:
                    if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    kind = _lstat_mode(name, top)
                    changed = (
                        kind is None
                        or (bool(todo) and stat.S_ISDIR(kind))
                        or (not todo and e.errno == errno.ELOOP)
                    )
                    if not (changed or (kind is not None and stat.S_ISLNK(kind))):
                        raise
                    links += 1
                    if links > _MAX_LINKS:
                        raise OSError(
                            errno.ELOOP, f"{path}: too many symbolic links (or it keeps changing)"
                        ) from None
                    if kind is not None and stat.S_ISLNK(kind):
                        self._follow(path, name, top, todo, stack, names)
                    else:  # swapped meanwhile: look at it again
                        todo.appendleft(name)
        finally:
            for fd in stack:
                os.close(fd)

    def _follow(
        self, path: str, name: str, top: int, todo: deque[str], stack: list[int], names: list[str]
    ) -> None:
        """Put the target of symlink ``name`` (in directory ``top``) in front of what is left to walk."""
        try:
            target = os.readlink(name, dir_fd=top)
        except OSError:  # swapped back to a plain entry meanwhile: look at it again
            todo.appendleft(name)
            return
        if os.path.isabs(target):
            rel = self._inside(Path(target))
            if rel is None:
                raise self._outside(path, f"a symlink on the way leads out, to {target}")
            while len(stack) > 1:
                os.close(stack.pop())
            names.clear()
            parts = list(rel.parts)
        else:
            parts = list(Path(target).parts)
        todo.extendleft(reversed(parts))

    def _parts(self, path: str) -> list[str]:
        given = Path(path).expanduser() if path and path.strip() else Path(".")
        if not given.is_absolute():
            return list(given.parts)
        rel = self._inside(given)
        if rel is None:
            raise self._outside(path, "it is an absolute path")
        return list(rel.parts)

    def _inside(self, absolute: Path) -> Path | None:
        """``absolute`` relative to the root, read lexically (its ``..`` are walked later)."""
        for base in (self.path, self._given):
            try:
                return absolute.relative_to(base)
            except ValueError:
                continue
        return None

    def _outside(self, path: str, why: str) -> OutsideRootError:
        return OutsideRootError(
            f"path {path!r} is outside the workspace root {self.path} ({why}); "
            "use a path inside the root, e.g. relative to it"
        )


def _lstat_mode(name: str, dir_fd: int) -> int | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except OSError:
        return None
