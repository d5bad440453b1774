"""The shell examples the docs mark runnable run, as written, in an empty folder and AGEN_HOME.

A block is marked by an HTML comment on the line before its ```sh fence:

    <!-- runnable -->                                  it must exit 0
    <!-- runnable expect="scale.max: must be" -->      and print (stdout or stderr) this text

Mark an example only when it is offline and takes seconds (no `agen up`, no network, no key).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MARK = re.compile(r'^<!-- runnable(?:\s+expect="(?P<expect>[^"]*)")?(?::[^>]*)?\s*-->$')


def runnable_blocks() -> list[tuple[str, str, str | None]]:
    """(file:line, script, expected text) of every marked block in README.md and docs/."""
    found: list[tuple[str, str, str | None]] = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            mark = MARK.match(line.strip())
            if mark is None:
                continue
            where = f"{path.relative_to(ROOT)}:{i + 1}"
            assert i + 1 < len(lines) and lines[i + 1].strip() == "```sh", (
                f"{where}: a runnable mark must sit right above a ```sh block"
            )
            end = next(j for j in range(i + 2, len(lines)) if lines[j].strip() == "```")
            found.append((where, "\n".join(lines[i + 2 : end]) + "\n", mark["expect"]))
    return found


BLOCKS = runnable_blocks()


def test_the_docs_mark_some_examples_runnable() -> None:
    """The mark is not lost in an edit: these files keep at least one runnable example each."""
    files = {where.split(":")[0] for where, _, _ in BLOCKS}
    assert {"docs/concepts.md", "docs/troubleshooting.md"} <= files, files


@pytest.mark.parametrize(("where", "script", "expect"), BLOCKS, ids=[b[0] for b in BLOCKS])
def test_a_runnable_docs_example_runs_as_written(
    tmp_path: Path, where: str, script: str, expect: str | None
) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AGEN_") and k not in ("OPENAI_API_KEY", "OPENROUTER_API_KEY")
    }
    env["AGEN_HOME"] = str(tmp_path / "home")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    work = tmp_path / "work"
    work.mkdir()
    r = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = r.stdout + r.stderr
    assert r.returncode == 0, f"{where} exited {r.returncode}:\n{script}\n{said}"
    assert "Traceback" not in said and "internal error" not in said, f"{where}:\n{said}"
    if expect is not None:
        assert expect in said, f"{where}: expected {expect!r} in:\n{said}"
