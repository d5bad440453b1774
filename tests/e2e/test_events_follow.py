"""`agen events -f` against a real `agen up`: new events print as they happen, and resuming with
--after across an `agen up` restart loses and repeats nothing."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tests.e2e.harness import AGEN, Up
from tests.fleet_helpers import write_bundle


class Follow:
    """A running `agen events -f --json`; its events are decoded as they arrive."""

    def __init__(self, up: Up, *args: str) -> None:
        self.proc = subprocess.Popen(
            [AGEN, "events", "-f", "--json", *args],
            env=up.env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        decoder, buf = json.JSONDecoder(), ""
        for line in self.proc.stdout:
            buf += line
            try:
                obj, end = decoder.raw_decode(buf.lstrip())
            except ValueError:
                continue
            self.events.put(obj)
            buf = buf.lstrip()[end:]

    def until(self, check: Any, seen: list[dict[str, Any]], timeout_s: float = 30) -> None:
        """Collect events into ``seen`` until one satisfies ``check``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                event = self.events.get(timeout=0.2)
            except queue.Empty:
                continue
            seen.append(event)
            if check(event):
                return
        raise AssertionError(f"no matching event; saw {[e['type'] for e in seen]}")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def test_events_follow_prints_new_events_and_resuming_after_a_restart_loses_and_repeats_nothing(
    tmp_path: Path,
) -> None:
    up = Up(tmp_path / "home").start()
    try:
        up.agen(
            "deploy",
            str(write_bundle(tmp_path / "echo", "echo", config={"scale": {"min": 1, "max": 1}})),
        )
        follow = Follow(up, "--after", "0")
        seen: list[dict[str, Any]] = []
        first = up.agen("run", "echo", "one", "--no-wait").stdout.strip()
        follow.until(lambda e: e["type"] == "task.succeeded" and e["task_id"] == first, seen)
        follow.stop()
        up.stop()

        up = Up(tmp_path / "home", port=up.port).start()
        resumed = Follow(up, "--after", str(seen[-1]["seq"]))
        second = up.agen("run", "echo", "two", "--no-wait").stdout.strip()
        resumed.until(lambda e: e["type"] == "task.succeeded" and e["task_id"] == second, seen)
        resumed.stop()

        everything = [
            json.loads(x)
            for x in _json_objects(
                up.agen("events", "--after", "0", "--limit", "1000", "--json").stdout
            )
        ]
        upto = [e for e in everything if e["seq"] <= seen[-1]["seq"]]
        seqs = [e["seq"] for e in seen]
        assert seqs == sorted(set(seqs)), "an event was repeated or came out of order"
        assert seqs == [e["seq"] for e in upto], "an event was lost"
        assert {"task.queued", "task.started", "task.succeeded"} <= {e["type"] for e in seen}
    finally:
        up.stop()


def _json_objects(text: str) -> list[str]:
    decoder, out, rest = json.JSONDecoder(), [], text.strip()
    while rest:
        obj, end = decoder.raw_decode(rest)
        out.append(json.dumps(obj))
        rest = rest[end:].strip()
    return out
