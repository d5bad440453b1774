"""``agen call`` (an A2A message to a deployment, the answer streamed) and ``agen resolve`` (its
A2A endpoint and agent card): the Gateway's doors from the command line, on a2a-sdk's client.

A target is NAMESPACE/DEPLOYMENT (the Hub says where its Gateway is and gives the token), or the
URL of any A2A agent, agen's or not: its card is read from URL/.well-known/agent-card.json (or the
card's own URL), and ``--token`` is that agent's bearer token; no Hub is involved."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agen.cli._common import HubOpt, JsonOpt, NamespaceOpt, TokenOpt, err, print_json

if TYPE_CHECKING:
    from agen.client import Client
    from agen.wire.agents import ResolveAgentRequest, ResolveAgentResponse

TargetArg = Annotated[
    str,
    typer.Argument(
        help="The agent: NAMESPACE/DEPLOYMENT, a deployment in --namespace, or an A2A agent's URL "
        "(its card at URL/.well-known/agent-card.json; --token is then that agent's token).",
        show_default=False,
    ),
]
CARD_PATH = "/.well-known/agent-card.json"
# A2A states -> exit codes: 0 answered, 1 failed/cancelled/rejected, 8 not ended (needs input).
_EXIT = {
    "TASK_STATE_COMPLETED": 0,
    "TASK_STATE_INPUT_REQUIRED": 8,
    "TASK_STATE_AUTH_REQUIRED": 8,
    "TASK_STATE_WORKING": 8,
    "TASK_STATE_SUBMITTED": 8,
}


def _split(target: str, namespace: str) -> ResolveAgentRequest:
    """The address as a checked request, before any connection (a bad one is exit 2)."""
    from agen.cli._common import make_request
    from agen.errors import InvalidError
    from agen.wire.agents import ResolveAgentRequest

    ns, sep, name = target.rpartition("/")
    ns = ns if sep else namespace
    if not name or "/" in ns:
        raise InvalidError(
            f"{target!r} is not an agent address; use NAMESPACE/DEPLOYMENT, e.g. default/hello",
            field="target",
        )
    return make_request(
        ResolveAgentRequest, {"deployment": "TARGET"}, namespace=ns, deployment=name
    )


async def _resolve(client: Client, req: ResolveAgentRequest) -> ResolveAgentResponse:
    from agen.api import registry as r

    return await client.call(r.ResolveAgent, req)


def _endpoint(info: ResolveAgentResponse) -> str:
    from agen.errors import UnavailableError

    if not info.urls:
        raise UnavailableError(
            f"no A2A Gateway serves {info.namespace}/{info.deployment}: start `agen up` with its "
            "Gateway (on by default, --gateway-listen 127.0.0.1:7071), or run it on a Nest with "
            "one (`agen nest run --gateway-listen`)"
        )
    return info.urls[0]


def _token(client: Client) -> str:
    from agen.client import HttpTransport
    from agen.errors import UnauthenticatedError

    token = client.transport.token if isinstance(client.transport, HttpTransport) else None
    if not token:
        raise UnauthenticatedError(
            "agen call needs a token: --token, AGEN_TOKEN or a local `agen up`"
        )
    return token


def _call_error(url: str, e: Exception) -> Exception:
    """The Gateway's own words for a refused call (503 paused / no instance in time, with its
    Retry-After hint; 401; 403), not the HTTP client's."""
    import httpx

    from agen.errors import AgenError, DeniedError, UnauthenticatedError, UnavailableError

    cause = e.__cause__
    if not isinstance(cause, httpx.HTTPStatusError):
        return AgenError(f"A2A call to {url} failed: {e}")
    resp = cause.response
    try:
        body = resp.json()
        said = body.get("error", {}).get("message") or str(body)
    except ValueError:
        said = resp.text[:200]
    retry = resp.headers.get("Retry-After")
    message = f"{said}{f' (retry after {retry} s)' if retry else ''}"
    if resp.status_code == 401:
        return UnauthenticatedError(message)
    if resp.status_code == 403:
        return DeniedError(message)
    if resp.status_code == 503:
        return UnavailableError(message)
    return AgenError(f"A2A call to {url} failed: HTTP {resp.status_code}: {message}")


