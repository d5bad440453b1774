"""`agen memory ls|show|set|history|rollback` and `agen artifacts ls|get` against a real Hub over HTTP."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner

from agen.cli import app
from agen.errors import AgenError
from tests.integration.test_memory_artifacts_api import CONFIG, SAVE_AND_REMEMBER
from tests.observe_helpers import embedded_hub, http_hub


async def agen(url: str, token: str, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    runner = CliRunner()
    res = await asyncio.to_thread(
        runner.invoke,
        app,
        [*args, "--hub", url, "--token", token],
        input=stdin,
        env={"COLUMNS": "160"},
    )
    if isinstance(res.exception, AgenError):  # what agen.cli.main() prints and exits with
        return res.exception.exit_code, res.stdout, f"error: {res.exception}"
    return res.exit_code, res.stdout, res.stderr


async def test_memory_set_show_history_and_rollback_with_compare_and_set(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, token):
        code, out, _ = await agen(
            url,
            token,
            "memory",
            "set",
            "rules",
            "--title",
            "House rules",
            "--description",
            "how we behave",
            "--limit-chars",
            "100",
            stdin="be kind\n",
        )
        assert (code, out) == (0, "rules: version 1 (8 characters)\n")
        code, out, _ = await agen(
            url, token, "memory", "set", "rules", "--expected-version", "1", stdin="be fast\n"
        )
        assert code == 0 and "version 2" in out
        # a second writer who read version 1 is refused, told the current version (exit 5: conflict)
        code, _, err = await agen(
            url, token, "memory", "set", "rules", "--expected-version", "1", stdin="be late\n"
        )
        assert code == 5 and "memory block rules is at version 2, not 1" in err

        code, out, _ = await agen(url, token, "memory", "ls")
        assert code == 0 and "rules" in out and "House rules" in out and "8/100" in out
        code, out, _ = await agen(url, token, "memory", "history", "rules", "--json")
        hist = json.loads(out)
        assert [v["value"] for v in hist["versions"]] == ["be fast\n", "be kind\n"]
        assert {v["author_kind"] for v in hist["versions"]} == {"person"}

        code, out, _ = await agen(
            url, token, "memory", "rollback", "rules", "--to", "1", "--expected-version", "2"
        )
        assert (code, out) == (0, "rules: version 3 (= version 1)\n")
        code, out, err = await agen(url, token, "memory", "show", "rules")
        assert code == 0 and out == "be kind\n"
        code, out, _ = await agen(url, token, "memory", "show", "rules", "--version", "2")
        assert out == "be fast\n"
        code, out, _ = await agen(url, token, "memory", "history", "rules")
        assert code == 0 and "rollback to version 1" in out
        code, _, err = await agen(url, token, "memory", "show", "nope")
        assert code == 4 and "no memory block nope" in err
        code, _, err = await agen(url, token, "memory", "rollback", "rules", "--to", "99999999999")
        assert code == 2 and "--to 99999999999: must be" in err


async def test_artifacts_ls_and_get_round_trip_from_a_run(tmp_path: Path) -> None:
    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, token):
        await e.deploy("scribe", script=SAVE_AND_REMEMBER, config=CONFIG)
        task = await e.run("scribe", "write the report")
        assert task.state == "succeeded"

        code, out, _ = await agen(url, token, "artifacts", "ls", task.id, "--json")
        [art] = json.loads(out)["artifacts"]
        assert code == 0 and art["name"] == "report.md" and art["task_id"] == task.id
        code, out, _ = await agen(url, token, "artifacts", "ls")
        assert code == 0 and art["id"] in out and "report.md" in out
        code, out, _ = await agen(url, token, "artifacts", "get", art["id"])
        assert (code, out) == (0, "# Report\nall good\n")
        target = tmp_path / "report.md"
        code, _, _ = await agen(url, token, "artifacts", "get", art["id"][:20], "-o", str(target))
        assert code == 0 and target.read_text() == "# Report\nall good\n"
        code, _, err = await agen(url, token, "artifacts", "get", "sha256:0000")
        assert code == 4 and "no artifact sha256:0000" in err
        code, _, err = await agen(url, token, "artifacts", "ls", "no-such-task")
        assert code == 4
