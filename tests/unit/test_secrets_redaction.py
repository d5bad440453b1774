"""Secrets resolve from the environment (platform ones need a Hub) and every value is scrubbed."""

from __future__ import annotations

import base64
from urllib.parse import quote

import pytest

from agen.bundle.agent import Secrets
from agen.errors import InvalidError, UnavailableError
from agen.runner.redact import Redactor, StreamRedactor
from agen.runner.secrets import resolve_secrets

SECRETS = Secrets.model_validate(
    {
        "secrets": {
            "API_KEY": {"source": "env", "env": "MY_API_KEY"},
            "MISSING": {"source": "env"},
            "VAULT": {"source": "platform"},
        }
    }
)


def test_env_secrets_resolve_expand_and_register_with_the_redactor() -> None:
    red = Redactor()
    resolved = resolve_secrets(SECRETS, red, environ={"MY_API_KEY": "sk-live-123456"})
    assert (
        resolved.expand("Bearer ${API_KEY}", where="headers.Authorization")
        == "Bearer sk-live-123456"
    )
    assert resolved.expand("--root ${WORKSPACE}", where="args[0]") == "--root ${WORKSPACE}"
    assert red.redact("key=sk-live-123456") == "key=[REDACTED]"


def test_missing_undeclared_and_platform_secrets_fail_clearly_when_used() -> None:
    resolved = resolve_secrets(SECRETS, Redactor(), environ={}, platform=None)
    with pytest.raises(InvalidError, match=r"environment variable MISSING.*mcpServers\.x\.env\.K"):
        resolved.expand("${MISSING}", where="mcpServers.x.env.K")
    with pytest.raises(UnavailableError, match="platform secrets need a Hub"):
        resolved.expand("${VAULT}", where="mcpServers.x.env.V")
    with pytest.raises(InvalidError, match="does not declare"):
        resolved.expand("${NOPE}", where="mcpServers.x.env.N")
    given = resolve_secrets(SECRETS, Redactor(), environ={}, platform={"VAULT": "from-the-hub"})
    assert given.expand("${VAULT}", where="x") == "from-the-hub"


def test_redactor_catches_base64_and_url_encoded_forms_and_nested_values() -> None:
    red = Redactor()
    secret = "p@ss/word+42=="
    red.add(secret)
    for form in (
        secret,
        quote(secret, safe=""),
        base64.b64encode(secret.encode()).decode(),
        base64.urlsafe_b64encode(secret.encode()).decode().rstrip("="),
    ):
        assert "[REDACTED]" in red.redact(f"x {form} y") and form not in red.redact(f"x {form} y")
    assert red.redact_obj({"a": [secret, 1], secret: "k"}) == {
        "a": ["[REDACTED]", 1],
        "[REDACTED]": "k",
    }


def test_stream_redactor_catches_a_secret_split_across_chunks() -> None:
    red = Redactor()
    red.add("topsecretvalue")
    stream = StreamRedactor(red)
    chunks = ["the value is tops", "ecretva", "lue, ok"]
    out = "".join(stream.feed(c) for c in chunks) + stream.flush()
    assert out == "the value is [REDACTED], ok"
