"""`agen deploy <dir> --validate`: what a user sees for valid, invalid and --json checks."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from agen.bundle import digest_dir
from tests.cli_helpers import run_agen
from tests.unit.bundle_helpers import make_bundle


def test_validate_prints_definition_id_and_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_bundle(tmp_path, config={"permissions": {"default": "allow"}})
    code, out, err = run_agen(capsys, "deploy", str(root), "--validate")
    assert code == 0
    assert out == f"ok: hello (hello@{digest_dir(root)})\n"
    assert err == (
        "warning: x-agen/config.json: permissions.default: allow with no deny or ask rules "
        "lets the agent call every tool unchecked\n"
    )


def test_validate_lists_every_problem_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_bundle(tmp_path, plugin={}, harness={"provider": "gpt"})
    code, out, err = run_agen(capsys, "deploy", str(root), "--validate")
    assert code == 2 and out == ""
    assert err.splitlines() == [
        f"error: bundle {root} is invalid (2 problems)",
        "  plugin.json: name: required",
        '  x-agen/harness.json: provider: must be one of auto, anthropic, openai, gemini, openrouter, fake, replay (got "gpt")',
    ]


def test_validate_json_reports_validity_digest_problems_and_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_bundle(tmp_path)
    code, out, _ = run_agen(capsys, "deploy", str(root), "--validate", "--json")
    assert code == 0
    assert json.loads(out) == {
        "valid": True,
        "name": "hello",
        "digest": digest_dir(root),
        "definitionId": f"hello@{digest_dir(root)}",
        "problems": [],
        "warnings": [],
    }

    bad = make_bundle(tmp_path / "bad", agent="---\n---\n")
    code, out, _ = run_agen(capsys, "deploy", str(bad), "--validate", "--json")
    assert code == 2
    assert json.loads(out) == {
        "valid": False,
        "name": None,
        "digest": None,
        "definitionId": None,
        "problems": ["x-agen/agent.md: body: the system prompt is empty"],
        "warnings": [],
    }


def test_validate_of_a_missing_folder_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_agen(capsys, "deploy", str(tmp_path / "nope"), "--validate")
    assert code == 2
    assert (
        f"{tmp_path / 'nope'}: (file): does not exist; point at a bundle folder (see agen init)"
        in err
    )


def test_deploy_with_no_hub_running_exits_3_and_says_to_start_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_bundle(tmp_path)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    hub = f"http://127.0.0.1:{port}"
    code, out, err = run_agen(capsys, "deploy", str(root), "--hub", hub)
    assert code == 3 and out == ""
    assert f"cannot reach the Hub at {hub}" in err and "agen up" in err
    assert "Traceback" not in err


def test_validate_refuses_a_bundle_over_the_size_limits_a_deploy_is_refused_by(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--validate and deploy apply one check: a 6 MiB data file (limit 5 MiB per file) fails both,
    with the same message."""
    from agen.cli.deploy import deploy_request
    from agen.errors import TooLargeError

    root = make_bundle(tmp_path)
    (root / "data.bin").write_bytes(b"x" * (6 << 20))
    with pytest.raises(TooLargeError) as refused:
        deploy_request(str(root), "default", None, None)
    code, out, _ = run_agen(capsys, "deploy", str(root), "--validate", "--json")
    assert code == 2
    assert json.loads(out)["problems"] == [refused.value.message]
    assert "bundle file data.bin is 6.0 MiB" in refused.value.message
    code, out, err = run_agen(capsys, "deploy", str(root), "--validate")
    assert code == 2 and out == "" and refused.value.message in err
