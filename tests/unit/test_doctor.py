"""`agen doctor`: each line is a real check of this machine (PATH, environment, AGEN_HOME)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cli_helpers import run_agen
from tests.sandbox_helpers import bwrap_or_skip


def report(capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, str]]:
    code, out, _ = run_agen(capsys, "doctor", "--json")
    assert code == 0
    return {c["name"]: c for c in json.loads(out)["checks"]}


def test_doctor_reports_the_sandbox_it_could_start(capsys: pytest.CaptureFixture[str]) -> None:
    bwrap = bwrap_or_skip()
    checks = report(capsys)
    assert checks["bubblewrap"]["status"] == "ok" and bwrap in checks["bubblewrap"]["detail"]
    assert checks["sandbox"] == {
        "name": "sandbox",
        "status": "ok",
        "detail": f"{bwrap} starts sandboxes (user namespaces work)",
    }


def test_doctor_says_how_to_install_bubblewrap_when_it_is_not_on_path(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    checks = report(capsys)
    assert checks["bubblewrap"]["status"] == "missing"
    assert "sudo apt-get install bubblewrap" in checks["bubblewrap"]["detail"]
    assert "sandbox" not in checks


def test_doctor_names_provider_keys_without_their_values(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-doctor-must-not-print-this")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    code, out, err = run_agen(capsys, "doctor")
    assert code == 0 and "sk-doctor-must-not-print-this" not in out + err
    checks = report(capsys)
    assert checks["openai key"] == {
        "name": "openai key",
        "status": "ok",
        "detail": "OPENAI_API_KEY is set",
    }
    assert checks["anthropic key"]["status"] == "missing"


def test_doctor_warns_when_other_users_can_read_agen_home(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("AGEN_HOME", str(home))
    assert report(capsys)["AGEN_HOME"]["status"] == "ok"
    (home / "agen.db").touch(mode=0o644)
    os.chmod(home, 0o755)
    os.chmod(home / "agen.db", 0o644)
    check = report(capsys)["AGEN_HOME"]
    assert check["status"] == "warn"
    assert f"{home} (0755)" in check["detail"] and "chmod 700" in check["detail"]
