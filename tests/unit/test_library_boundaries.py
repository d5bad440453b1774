"""agen keeps to libraries' public APIs and leaves the process it is embedded in as it found it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import agen
from agen.store import dumps
from scripts.private_imports import violations


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_importing_the_sdk_and_writing_a_store_leaves_the_programs_sqlite3_adapters_alone(
    tmp_path: Path,
) -> None:
    code = f"""
import asyncio, sqlite3
before = dict(sqlite3.adapters)
import agen.sdk
from agen.store import SQLiteStore

async def main():
    store = await SQLiteStore.open({str(tmp_path / "agen.db")!r})
    try:
        await store.write(lambda tx: tx.event("default", "test.boundary", data={{"ok": True}}))
    finally:
        await store.close()

asyncio.run(main())
print(dict(sqlite3.adapters) == before)
"""
    assert _python(code) == "True"


def test_agens_cli_imports_httpx_without_its_command_line_and_leaves_click_importable() -> None:
    code = """
import sys
import agen.cli
import httpx
loaded = [m for m in ("click", "rich.progress", "pygments") if m in sys.modules]
import click, uvicorn  # uvicorn's own command line needs click
print(loaded, click.__name__, callable(httpx.main))
"""
    assert _python(code) == "[] click True"


def test_the_private_import_check_flags_other_distributions_private_modules_only(
    tmp_path: Path,
) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from __future__ import annotations\n"
        "import textual._files\n"
        "from mcp.shared._httpx_utils import create_mcp_http_client\n"
        "from textual.widgets import _data_table\n"
        "from agen.cli._common import group\n"
        "from textual.widgets.data_table import RowKey\n"
        "from . import _x\n"
    )
    found = list(violations(source))
    assert [line.split(":")[1] for line in found] == ["2", "3", "4"], found
    assert "textual._files" in found[0] and "'_httpx_utils'" in found[1]


def test_no_module_of_agen_imports_another_distributions_private_module() -> None:
    """With no exception left (the TUI's table was the last: it is on Textual's public API now)."""
    root = Path(agen.__file__).parent
    assert [v for f in sorted(root.rglob("*.py")) for v in violations(f)] == []


def test_the_store_writes_the_json_the_standard_library_writes_for_agens_values() -> None:
    values = [
        {},
        {"b": 1, "a": [1, 2.5, None, True, False, "é 😀 \u2028 \x00"]},
        {"nested": {"deep": [{"x": -0.0, "y": 1e20, "z": 123456789.123}]}},
        {"n": float("nan"), "i": float("inf")},
        ["plain", 2**70],
    ]
    for value in values:
        text = dumps(value)
        assert text == json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        assert json.dumps(json.loads(text)) == json.dumps(value)
