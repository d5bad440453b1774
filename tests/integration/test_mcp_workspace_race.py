"""A folder swapped for a symlink to outside, over and over, never sends a read or write outside."""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agen.mcpservers._confine import OutsideRootError, Root
from tests.integration.mcp_helpers import ctx, stdio_toolset

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="renameat2 swap is Linux-only"
)

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
SECRET = "OUTSIDE SECRET"


def exchange(a: Path, b: Path) -> None:
    """Atomically swap two directory entries (renameat2 RENAME_EXCHANGE): never a moment without ``a``."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(_AT_FDCWD, bytes(a), _AT_FDCWD, bytes(b), _RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


@pytest.fixture
def swapping(tmp_path: Path) -> Iterator[tuple[Path, Path, list[int]]]:
    """root/d flips between a real folder and a symlink to outside until the test ends."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    (root / "d" / "secret.txt").write_text("inside")
    (outside / "secret.txt").write_text(SECRET)
    (root / "swap").symlink_to(outside)
    stop = threading.Event()
    swaps = [0]

    def flip() -> None:
        while not stop.is_set():
            exchange(root / "d", root / "swap")
            swaps[0] += 1

    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    yield root, outside, swaps
    stop.set()
    thread.join()


def nothing_landed_outside(outside: Path) -> None:
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == SECRET


def test_open_file_never_opens_outside_while_a_folder_flips_to_a_symlink(
    swapping: tuple[Path, Path, list[int]],
) -> None:
    root, outside, swaps = swapping
    box = Root(root)
    inside_reads = 0
    for i in range(3000):
        for path, flags in (
            ("d/secret.txt", os.O_RDONLY),
            (f"d/w{i % 7}.txt", os.O_WRONLY | os.O_CREAT),
        ):
            try:
                fd, _ = box.open_file(path, flags)
            except (OutsideRootError, OSError):  # refused, or changed meanwhile: fine
                continue
            with os.fdopen(fd, "r+b" if flags & os.O_WRONLY else "rb") as f:
                if flags & os.O_WRONLY:
                    f.write(b"x")
                else:
                    assert f.read() == b"inside"
                    inside_reads += 1
    assert swaps[0] > 0 and inside_reads > 0
    nothing_landed_outside(outside)


async def test_workspace_server_never_writes_or_reads_outside_while_a_folder_flips_to_a_symlink(
    swapping: tuple[Path, Path, list[int]],
) -> None:
    root, outside, swaps = swapping
    ts = stdio_toolset(
        ["mcp", "workspace", "--root", str(root), "--no-run"], command="agen", name="ws"
    )
    tools = {t.name: t for t in await ts.start()}
    written = read_inside = 0
    try:
        for i in range(300):
            wrote = await tools["ws.write"].call(
                {"path": "d/new.txt", "content": f"write {i}"}, ctx()
            )
            written += not wrote.is_error
            edited = await tools["ws.edit"].call(
                {"path": "d/secret.txt", "old_string": "inside", "new_string": "inside"}, ctx()
            )
            assert SECRET not in edited.content
            got = await tools["ws.read"].call({"path": "d/secret.txt"}, ctx())
            assert SECRET not in got.content
            read_inside += "inside" in got.content  # an error (refused, changed meanwhile) is fine
    finally:
        await ts.close()
    assert swaps[0] > 0 and written > 0 and read_inside > 0
    nothing_landed_outside(outside)


def test_open_file_still_follows_symlinks_that_stay_inside_and_walks_dotdot_inside(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    (root / "real" / "deep").mkdir(parents=True)
    (root / "real" / "deep" / "a.txt").write_text("A")
    (root / "rel").symlink_to("real/deep")
    (root / "abs").symlink_to(root / "real")
    (root / "file-link.txt").symlink_to("real/deep/a.txt")
    box = Root(root)
    for path in (
        "rel/a.txt",
        "abs/deep/a.txt",
        "file-link.txt",
        "real/deep/../deep/a.txt",
        str(root / "rel/a.txt"),
    ):
        fd, rel = box.open_file(path, os.O_RDONLY)
        with os.fdopen(fd, "rb") as f:
            assert f.read() == b"A", path
    fd, rel = box.open_file("abs/new/dir/b.txt", os.O_WRONLY | os.O_CREAT, make_dirs=True)
    os.close(fd)
    assert (root / "real" / "new" / "dir" / "b.txt").is_file() and rel == "real/new/dir/b.txt"
    for path in ("real/../../x", "/etc/passwd", "rel/../../../x"):
        with pytest.raises(OutsideRootError):
            box.open_file(path, os.O_RDONLY)
