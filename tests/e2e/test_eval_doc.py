"""docs/eval.md, followed as a new user would (tests/e2e/doc_walk.py): a real `agen up`, a run
rated -1, the dataset built from it, the eval and the refused deploy, the fix, the deploy that
says what it fixed, history and compare. Every command prints what its comment says and exits
as it says; the task and eval ids the page shows as ``01JD…`` are the ones printed before."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.doc_walk import ROOT, Shell, doc_blocks
from tests.ports import free_port

DOC = ROOT / "docs" / "eval.md"
ULID = r"(01[0-9A-HJKMNP-TV-Z]{24})"
LEARNS = {"01JD8ZQ5K3…": rf"task {ULID} succeeded", "01JD8ZT1QX…": rf"recorded eval {ULID} of "}


def test_the_page_marks_its_walk_and_says_what_each_command_prints() -> None:
    [steps] = doc_blocks(DOC).values()
    assert sum(s.prints is not None for s in steps) >= 15
    assert {s.exits for s in steps} == {0, 1, 2}


def test_eval_doc_walk_from_a_bad_run_to_a_gate_runs_as_written(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    shell = Shell(tmp_path, free_port(), learns=dict(LEARNS))
    try:
        for step in doc_blocks(DOC)["bad run to gate"]:
            shell.run(step, cwd=work)
    finally:
        shell.stop()
    [scenario] = (work / "shop" / "x-agen" / "evals").glob("*.json")
    assert "greeted instead of answering" in scenario.read_text()
