"""docs/scale-out.md, followed step by step as a new user would (tests/e2e/doc_walk.py): every
``sh`` block marked ``<!-- doc-test: NAME -->`` runs as written (in a fresh HOME, on a free port),
in order, and each command's ``# prints X`` comment must show in its output, so the page and the
product cannot drift.

``agen hub serve`` and ``agen nest run`` keep running (another terminal): they start in the
background and their ``# prints`` must appear in their output. Placeholders the page shows as
``agen_…`` and ``sha256:9f2c…`` become the join token and the CA hash printed before them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.doc_walk import ROOT, Shell, doc_blocks
from tests.ports import free_port

DOC = ROOT / "docs" / "scale-out.md"
LEARNS = {"agen_…": r"\bagen_[A-Za-z0-9_-]{16,}", "sha256:9f2c…": r"sha256:[0-9a-f]{64}"}


def test_the_page_has_its_walkthroughs_marked() -> None:
    blocks = doc_blocks(DOC)
    assert set(blocks) == {"one machine", "over TLS"}
    assert all(any(s.prints for s in steps) for steps in blocks.values())


@pytest.mark.parametrize("name", ["one machine", "over TLS"])
def test_scale_out_doc_walkthrough_runs_as_written(name: str, tmp_path: Path) -> None:
    shell = Shell(tmp_path, free_port(), learns=dict(LEARNS))
    try:
        for step in doc_blocks(DOC)[name]:
            shell.run(step)
    finally:
        shell.stop()
