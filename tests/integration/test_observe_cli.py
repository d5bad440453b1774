"""`agen runs`, `agen transcript`, `agen trace`, `agen query` against a real Hub over HTTP."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner

from agen.cli import app
from agen.errors import AgenError
from tests.observe_helpers import MULTI_TOOL_SCRIPT, Embedded, embedded_hub, http_hub


async def agen(url: str, token: str, *args: str) -> tuple[int, str, str]:
    runner = CliRunner()
    res = await asyncio.to_thread(
        runner.invoke, app, [*args, "--hub", url, "--token", token], env={"COLUMNS": "140"}
    )
    if isinstance(res.exception, AgenError):  # what agen.cli.main() prints and exits with
        return res.exception.exit_code, res.stdout, f"error: {res.exception}"
    return res.exit_code, res.stdout, res.stderr


async def _scribe(e: Embedded) -> str:
    await e.deploy("scribe", script=MULTI_TOOL_SCRIPT)
    task = await e.run("scribe", "summarise the input", labels={"team": "docs"})
    assert task.state == "succeeded"
    return task.id


async def test_runs_transcript_trace_and_query_print_text_and_json(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, token):
        task_id = await _scribe(e)

        code, out, _ = await agen(url, token, "runs", "--label", "team=docs")
        assert code == 0 and "scribe" in out and "succeeded" in out and task_id in out
        code, out, _ = await agen(url, token, "runs", "--json", "--roots", "--since", "1h")
        [run] = json.loads(out)["runs"]
        assert run["task_id"] == task_id and run["tree_runs"] == 1
        code, out, _ = await agen(url, token, "runs", "--status", "failed")
        assert code == 0 and "no runs match" in out
        code, _, err = await agen(url, token, "runs", "--status", "nope")
        assert code == 2 and "--status" in err

        code, out, _ = await agen(url, token, "transcript", task_id, "--system")
        assert code == 0
        assert "── user ──" in out and "summarise the input" in out and "── system ──" in out
        assert '→ save_artifact({"content": "# Findings\\n- ok\\n", "name": "findings.md"})' in out
        assert "── tool result · save_artifact ──" in out and "saved artifact sha256:" in out
        assert "model fake · tokens 120 in / 24 out · $0.0012" in out
        code, out, _ = await agen(url, token, "transcript", task_id, "--json")
        assert [m["role"] for m in json.loads(out)["messages"]][:2] == ["user", "assistant"]

        code, out, _ = await agen(url, token, "trace", task_id)
        assert (
            code == 0 and "scribe run" in out and "chat fake" in out and "tool save_artifact" in out
        )
        assert "█" in out and "120/24 tok" in out and "$0.0012" in out
        code, out, _ = await agen(url, token, "trace", task_id, "--json")
        assert len(json.loads(out)["spans"]) == 7

        code, out, _ = await agen(url, token, "query", task_id)
        assert code == 0 and "succeeded" in out and "the findings are saved" in out
        code, out, _ = await agen(url, token, "query", task_id, "--json")
        assert json.loads(out)["task"]["id"] == task_id

        code, _, err = await agen(url, token, "transcript", "01NOPE")
        assert code == 4 and "agen runs" in err
