"""Streaming latency: the model's first token sent → shown, through agen against the provider's SDK.

A local OpenAI-compatible stub (agen.testing.openai_server, in this process) streams a 40-word
answer and notes when it hands its first text chunk to the server. Measured on the same stub in the
same run, interleaved:

* ``agen run streamer "hi" --stream`` against one `agen up` (the full path: the stub's SSE → the
  provider in the runner → the live bus → the Hub's SSE door → the CLI's stdout): from the stub's
  first text sent to this process reading it on `agen run`'s stdout (a fresh process per run; its
  start-up is not in the figure);
* ``agen run <folder> --stream`` with no `agen up` (embedded: the bus in the CLI's own process);
* the ``openai`` SDK reading the same stream (``chat.completions.create(stream=True)``, async) to
  its first content chunk: the floor a client of the provider gets.

Clocks: time.perf_counter (CLOCK_MONOTONIC) in this process for both ends.

    python -m scripts.bench.stream_bench [--runs 30] [--embedded 10] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import select
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from agen.testing.openai_server import OpenAIServer, Reply
from scripts.bench._util import machine, median, pct
from scripts.bench.a2a_bench import _start
from tests.e2e.harness import AGEN, streamer_bundle

ANSWER = " ".join(f"word{i}" for i in range(40))


def _first_shown_ms(argv: list[str], env: dict[str, str], stub: OpenAIServer) -> float:
    """One `agen run`: ms from the stub's first text sent to its first bytes on stdout."""
    stub.script(Reply(text=ANSWER))
    before = len(stub.first_text_sent)
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    shown = None
    while shown is None:
        ready, _, _ = select.select([fd], [], [], 120)
        if not ready or not os.read(fd, 65536):
            proc.kill()
            raise RuntimeError("agen run printed nothing")
        shown = time.perf_counter()
    proc.communicate(timeout=120)
    if proc.returncode != 0 or len(stub.first_text_sent) != before + 1:
        raise RuntimeError(f"agen run exited {proc.returncode}")
    return (shown - stub.first_text_sent[before]) * 1000


async def _sdk_first_ms(base_url: str, stub: OpenAIServer, client: Any) -> float:
    stub.script(Reply(text=ANSWER))
    before = len(stub.first_text_sent)
    stream = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    shown = None
    async for chunk in stream:
        if shown is None and chunk.choices and chunk.choices[0].delta.content:
            shown = time.perf_counter()
    assert shown is not None
    return (shown - stub.first_text_sent[before]) * 1000


def run(runs: int, embedded: int) -> dict[str, Any]:
    import openai

    http_ms: list[float] = []
    embedded_ms: list[float] = []
    sdk_ms: list[float] = []
    with tempfile.TemporaryDirectory() as d, OpenAIServer() as stub:
        tmp = Path(d)
        bundle = streamer_bundle(tmp / "streamer", stub.base_url)
        proc, _url, _gw, env = _start(tmp / "home")
        loop = asyncio.new_event_loop()
        client = openai.AsyncOpenAI(base_url=stub.base_url, api_key="bench")
        try:
            subprocess.run([AGEN, "deploy", str(bundle)], env=env, check=True, capture_output=True)
            argv = [AGEN, "run", "streamer", "hi", "--stream"]
            _first_shown_ms(argv, env, stub)  # warm: the instance starts, imports load
            loop.run_until_complete(_sdk_first_ms(stub.base_url, stub, client))
            for _ in range(runs):
                http_ms.append(_first_shown_ms(argv, env, stub))
                sdk_ms.append(loop.run_until_complete(_sdk_first_ms(stub.base_url, stub, client)))
        finally:
            proc.terminate()
            proc.wait(timeout=60)
            loop.run_until_complete(client.close())
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
        alone = {**env, "AGEN_HOME": str(tmp / "alone")}
        for _ in range(embedded):
            argv = [AGEN, "run", str(bundle), "hi", "--stream"]
            embedded_ms.append(_first_shown_ms(argv, alone, stub))
    out: dict[str, Any] = {"name": "stream", "runs": runs, "embedded_runs": embedded}
    for key, values in (("agen_up", http_ms), ("embedded", embedded_ms), ("sdk", sdk_ms)):
        out[f"{key}_p50_ms"] = round(median(values), 2)
        out[f"{key}_p95_ms"] = round(pct(values, 95), 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--embedded", type=int, default=10)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result = run(args.runs, args.embedded)
    if args.json:
        print(json.dumps(result))
        return
    print(machine())
    for key, label in (
        ("agen_up", "agen run → agen up (SSE)"),
        ("embedded", "agen run, embedded"),
        ("sdk", "openai SDK, same stream"),
    ):
        p50, p95 = result[f"{key}_p50_ms"], result[f"{key}_p95_ms"]
        print(f"{label:28} first token sent → shown: p50 {p50:.2f} ms, p95 {p95:.2f} ms")


if __name__ == "__main__":
    main()
