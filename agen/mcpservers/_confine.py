"""Keep every path a tool touches inside one root directory.

A path is resolved the way the OS would (symlinks followed, ``..`` applied) and must
land inside the root; anything else is refused with an error naming the path and root.
"""

from __future__ import annotations

import os
from pathlib import Path


class OutsideRootError(ValueError):
    """A path resolved to somewhere outside the workspace root."""


class Root:
    """The confinement root of a workspace server."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.path = Path(os.path.realpath(root))

    def resolve(self, path: str) -> Path:
        """The real location of ``path`` (relative to the root, or absolute inside it)."""
        if not path or not path.strip():
            path = "."
        given = Path(path).expanduser()
        candidate = given if given.is_absolute() else self.path / given
        real = Path(os.path.realpath(candidate))
        if not self.contains(real):
            why = "it is an absolute path" if given.is_absolute() else (
                "it climbs out with '..'" if ".." in given.parts else "a symlink on the way leads out"
            )
            raise OutsideRootError(
                f"path {path!r} is outside the workspace root {self.path} ({why}, resolving to {real}); "
                "use a path inside the root, e.g. relative to it"
            )
        return real

    def contains(self, real: Path) -> bool:
        return real == self.path or self.path in real.parents

    def relative(self, real: Path) -> str:
        rel = os.path.relpath(real, self.path)
        return "." if rel == "." else rel.replace(os.sep, "/")
