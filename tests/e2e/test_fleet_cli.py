"""`agen up` as users run it: a real process, driven through the CLI and HTTP only."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import httpx

from tests.e2e.harness import Up, wait_until
from tests.fleet_helpers import write_bundle


def test_deploy_run_scale_stop_start_logs_and_rm_through_the_cli(up: Up, tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "echo", "echo", config={"scale": {"min": 1, "max": 3}})
    assert stat.S_IMODE(os.stat(up.home / "local.json").st_mode) == 0o600
    assert "echo: created (echo@sha256:" in up.agen("deploy", str(bundle)).stdout
    assert "unchanged" in up.agen("deploy", str(bundle)).stdout

    r = up.agen("run", "echo", "hello fleet")
    assert r.stdout.strip() == "You said: hello fleet" and "succeeded" in r.stderr

    assert up.json("scale", "echo", "3")["deployment"]["desired"] == 3
    wait_until(
        lambda: (
            len([i for i in up.json("ps", "--all")["instances"] if i["deployment"] == "echo"]) == 3
        ),
        what="3 instances",
    )
    [dep] = up.json("ps")["deployments"]
    assert dep["desired"] == 3 and dep["name"] == "echo"

    up.agen("stop", "echo")
    wait_until(
        lambda: not [i for i in up.json("ps", "--all")["instances"] if i["deployment"] == "echo"],
        what="instances drained",
    )
    [row] = [ln for ln in up.agen("ps").stdout.splitlines() if ln.split()[:1] == ["echo"]]
    assert "stopped (paused)" in row  # the one activity word, as the TUI shows it
    refused = up.agen("scale", "echo", "2", check=False)
    assert refused.returncode == 5 and "agen start echo" in refused.stderr
    up.agen("start", "echo")
    assert up.agen("run", "echo", "again").stdout.strip() == "You said: again"

    lines = [json.loads(x) for x in up.agen("logs", "echo", "--json").stdout.splitlines()]
    messages = [line["message"] for line in lines]
    assert any(m.startswith("created from echo@sha256:") for m in messages)
    assert any("ready" in m for m in messages) and any("stopped" in m for m in messages)

    gone = up.json("rm", "echo")
    assert gone["deleted"]
    missing = up.agen("run", "echo", "anyone?", check=False)
    assert missing.returncode == 4 and "not found" in missing.stderr


def test_run_a_bundle_folder_deploys_it_and_redeploys_on_change(up: Up, tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "greeter", "greeter", script=[{"text": "hi from v1"}])
    r = up.agen("run", str(bundle), "x")
    assert r.stdout.strip() == "hi from v1" and "greeter: deployed" in r.stderr
    write_bundle(tmp_path / "greeter", "greeter", script=[{"text": "hi from v2"}])
    r = up.agen("run", str(bundle), "x")
    assert r.stdout.strip() == "hi from v2" and "greeter: updated" in r.stderr


def test_tokens_scopes_and_whoami(up: Up, tmp_path: Path) -> None:
    assert "scopes admin" in up.agen("whoami").stdout
    viewer = up.agen("token", "create", "--scope", "viewer", "--name", "ro").stdout.strip()
    assert viewer.startswith("agen_")
    me = up.json("whoami", "--token", viewer, "--hub", up.url)
    assert me["info"]["scopes"] == ["viewer"]
    denied = up.agen(
        "deploy", str(write_bundle(tmp_path / "b", "b")), "--token", viewer, check=False
    )
    assert denied.returncode == 6 and "operator scope" in denied.stderr
    other = up.agen("whoami", "--hub", "http://127.0.0.1:1", check=False)
    assert other.returncode == 3 and "cannot reach the Hub at http://127.0.0.1:1" in other.stderr


def test_no_wait_then_wait_and_tasks_listing(up: Up, tmp_path: Path) -> None:
    up.agen("deploy", str(write_bundle(tmp_path / "echo", "echo")))
    task_id = up.agen("run", "echo", "later", "--no-wait", "--label", "team=a").stdout.strip()
    assert up.agen("wait", task_id).stdout.strip() == "You said: later"
    tasks = up.json("tasks", "--state", "succeeded")["tasks"]
    assert [t["id"] for t in tasks] == [task_id] and tasks[0]["labels"] == {"team": "a"}
    scheduled = up.agen("run", "echo", "tomorrow", "--in", "24h", "--no-wait").stdout.strip()
    assert [t["id"] for t in up.json("tasks", "--scheduled")["tasks"]] == [scheduled]
    same = up.agen("run", "echo", "once", "--idempotency-key", "k1", "--no-wait").stdout.strip()
    assert (
        up.agen("run", "echo", "once", "--idempotency-key", "k1", "--no-wait").stdout.strip()
        == same
    )


def test_second_up_on_the_same_home_is_refused_and_down_drains_it(up: Up) -> None:
    second = Up(up.home)
    r = second.agen("up", "--headless", "--listen", f"127.0.0.1:{second.port}", check=False)
    assert r.returncode == 5 and "already running" in r.stderr
    assert up.agen("down").stdout.strip() == "stopped"
    assert up.proc is not None and up.proc.wait(10) == 0
    try:
        httpx.get(up.url + "/health", timeout=1)
        raise AssertionError("the Hub still answers after agen down")
    except httpx.HTTPError:
        pass
