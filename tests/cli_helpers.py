"""Running the real CLI entry point in the test process."""

from __future__ import annotations

import pytest

from agen.cli import main


def run_agen(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run `agen argv...` in-process; (exit code, stdout, stderr)."""
    code = 0
    try:
        main(list(argv))
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err
