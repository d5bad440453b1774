"""The generated reference docs match the code: a changed command help or bundle field needs a regenerate."""

from __future__ import annotations

import difflib
from pathlib import Path

from scripts import gen_docs


def _stale_message(path: Path, expected: str) -> str:
    current = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    diff = "\n".join(
        list(
            difflib.unified_diff(
                current, expected.splitlines(), "committed", "generated", lineterm=""
            )
        )[:40]
    )
    return (
        f"{path.relative_to(gen_docs.ROOT)} is stale: regenerate it with `scripts/gen-docs` "
        f"(or `python -m scripts.gen_docs`) and commit the result.\n{diff}"
    )


def test_cli_reference_matches_every_commands_help() -> None:
    path = gen_docs.DOCS / "cli-reference.md"
    expected = gen_docs.cli_reference()
    assert path.is_file() and path.read_text(encoding="utf-8") == expected, _stale_message(
        path, expected
    )


def test_cli_reference_lists_every_visible_command_and_subcommand() -> None:
    text = gen_docs.cli_reference()
    for name in ("agen run", "agen up", "agen approve", "agen mcp workspace", "agen token create"):
        assert f"\n## {name}\n" in text
    assert "agen mcp launch" not in text  # hidden internals stay out
    assert "\x1b[" not in text  # no colour codes


def test_bundle_reference_matches_the_json_schemas() -> None:
    path = gen_docs.DOCS / "bundle-reference.md"
    expected = gen_docs.bundle_reference()
    assert path.is_file() and path.read_text(encoding="utf-8") == expected, _stale_message(
        path, expected
    )


def test_troubleshooting_tables_match_error_and_exit_codes() -> None:
    path = gen_docs.DOCS / "troubleshooting.md"
    expected = gen_docs.troubleshooting(path.read_text(encoding="utf-8"))
    assert path.read_text(encoding="utf-8") == expected, _stale_message(path, expected)
    assert "no advice yet" not in expected, (
        "an error or exit code has no advice: add it in scripts/gen_docs.py"
    )


def test_not_supported_lists_every_refusal_in_the_code() -> None:
    """docs/not-supported.md is generated from the code: a refusal added or lifted needs a regenerate."""
    path = gen_docs.DOCS / "not-supported.md"
    expected = gen_docs.not_supported()
    assert path.is_file() and path.read_text(encoding="utf-8") == expected, _stale_message(
        path, expected
    )
    assert "None today: every bundle field" in expected  # REFUSED is empty today
    assert "not supported yet: tasks/list" in expected  # a message in the source
    assert "not supported yet: A2A … parts" in expected  # an f-string, placeholders elided
