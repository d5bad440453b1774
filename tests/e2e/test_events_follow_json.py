"""`agen events -f --json` streams JSON Lines: a script can parse each line as it arrives."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.e2e.harness import AGEN, Up
from tests.fleet_helpers import write_bundle


def test_events_follow_json_prints_one_parseable_object_per_line(tmp_path: Path) -> None:
    up = Up(tmp_path / "home").start()
    follow = None
    try:
        up.agen("deploy", str(write_bundle(tmp_path / "echo", "echo")))
        follow = (
            subprocess.Popen(  # `timeout`: a missing event fails the test instead of hanging it
                ["timeout", "120", AGEN, "events", "-f", "--json"],
                env=up.env,
                stdout=subprocess.PIPE,
                text=True,
            )
        )
        assert follow.stdout is not None
        first = json.loads(follow.stdout.readline())  # the deploy's event, already in the log
        assert first["type"] == "deployment.created"
        up.agen("run", "echo", "hi")  # new events arrive while it follows
        types = set()
        while "task.succeeded" not in types:
            types.add(json.loads(follow.stdout.readline())["type"])
    finally:
        if follow is not None:
            follow.kill()
            follow.wait()
        up.stop()
