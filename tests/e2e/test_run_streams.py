"""`agen run` prints the answer while the model is still writing it: a local OpenAI-compatible stub
holds the rest of its stream after the first words until the test has read them from `agen run`'s
stdout, so the words can only have come through the stream. Embedded (no `agen up`) and over HTTP
to a running `agen up` (its SSE door)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import threading
import time
from pathlib import Path

from agen.testing.openai_server import OpenAIServer, Reply
from tests.e2e.harness import AGEN, Up

ANSWER = "First words, then the rest of the answer once the stub lets it go."


def bundle(root: Path, base_url: str) -> Path:
    files = {
        "plugin.json": {"name": "streamer", "version": "0.1.0"},
        "x-agen/agent.md": "---\nname: streamer\n---\nYou answer.\n",
        "x-agen/harness.json": {"provider": "openai", "model": "m", "baseUrl": base_url},
        "x-agen/config.json": {"kind": "pool", "scale": {"min": 1, "max": 1}},
    }
    for path, value in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(value))
    return root


def read_until(proc: subprocess.Popen[bytes], text: str, timeout_s: float = 60) -> bytes:
    """stdout as it comes, until ``text`` shows up (the deadline only bounds a broken run)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    seen = b""
    deadline = time.monotonic() + timeout_s
    while text.encode() not in seen:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(0.0, left))
        if not ready:
            raise AssertionError(f"no {text!r} on stdout yet: {seen!r}")
        chunk = os.read(fd, 4096)
        if not chunk:
            raise AssertionError(f"agen run ended before printing {text!r}: {seen!r}")
        seen += chunk
    return seen


def streams_before_the_stub_finishes(
    argv: list[str], env: dict[str, str], stub: OpenAIServer
) -> None:
    hold = threading.Event()
    stub.script(Reply(text=ANSWER, hold=hold))
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = read_until(proc, "First ")
        assert not hold.is_set() and stub.requests[-1]["stream"] is True
        hold.set()  # the stub sends the rest only now
        out, err = proc.communicate(timeout=120)
    finally:
        hold.set()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err.decode()
    assert (first + out).decode() == ANSWER + "\n"  # streamed once, not printed again at the end
    assert "succeeded" in err.decode()


def test_embedded_run_prints_the_first_words_before_the_stub_sends_the_rest(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("AGEN_HUB", "AGEN_TOKEN")}
    env["AGEN_HOME"] = str(tmp_path / "home")
    with OpenAIServer() as stub:
        argv = [AGEN, "run", str(bundle(tmp_path / "b", stub.base_url)), "hi", "--stream"]
        streams_before_the_stub_finishes(argv, env, stub)


def test_run_against_agen_up_streams_over_its_event_stream(tmp_path: Path) -> None:
    up = Up(tmp_path / "home").start()
    try:
        with OpenAIServer() as stub:
            up.agen("deploy", str(bundle(tmp_path / "b", stub.base_url)))
            argv = [AGEN, "run", "streamer", "hi", "--stream"]
            streams_before_the_stub_finishes(argv, up.env, stub)
            # --no-stream waits for the end and prints the outcome once
            stub.script(Reply(text="all at once"))
            r = up.agen("run", "streamer", "hi", "--no-stream")
            assert r.stdout == "all at once\n"
    finally:
        up.stop()