def _is_url(target: str) -> bool:
    """An agent's URL (checked: a bad one is exit 2), rather than NAMESPACE/DEPLOYMENT."""
    if not target.startswith(("http://", "https://")):
        return False
    import httpx

    from agen.errors import InvalidError

    try:
        url = httpx.URL(target)
    except httpx.InvalidURL as e:
        raise InvalidError(f"{target[:80]!r} is not a URL: {e}", field="target") from None
    if not url.host:
        raise InvalidError(f"{target[:80]!r} names no host", field="target")
    return True


async def _foreign_card(http: Any, target: str) -> Any:
    """The card of the agent at ``target`` (a base URL or the card's own URL), as a2a-sdk reads it
    (an A2A 1.0 card, or a 0.3 one converted), and the raw JSON it was read from."""
    import httpx
    from a2a.client import A2ACardResolver, AgentCardResolutionError

    from agen.errors import DeniedError, InvalidError, UnauthenticatedError, UnavailableError

    base, path = (
        (target[: -len(CARD_PATH)], CARD_PATH)
        if target.endswith(CARD_PATH)
        else (target, CARD_PATH)
    )
    try:
        return await A2ACardResolver(http, base, path).get_agent_card()
    except AgentCardResolutionError as e:
        status = getattr(e, "status_code", None)
        where = f"{base.rstrip('/')}{path}"
        if status == 401:
            raise UnauthenticatedError(f"{where}: the agent wants a token; pass --token") from None
        if status == 403:
            raise DeniedError(f"{where}: the token is refused for this agent") from None
        if status is not None:
            raise UnavailableError(f"{where}: no agent card (HTTP {status})") from None
        cause = e.__cause__
        if isinstance(cause, httpx.RequestError):
            raise UnavailableError(f"{where}: cannot reach the agent ({cause})") from None
        raise InvalidError(f"{where}: not an A2A agent card ({e})", field="target") from None


