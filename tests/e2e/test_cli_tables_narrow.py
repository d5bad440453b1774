"""Every list command at 80 columns in a real terminal (a pty): IDs and names are never cut, so an ID
copied from the screen works in the next command (`agen query`, `agen transcript`, `agen deny`)."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
from pathlib import Path

from tests.e2e.harness import AGEN, Up, wait_until
from tests.e2e.test_approval_durability import gated, pending

ULID = re.compile(r"(?<![0-9A-Z])[0-9A-HJKMNP-TV-Z]{26}(?![0-9A-Za-z…])")
CUT_ID = re.compile(r"[0-9A-HJKMNP-TV-Z]{6,25}…")


def on_terminal(up: Up, *args: str, columns: int = 80) -> str:
    """``agen ARGS`` with its stdout on a pty of ``columns`` columns, as a person's terminal."""
    main, child = pty.openpty()
    env = {**up.env, "COLUMNS": str(columns), "LINES": "24", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([AGEN, *args], stdout=child, stderr=subprocess.PIPE, env=env)
    os.close(child)
    out = b""
    while True:
        ready, _, _ = select.select([main], [], [], 60)
        if not ready:
            proc.kill()
            raise AssertionError(f"agen {' '.join(args)} printed nothing for 60 s")
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child closed its side
            break
        if not chunk:
            break
        out += chunk
    os.close(main)
    assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.decode()).replace("\r\n", "\n")
    return text


TABLES: list[tuple[tuple[str, ...], tuple[str, ...]]] = [
    (("tasks",), ("query",)),  # (the table, the command an ID from it is pasted into)
    (("runs",), ("transcript",)),
    (("runs", "--roots"), ("transcript",)),
    (("approvals", "--all"), ("deny",)),
    (("ps", "--all"), ()),
]


def test_at_80_columns_every_id_is_whole_and_pasteable(tmp_path: Path) -> None:
    up = Up(tmp_path / "home").start()
    try:
        bundle = gated(tmp_path / "gated", tmp_path / "effects.log")
        up.agen("deploy", str(bundle))
        task = up.http("SubmitTask", {"deployment": "gated", "input": "x" * 300}).json()
        task_id = task["task"]["id"]
        wait_until(lambda: pending(up).get(task_id), 60, "the approval")

        for command, paste in [*TABLES, (("tree", task_id), ("query",))]:
            text = on_terminal(up, *command)
            lines = [line for line in text.splitlines() if line.strip()]
            assert len(lines) >= 2, (command, text)
            assert all(len(line) <= 80 for line in lines), (command, text)
            assert not CUT_ID.search(text), (command, text)  # no ID shortened with an ellipsis
            ids = ULID.findall(text)
            assert ids, (command, text)
            if paste:
                pasted = up.agen(*paste, ids[0], check=False)
                assert pasted.returncode == 0, (command, text, pasted.stdout, pasted.stderr)
    finally:
        up.stop()
