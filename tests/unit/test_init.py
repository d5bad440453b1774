"""`agen init`: writes a template bundle users can run and deploy straight away."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agen.bundle.loader import validate_bundle
from agen.bundle.templates import TEMPLATE_ORDER
from tests.cli_helpers import run_agen

AGEN = Path(sys.executable).parent / "agen"


def _json(path: Path) -> dict[str, object]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_init_writes_a_valid_bundle_named_after_its_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "mybot"
    code, out, err = run_agen(capsys, "init", str(dest), "--template", "coder")
    assert code == 0, err
    assert out.strip() == str(dest)
    bundle, problems, _ = validate_bundle(dest)
    assert problems == [] and bundle is not None
    assert _json(dest / "plugin.json")["name"] == "mybot"
    assert (dest / "skills" / "testing" / "SKILL.md").is_file()
    assert "skills/testing/SKILL.md" in err
    assert f'next: agen run {dest} "Hello"' in err
    # 2-space indent, key order kept
    text = (dest / "plugin.json").read_text(encoding="utf-8")
    assert text.startswith('{\n  "name": "mybot",\n  "version": "0.1.0",')


def test_init_defaults_to_hello_in_a_folder_named_after_the_template(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_agen(capsys, "init")
    assert code == 0
    assert out.strip() == "hello"
    assert _json(tmp_path / "hello" / "plugin.json")["name"] == "hello"
    assert _json(tmp_path / "hello" / "x-agen" / "harness.json")["provider"] == "fake"


def test_example_is_the_same_as_template(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_agen(capsys, "init", str(tmp_path / "sql-bot"), "--example", "data-analyst")
    assert code == 0, err
    assert (tmp_path / "sql-bot" / "x-agen" / "secrets.json").is_file()
    assert "secret AGEN_SQL_DSN: export AGEN_SQL_DSN" in err


def test_init_keeps_the_template_name_when_the_directory_is_not_a_bundle_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "My Bot"
    code, _, err = run_agen(capsys, "init", str(dest), "--template", "writer")
    assert code == 0
    assert _json(dest / "plugin.json")["name"] == "writer"
    assert "not a valid bundle name" in err


def test_init_refuses_a_non_empty_directory_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "busy"
    dest.mkdir()
    (dest / "keep.txt").write_text("mine", encoding="utf-8")
    code, out, err = run_agen(capsys, "init", str(dest))
    assert code == 2
    assert out == ""
    assert f"{dest} is not empty" in err and "choose a new or empty directory" in err
    assert sorted(p.name for p in dest.iterdir()) == ["keep.txt"]


def test_init_into_an_existing_empty_directory_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "empty"
    dest.mkdir()
    code, _, _ = run_agen(capsys, "init", str(dest), "--template", "support")
    assert code == 0
    assert _json(dest / "plugin.json")["name"] == "empty"


def test_unknown_template_exits_2_listing_the_available_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_agen(capsys, "init", str(tmp_path / "x"), "--template", "nope")
    assert code == 2
    assert "unknown template 'nope'" in err and "incident-responder" in err
    assert not (tmp_path / "x").exists()


def test_list_prints_every_template_with_its_description(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_agen(capsys, "init", "--list")
    assert code == 0
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == list(TEMPLATE_ORDER)
    assert "read-only SQL" in lines[-1]


def test_list_json_gives_names_and_descriptions(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_agen(capsys, "init", "--list", "--json")
    assert code == 0
    rows = json.loads(out)
    assert [r["name"] for r in rows] == list(TEMPLATE_ORDER)
    assert all(r["description"] for r in rows)


def test_model_fallback_and_tiers_land_in_harness_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "routed"
    code, _, err = run_agen(
        capsys,
        "init",
        str(dest),
        "--model",
        "openrouter/auto",
        "--fallback",
        "openai/gpt-4o, google/gemini-2.0-flash",
        "--tier",
        "medium",
        "--max-tier",
        "xhigh",
    )
    assert code == 0, err
    harness = _json(dest / "x-agen" / "harness.json")
    assert harness == {
        "provider": "openrouter",
        "model": "openrouter/auto",
        "maxOutputTokens": 1024,
        "fallbackModels": ["openai/gpt-4o", "google/gemini-2.0-flash"],
        "router": {"tier": "medium", "maxTier": "xhigh"},
    }
    assert "model: openrouter/auto (provider openrouter)" in err
    bundle, problems, _ = validate_bundle(dest)
    assert problems == [] and bundle is not None


def test_model_without_a_slash_keeps_the_auto_provider(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "local"
    code, _, err = run_agen(capsys, "init", str(dest), "--model", "llama3.2", "--fallback", "none")
    assert code == 0, err
    harness = _json(dest / "x-agen" / "harness.json")
    assert harness["provider"] == "auto" and harness["model"] == "llama3.2"
    assert "fake" not in harness and "fallbackModels" not in harness


def test_bad_tier_exits_2_before_writing_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_agen(capsys, "init", str(tmp_path / "t"), "--tier", "huge")
    assert code == 2
    assert "--tier: 'huge' is not a tier" in err
    assert not (tmp_path / "t").exists()


def test_json_output_describes_the_new_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_agen(capsys, "init", str(tmp_path / "j"), "--template", "editor", "--json")
    assert code == 0
    result = json.loads(out)
    assert result["name"] == "j" and result["template"] == "editor"
    assert "x-agen/agent.md" in result["files"]


@pytest.mark.skipif(
    not AGEN.exists(), reason="agen console script not installed next to this python"
)
def test_the_installed_agen_command_initialises_a_bundle(tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(AGEN), "init", "bot", "--template", "researcher"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "bot"
    assert _json(tmp_path / "bot" / "plugin.json")["name"] == "bot"