def _bearer(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def resolve(
    target: TargetArg,
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """The A2A endpoint of a deployment, its agent card (name, description, skills) and, for an
    operator, a call token for it (10 min; --json: call_token)."""
    from agen import extras

    extras.require("a2a", "agen resolve")

    import httpx

    from agen.cli._hub import run as run_async
    from agen.client import Client
    from agen.gateway.card import card_json

    if _is_url(target):
        _resolve_url(target, token, json_out)
        return
    req = _split(target, namespace)
    ns, name = req.namespace, req.deployment

    async def go() -> tuple[ResolveAgentResponse, dict[str, Any]]:
        async with Client.from_options(hub, token) as client:
            info = await _resolve(client, req)
            if not info.urls:
                return info, card_json(info, "")
            url = _endpoint(info)
            # The Gateway serves the card it really answers with; one that is down or restarting
            # (the Hub lists it until its Nest says otherwise) leaves the Hub's own account of it.
            try:
                async with httpx.AsyncClient(timeout=30) as http:
                    r = await http.get(
                        f"{url}/.well-known/agent-card.json",
                        headers={"Authorization": f"Bearer {_token(client)}"},
                    )
                if r.status_code == 200:
                    return info, r.json()
            except (httpx.HTTPError, ValueError):
                pass
            return info, card_json(info, url)

    info, card = run_async(go())
    if json_out:
        print_json(
            {
                "namespace": ns,
                "deployment": name,
                "urls": info.urls,
                "card": card,
                "call_token": info.call_token,
                "call_token_expires_ms": info.call_token_expires_ms,
            }
        )
        return
    print(info.urls[0] if info.urls else "-")
    state = "paused" if info.paused else ("asleep: a call wakes it" if not info.ready else "ready")
    err(f"{card.get('name')}: {card.get('description', '')} ({state})")
    for skill in card.get("skills", []):
        err(f"  skill {skill.get('id')}: {skill.get('description', '')}")
    if info.call_token:
        err(f"call token (10 min, for {ns}/{name} only): {info.call_token}")


def _resolve_url(target: str, token: str | None, json_out: bool) -> None:
    """`agen resolve URL`: a foreign agent's card, read through a2a-sdk's resolver."""
    import httpx
    from google.protobuf.json_format import MessageToDict

    from agen.cli._hub import run as run_async

    async def go() -> dict[str, Any]:
        async with httpx.AsyncClient(headers=_bearer(token), timeout=30) as http:
            return dict(MessageToDict(await _foreign_card(http, target)))

    card = run_async(go())
    urls = [i.get("url") for i in card.get("supportedInterfaces", []) if i.get("url")]
    if json_out:
        print_json({"urls": urls, "card": card})
        return
    print(urls[0] if urls else "-")
    err(f"{card.get('name')}: {card.get('description', '')}")
    for skill in card.get("skills", []):
        err(f"  skill {skill.get('id')}: {skill.get('description', '')}")


def call(
    target: TargetArg,
    text: Annotated[str, typer.Argument(help="The message.", show_default=False)],
    context: Annotated[
        str | None,
        typer.Option(
            "--context",
            help="Continue this conversation (the contextId an earlier call printed).",
            show_default=False,
        ),
    ] = None,
    timeout: Annotated[
        str,
        typer.Option(
            "--timeout",
            help="How long to wait for the answer; past it the task goes on at the agent and the "
            "command exits 8 (not ended).",
        ),
    ] = "5m",
    hub: HubOpt = None,
    token: TokenOpt = None,
    namespace: NamespaceOpt = "default",
    json_out: JsonOpt = False,
) -> None:
    """Send an A2A message to a deployment through its Gateway (waking it if asleep); the answer streams to stdout."""
    import asyncio
    import uuid

    from agen import extras

    extras.require("a2a", "agen call")

    import httpx
    from a2a.client import ClientConfig, ClientFactory
    from a2a.client.errors import A2AClientError
    from a2a.types import Message, Part, Role, SendMessageRequest

    from agen.cli._common import parse_duration_ms
    from agen.cli._hub import run as run_async
    from agen.client import Client
    from agen.gateway.card import agent_card

    timeout_s = parse_duration_ms(timeout, flag="--timeout") / 1000
    req = None if _is_url(target) else _split(target, namespace)

    async def go() -> _Answer:
        info = None
        if req is None:  # an agent at a URL: its own card and --token, no Hub
            url, secret = target, token
        else:
            async with Client.from_options(hub, token) as client:
                info = await _resolve(client, req)
                url, secret = _endpoint(info), _token(client)
        limit = httpx.Timeout(30, read=timeout_s + 30)
        async with httpx.AsyncClient(headers=_bearer(secret), timeout=limit) as http:
            card = agent_card(info, url) if info is not None else await _foreign_card(http, url)
            a2a = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
            message = Message(
                role=Role.ROLE_USER,
                message_id=str(uuid.uuid4()),
                context_id=context or "",
                parts=[Part(text=text)],
            )
            answer = _Answer(json_out)
            try:
                async with asyncio.timeout(timeout_s):
                    async for event in a2a.send_message(SendMessageRequest(message=message)):
                        answer.take(event)
            except TimeoutError:
                err(f"agen call: no answer within {timeout}; the task goes on at the agent")
                answer.timed_out = True
            except A2AClientError as e:
                raise _call_error(url, e) from None
        return answer

    answer = run_async(go())
    if json_out:
        print_json(answer.task)
    elif not answer.timed_out:
        err(f"agen call: {answer.state.removeprefix('TASK_STATE_').lower().replace('_', '-')}")
    code = 8 if answer.timed_out else _EXIT.get(answer.state, 1)  # 8: not ended, it goes on
    if code:
        raise typer.Exit(code)


class _Answer:
    """What a streamed call has said so far: the task as JSON and its state; text parts of
    artifact updates are printed as they come (unless --json)."""

    def __init__(self, json_out: bool) -> None:
        self.json_out = json_out
        self.task: dict[str, Any] = {}
        self.state = "TASK_STATE_UNSPECIFIED"
        self.timed_out = False

    def take(self, event: Any) -> None:
        from a2a.types import TaskState
        from google.protobuf.json_format import MessageToDict

        which = event.WhichOneof("payload")
        if which == "artifact_update":  # replaces the task's own copy, by artifactId
            new = MessageToDict(event.artifact_update.artifact)
            kept = [
                a
                for a in self.task.get("artifacts", [])
                if a.get("artifactId") != new.get("artifactId")
            ]
            self.task["artifacts"] = [*kept, new]
            if not self.json_out:
                for part in event.artifact_update.artifact.parts:
                    if part.text:
                        sys.stdout.write(part.text)
                sys.stdout.write("\n")
                sys.stdout.flush()
        if which == "task":
            self.task = {**MessageToDict(event.task), **self.task}
            self.state = TaskState.Name(event.task.status.state)
            if not self.json_out:
                err(f"agen call: task {event.task.id}, context {event.task.context_id}")
        if which == "status_update":
            self.state = TaskState.Name(event.status_update.status.state)
            self.task["status"] = MessageToDict(event.status_update.status)


def register(app: typer.Typer) -> None:
    app.command("call")(call)
    app.command("resolve")(resolve)
