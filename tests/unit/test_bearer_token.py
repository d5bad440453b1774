"""One bearer-token parser (agen.wire.bearer.bearer_token) for API calls, the event stream,
webhook bearer secrets and the A2A Gateway, so the doors agree on what a token header is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import agen
from agen.wire.bearer import bearer_token


@pytest.mark.parametrize(
    ("headers", "token"),
    [
        ({"authorization": "Bearer agen_abc"}, "agen_abc"),
        ({"Authorization": "bearer   agen_abc  "}, "agen_abc"),
        ({"authorization": "BEARER agen_abc"}, "agen_abc"),
        ({"authorization": "Basic dXNlcjpwdw=="}, None),
        ({"authorization": "Bearer "}, None),
        ({"authorization": "Bearer"}, None),
        ({}, None),
    ],
)
def test_a_bearer_header_yields_its_token_and_anything_else_none(
    headers: dict[str, str], token: str | None
) -> None:
    assert bearer_token(headers) == token


def test_only_one_module_parses_the_authorization_header() -> None:
    root = Path(agen.__file__).parent
    reads = re.compile(r"""\.get\(\s*["']authorization["']""", re.IGNORECASE)
    parsers = sorted(
        str(p.relative_to(root.parent)) for p in root.rglob("*.py") if reads.search(p.read_text())
    )
    assert parsers == ["agen/wire/bearer.py"]
