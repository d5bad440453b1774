"""Files and images in: stored as artifacts by the hash of their bytes, carried by the run's first
message (so a later run of the conversation and a cassette have them), and sent to each provider in
its own form, checked by the strict stubs (the `google-genai`, `anthropic` and `openai` SDKs'
types); refused, naming the file, where a provider cannot take one."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agen.domain.attachments import Attachment
from agen.runner.artifacts import save_files
from agen.runner.providers.base import ATTACHMENTS_KEY, ModelRequest
from agen.runner.providers.gemini import GeminiProvider
from agen.runner.providers.replay import RecordingProvider, ReplayProvider
from agen.runner.types import RunRequest
from agen.store import SQLiteStore
from agen.testing.openai_server import OpenAIServer
from tests.anthropic_server import AnthropicServer
from tests.gemini_server import GeminiServer
from tests.runner_helpers import make, runner

pytestmark = pytest.mark.sqlite_only

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
PDF = b"%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
GIF = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"
NOTES = b"line one\nline two\n"
FILES: list[tuple[str, bytes, str | None]] = [
    ("cat.png", PNG, None),
    ("report.pdf", PDF, None),
    ("notes.md", NOTES, None),
]


@pytest.fixture
async def gemini_api() -> AsyncIterator[GeminiServer]:
    async with GeminiServer() as server:
        yield server
    assert server.invalid == [], server.invalid


@pytest.fixture
async def anthropic_api() -> AsyncIterator[AnthropicServer]:
    async with AnthropicServer() as server:
        yield server
    assert server.invalid == [], server.invalid


@pytest.fixture
async def openai_api() -> AsyncIterator[OpenAIServer]:
    async with OpenAIServer() as server:
        yield server
    assert server.invalid == [], server.invalid


async def stored(
    store: SQLiteStore, files: list[tuple[str, bytes, str | None]] = FILES
) -> list[Attachment]:
    return await save_files(store, "default", files)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def test_files_are_artifacts_named_by_the_hash_of_their_bytes(store: SQLiteStore) -> None:
    cat, pdf, notes = await stored(store)
    assert cat == Attachment(
        id="sha256:" + __import__("hashlib").sha256(PNG).hexdigest(),
        name="cat.png",
        media_type="image/png",
        size=len(PNG),
    )
    assert (pdf.media_type, notes.media_type) == ("application/pdf", "text/markdown")
    again = await stored(store, [("same-cat.png", PNG, None)])
    assert again[0].id == cat.id and again[0].name == "same-cat.png"  # stored once
    rows = await store.all("SELECT id, media_type, content FROM artifacts ORDER BY media_type")
    assert [r["media_type"] for r in rows] == ["application/pdf", "image/png", "text/markdown"]
    assert {r["id"]: r["content"] for r in rows}[notes.id] == NOTES.decode()  # text stays text


async def test_gemini_gets_inline_data_and_a_later_run_of_the_conversation_sends_them_again(
    gemini_api: GeminiServer, store: SQLiteStore
) -> None:
    h = {"provider": "gemini", "model": "gemini-3.5-flash", "baseUrl": gemini_api.base_url}
    files = await stored(store)
    r = runner(store, make(h))
    first = await r.run(
        RunRequest(input="what is in these?", attachments=files, conversation_key="c1")
    )
    assert first.outcome.summary == "ok"
    await r.run(RunRequest(input="and now?", conversation_key="c1"))
    for body in gemini_api.requests:  # the second run reads the files back from the Store
        parts = body["contents"][0]["parts"]
        assert parts[0] == {"text": "what is in these?"}
        assert parts[1] == {"inlineData": {"mimeType": "image/png", "data": b64(PNG)}}
        assert parts[2] == {"inlineData": {"mimeType": "application/pdf", "data": b64(PDF)}}
        assert parts[3] == {
            "text": '<file name="notes.md" type="text/markdown">\nline one\nline two\n\n</file>'
        }
    row = await store.one(
        "SELECT attachments FROM messages WHERE run_id = ? AND seq = 1", (first.run_id,)
    )
    assert row is not None
    assert [a["name"] for a in json.loads(row["attachments"])] == [
        "cat.png",
        "report.pdf",
        "notes.md",
    ]


async def test_a_file_gemini_cannot_take_ends_the_run_naming_it(
    gemini_api: GeminiServer, store: SQLiteStore
) -> None:
    h = {"provider": "gemini", "model": "gemini-3.5-flash", "baseUrl": gemini_api.base_url}
    files = await stored(store, [("anim.gif", GIF, None)])
    res = await runner(store, make(h)).run(RunRequest(input="x", attachments=files))
    assert res.status == "failed"
    assert (
        f"gemini cannot take the attached file anim.gif (image/gif, {len(GIF)} bytes) for "
        "gemini-3.5-flash: Gemini takes image/png, image/jpeg, image/webp, application/pdf"
    ) in res.outcome.summary
    assert gemini_api.requests == []  # refused before anything is sent


async def test_anthropic_gets_image_and_document_blocks(
    anthropic_api: AnthropicServer, store: SQLiteStore
) -> None:
    h = {"provider": "anthropic", "model": "claude-sonnet-4-5", "baseUrl": anthropic_api.base_url}
    files = await stored(store)
    res = await runner(store, make(h)).run(RunRequest(input="describe", attachments=files))
    assert res.outcome.summary == "ok"
    blocks = anthropic_api.requests[0]["messages"][0]["content"]
    assert blocks[0] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": b64(PNG)},
    }
    assert blocks[1] == {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": b64(PDF)},
        "title": "report.pdf",
    }
    assert blocks[2]["source"] == {
        "type": "text",
        "media_type": "text/plain",
        "data": NOTES.decode(),
    }
    assert blocks[3]["text"] == "describe" and blocks[3]["cache_control"] == {"type": "ephemeral"}


async def test_openai_compatible_servers_get_image_parts_and_a_pdf_only_where_file_parts_exist(
    openai_api: OpenAIServer, store: SQLiteStore
) -> None:
    files = await stored(store)
    image_and_text = [files[0], files[2]]
    plain = {"provider": "openai", "model": "llava", "baseUrl": openai_api.base_url}
    res = await runner(store, make(plain)).run(
        RunRequest(input="describe", attachments=image_and_text)
    )
    assert res.outcome.summary == "ok"
    content = openai_api.requests[0]["messages"][-1]["content"]
    assert content[0] == {"type": "text", "text": "describe"}
    assert content[1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{b64(PNG)}"},
    }
    assert content[2]["type"] == "text" and "line two" in content[2]["text"]
    # a PDF: OpenRouter (like OpenAI itself) takes it as a file part; another server cannot
    routed = {"provider": "openrouter", "model": "openai/gpt-5", "baseUrl": openai_api.base_url}
    res = await runner(store, make(routed)).run(RunRequest(input="read", attachments=[files[1]]))
    assert res.outcome.summary == "ok"
    assert openai_api.requests[1]["messages"][-1]["content"][1] == {
        "type": "file",
        "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{b64(PDF)}"},
    }
    res = await runner(store, make(plain)).run(RunRequest(input="read", attachments=[files[1]]))
    assert res.status == "failed" and len(openai_api.requests) == 2
    assert "openai cannot take the attached file report.pdf (application/pdf" in res.outcome.summary
    assert "takes images but no PDF files" in res.outcome.summary


async def test_the_fake_model_takes_any_file_and_says_what_it_got(store: SQLiteStore) -> None:
    files = await stored(store)
    res = await runner(store, make({"provider": "fake"})).run(
        RunRequest(input="hi", attachments=files)
    )
    assert res.outcome.summary == (
        f"You said: hi [attached: cat.png (image/png, {len(PNG)} bytes); report.pdf "
        f"(application/pdf, {len(PDF)} bytes); notes.md (text/markdown, {len(NOTES)} bytes)]"
    )


async def test_a_cassette_recorded_with_an_image_keeps_it_and_replays(
    gemini_api: GeminiServer,
) -> None:
    file = {"name": "cat.png", "media_type": "image/png", "size": len(PNG), "data": b64(PNG)}
    req = ModelRequest(
        model="gemini-3.5-flash",
        messages=[{"role": "user", "content": "what is it?", ATTACHMENTS_KEY: [file]}],
        run_id="run-1",
    )
    recorder = RecordingProvider(
        GeminiProvider(api_key="k", model="gemini-3.5-flash", base_url=gemini_api.base_url)
    )
    seen: list[str] = []

    async def sink(d: Any) -> None:
        seen.append(d.text)

    answer = await recorder.complete(req, sink)
    cassette = json.loads(json.dumps({"interactions": recorder.take_recorded("run-1")}))
    await recorder.aclose()
    kept = cassette["interactions"][0]["request"]["messages"][0][ATTACHMENTS_KEY]
    assert kept == [file]  # the cassette has the bytes the model was sent
    again: list[str] = []

    async def sink2(d: Any) -> None:
        again.append(d.text)

    replayed = await ReplayProvider(cassette["interactions"]).complete(req, sink2)
    assert again == seen and replayed.text == answer.text == "ok"


def test_agen_run_attach_sends_files_and_a_bad_one_is_refused_before_submitting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.cli_helpers import run_agen

    bundle = Path(__file__).resolve().parents[2] / "bundles" / "hello"
    echo = tmp_path / "echo"
    import shutil

    shutil.copytree(bundle, echo)
    (echo / "x-agen" / "harness.json").write_text('{"provider": "fake", "fake": {"echo": true}}')
    cat = tmp_path / "cat.png"
    cat.write_bytes(PNG)
    code, out, err = run_agen(capsys, "run", str(echo), "look", "--attach", str(cat))
    assert code == 0, err
    assert f"You said: look [attached: cat.png (image/png, {len(PNG)} bytes)]" in out
    binary = tmp_path / "tool.bin"
    binary.write_bytes(b"\x00\x01\x02")
    code, out, err = run_agen(capsys, "run", str(echo), "x", "--attach", str(binary))
    assert code != 0 and out == ""
    assert "--attach: file tool.bin (3 bytes) is not an image (png, jpeg, gif, webp)" in err
    code, _, err = run_agen(capsys, "run", str(echo), "x", "--attach", str(tmp_path / "nope.png"))
    assert code != 0 and "--attach " in err and "nope.png: cannot read it" in err


async def test_the_sdk_takes_paths_and_bytes(tmp_path: Path) -> None:
    from agen.sdk import Agent

    notes = tmp_path / "notes.txt"
    notes.write_bytes(NOTES)
    async with Agent(instructions="echo", provider="fake", store=tmp_path / "s.db") as agent:
        res = await agent.run("see", attach=[notes, ("cat.png", PNG)])
    assert res.outcome.summary == (
        f"You said: see [attached: notes.txt (text/plain, {len(NOTES)} bytes); "
        f"cat.png (image/png, {len(PNG)} bytes)]"
    )


def test_limits_and_types_are_checked_with_errors_that_name_the_file() -> None:
    from agen.domain.attachments import MAX_FILE_BYTES, check_file, check_files
    from agen.errors import InvalidError

    assert check_file("data.json", b'{"a": 1}') == "application/json"
    assert check_file("x.webp", b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    problems: dict[str, Callable[[], object]] = {
        "big.pdf": (lambda: check_file("big.pdf", b"%PDF-" + bytes(MAX_FILE_BYTES))),
        "is declared image/jpeg but its bytes are image/png": (
            lambda: check_file("cat.jpg", PNG, "image/jpeg")
        ),
        "at most 20 per task": (lambda: check_files([("a.txt", b"a", None)] * 21)),
        "20 MiB) per task": (
            lambda: check_files([(f"{i}.txt", b"a" * (MAX_FILE_BYTES - 1), None) for i in range(3)])
        ),
        "file empty.txt is empty": (lambda: check_file("empty.txt", b"")),
    }
    for said, call in problems.items():
        with pytest.raises(InvalidError) as e:
            call()
        assert said in e.value.message


def test_the_stubs_refuse_an_image_whose_bytes_are_not_what_it_says() -> None:
    """The OpenAI and Anthropic stubs' image checks can fail (the Gemini stub's: test_providers_gemini)."""
    from agen.testing.openai_server import content_problems
    from tests.anthropic_server import api_rules

    jpeg_url = f"data:image/jpeg;base64,{b64(PNG)}"
    body = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": jpeg_url}},
                    {"type": "image_url", "url": jpeg_url},
                    {
                        "type": "file",
                        "file": {"file_data": f"data:application/pdf;base64,{b64(PDF)}"},
                    },
                ],
            }
        ]
    }
    found = content_problems(body)
    assert any("content[0].image_url.url: the bytes are not image/jpeg" in p for p in found)
    assert any(p.startswith("messages[0].content[1]:") for p in found)
    assert any("content[2].file: a file sent as data needs its filename" in p for p in found)
    source = {"type": "base64", "media_type": "application/pdf", "data": b64(PNG)}
    msgs = [{"role": "user", "content": [{"type": "document", "source": source}]}]
    assert api_rules({"messages": msgs}, {}) == [
        "messages[0].content[0]: the bytes are not application/pdf"
    ]


def test_a2a_raw_and_data_parts_become_files_and_url_parts_are_refused() -> None:
    from a2a.types import Message, Part
    from google.protobuf import struct_pb2

    from agen.errors import InvalidError
    from agen.gateway import convert

    data = struct_pb2.Value()
    data.struct_value.update({"rows": 3})
    message = Message(
        message_id="m",
        parts=[
            Part(text="look"),
            Part(raw=PNG, filename="cat.png", media_type="image/png"),
            Part(data=data),
        ],
    )
    sub = convert.read_message(message, {})
    assert sub.text == "look"
    assert [(f.name, f.media_type) for f in sub.files] == [
        ("cat.png", "image/png"),
        ("data-3.json", "application/json"),
    ]
    assert base64.b64decode(sub.files[0].data) == PNG
    assert json.loads(base64.b64decode(sub.files[1].data)) == {"rows": 3}
    url = Message(message_id="m", parts=[Part(url="https://example.com/x.png")])
    with pytest.raises(
        InvalidError, match="not supported yet: A2A url parts; send the file's bytes"
    ):
        convert.read_message(url, {})


async def test_submit_task_over_http_takes_files_past_the_plain_body_cap_and_refuses_bad_ones(
    hub: Any, tmp_path: Path
) -> None:
    """SubmitTask's body may carry 20 MiB of files (base64) though other calls stop at 1 MiB; the
    task shows the stored files; bad data is a 400 naming the file, and nothing is stored."""
    from agen.api import registry as rpc
    from agen.domain.attachments import FileIn
    from agen.errors import InvalidError
    from agen.wire.deployments import CreateDeploymentRequest
    from agen.wire.tasks import SubmitTaskRequest
    from tests.fleet_helpers import files_b64, write_bundle
    from tests.integration.test_api import admin_token, http_client

    client = http_client(hub, await admin_token(hub))
    bundle = write_bundle(tmp_path / "b", "looker")
    await client.call(rpc.CreateDeployment, CreateDeploymentRequest(files=files_b64(bundle)))
    big = b"%PDF-" + b"x" * (3 * 1024 * 1024)  # 4 MiB as base64: past the 1 MiB body cap
    files = [FileIn(name="big.pdf", data=b64(big)), FileIn(name="cat.png", data=b64(PNG))]
    resp = await client.call(
        rpc.SubmitTask, SubmitTaskRequest(deployment="looker", input="read", attachments=files)
    )
    assert [(a.name, a.media_type, a.size) for a in resp.task.attachments] == [
        ("big.pdf", "application/pdf", len(big)),
        ("cat.png", "image/png", len(PNG)),
    ]
    bad = [FileIn(name="x.png", data="not base64!")]
    with pytest.raises(InvalidError, match=r"file x\.png: data is not base64"):
        await client.call(
            rpc.SubmitTask, SubmitTaskRequest(deployment="looker", input="x", attachments=bad)
        )
    lying = [FileIn(name="x.gif", data=b64(PNG), media_type="image/gif")]
    with pytest.raises(InvalidError, match="declared image/gif but its bytes are image/png"):
        await client.call(
            rpc.SubmitTask, SubmitTaskRequest(deployment="looker", input="x", attachments=lying)
        )
    assert await hub.store.scalar("SELECT COUNT(*) FROM artifacts") == 2


async def test_a_run_resumed_from_the_store_sends_its_files_again(
    gemini_api: GeminiServer, store: SQLiteStore
) -> None:
    """The owner dies in a tool call; the run resumed elsewhere reads its first message and its
    files from the Store and sends them again with the signed model turn."""
    import asyncio

    from agen.errors import FencedError
    from tests.gemini_server import Reply
    from tests.runner_helpers import FnTool

    started = asyncio.Event()
    calls: list[str] = []

    async def put(args: dict[str, Any]) -> str:
        calls.append("put")
        if len(calls) == 1:
            started.set()
            await asyncio.sleep(30)  # the first owner never finishes it
        return "stored"

    gemini_api.script(Reply(text=None, tool_calls=[{"name": "put", "arguments": {}}]), Reply())
    h = {"provider": "gemini", "model": "gemini-3.5-flash", "baseUrl": gemini_api.base_url}
    b = make(h)
    files = await stored(store, [("cat.png", PNG, None)])
    req = RunRequest(input="keep it", attachments=files, task_id="t-files")
    old = runner(store, b, FnTool("put", put, side_effect=True, idempotent=True), owner="a")
    task = asyncio.create_task(old.run(req))
    await started.wait()
    again = RunRequest(input="keep it", task_id="t-files")  # a new lease: the Store has the files
    res = await runner(
        store, b, FnTool("put", put, side_effect=True, idempotent=True), owner="b"
    ).run(again)
    task.cancel()
    with pytest.raises((asyncio.CancelledError, FencedError)):
        await task
    assert res.outcome.summary == "ok" and calls == ["put", "put"]
    resumed = gemini_api.requests[-1]["contents"]
    assert resumed[0]["parts"][1] == {"inlineData": {"mimeType": "image/png", "data": b64(PNG)}}
    assert "thoughtSignature" in resumed[1]["parts"][0]
