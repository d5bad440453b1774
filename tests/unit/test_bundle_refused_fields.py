"""Every bundle field either does something or is refused with "not supported yet": none is accepted and ignored."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic.alias_generators import to_snake

from agen.bundle import load_bundle_files
from agen.bundle.refused import REFUSED, SUPPORTED_VALUES
from agen.bundle.schemas import SCHEMAS, render
from agen.errors import BundleError
from tests.unit.bundle_helpers import bundle_files

AGEN = Path(__file__).resolve().parents[2] / "agen"
MODEL_FILES = {
    "_base.py",
    "agent.py",
    "config.py",
    "harness.py",
    "permissions.py",
    "standard.py",
    "triggers.py",
    "schemas.py",
    "refused.py",
}
"""The files that define the bundle models: a field named only there is read by nobody."""

# Standard (Agent Plugins) files keep fields other tools own; these are metadata for people and
# editors, shown by `agen describe`-style output or not at all, and never change what agen does.
METADATA = {
    "plugin.json": {"$schema", "version", "author", "author.name", "author.email", "author.url"}
}

FILE_OF = {name: what for name, (_, what) in SCHEMAS.items()}


def _walk(
    schema: dict[str, Any], defs: dict[str, Any], prefix: str, seen: frozenset[str]
) -> list[str]:
    """Every property path of a JSON Schema (``a.b``, ``a[].b`` for lists), following $refs."""
    if "$ref" in schema:
        name = schema["$ref"].split("/")[-1]
        if name in seen:
            return []
        return _walk(defs[name], defs, prefix, seen | {name})
    out: list[str] = []
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key, []):
            out += _walk(sub, defs, prefix, seen)
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        out += _walk(schema["items"], defs, f"{prefix}[]", seen)
    if isinstance(schema.get("additionalProperties"), dict):  # maps: keys are the user's names
        out += _walk(schema["additionalProperties"], defs, prefix, seen)
    for name, sub in schema.get("properties", {}).items():
        path = f"{prefix}.{name}" if prefix else name
        out.append(path)
        out += _walk(sub, defs, path, seen)
    return out


def _sources() -> str:
    return "\n".join(
        p.read_text(encoding="utf-8")
        for p in AGEN.rglob("*.py")
        if not (p.parent.name == "bundle" and p.name in MODEL_FILES)
    )


def _read_somewhere(field: str, sources: str) -> bool:
    attr = to_snake(field.lstrip("$")).rstrip("_")
    return bool(
        re.search(
            rf"\.{re.escape(attr)}(_ms|_)?\b|[\"']{re.escape(field)}[\"']|[\"']{re.escape(attr)}[\"']",
            sources,
        )
    )


def _refused(file: str, path: str) -> bool:
    listed = REFUSED.get(file, ()) + tuple(SUPPORTED_VALUES.get(file, {}))
    return any(path == r or path.startswith((f"{r}.", f"{r}[")) for r in listed)


def test_every_schema_field_is_read_by_agen_or_refused() -> None:
    import json

    sources = _sources()
    ignored: list[str] = []
    for name in SCHEMAS:
        file = FILE_OF[name]
        schema = json.loads(render(name))
        for path in sorted(set(_walk(schema, schema.get("$defs", {}), "", frozenset()))):
            field = path.replace("[]", "").split(".")[-1]
            plain = path.replace("[]", "")
            if _refused(file, path) or plain in METADATA.get(file, set()):
                continue
            if not _read_somewhere(field, sources):
                ignored.append(f"{file}: {path}")
    assert not ignored, (
        "accepted but read nowhere in agen/ (make it work, or add it to "
        f"agen/bundle/refused.py): {ignored}"
    )


def test_the_refused_list_names_fields_the_schemas_have() -> None:
    import json

    schema = json.loads(render("config"))
    paths = set(_walk(schema, schema["$defs"], "", frozenset()))
    for path in (
        *REFUSED.get("x-agen/config.json", ()),
        *SUPPORTED_VALUES.get("x-agen/config.json", {}),
    ):
        assert path in paths, path


def test_a_field_agen_does_not_do_yet_is_refused_naming_file_and_field(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Today every field works; a field put on the list (as one was until rollover landed) is
    refused by name, whatever its value."""
    config = {"rollover": {"prompt": "Summarise."}}
    load_bundle_files(bundle_files(config=config))  # rollover works
    monkeypatch.setitem(REFUSED, "x-agen/config.json", ("rollover",))
    with pytest.raises(BundleError) as e:
        load_bundle_files(bundle_files(config=config))
    assert [
        p
        for p in e.value.problems
        if p.startswith("x-agen/config.json: rollover: not supported yet: rollover")
    ]


def test_via_a2a_without_a_url_names_a_deployment_and_loads() -> None:
    """``via: "a2a"`` by name is an agen deployment call_agent reaches through its Gateway."""
    bundle = load_bundle_files(
        bundle_files(config={"delegates": [{"name": "r", "via": "a2a", "namespace": "default"}]})
    )
    [d] = bundle.config.delegates
    assert (d.name, d.via, d.url) == ("r", "a2a", None)


def test_a_delegate_url_must_be_an_http_url() -> None:
    with pytest.raises(BundleError) as e:
        load_bundle_files(bundle_files(config={"delegates": [{"name": "r", "url": "ftp://x/a2a"}]}))
    assert (
        "x-agen/config.json: delegates[0].url: 'ftp://x/a2a' is not an http(s) URL of an A2A agent"
        in e.value.problems
    )


@pytest.mark.parametrize(("field", "value"), [("namespace", "other"), ("overrides", True)])
def test_a_url_delegate_refuses_fields_that_only_name_a_deployment(field: str, value: Any) -> None:
    entry = {"name": "r", "url": "http://127.0.0.1:9/a2a", field: value}
    with pytest.raises(BundleError) as e:
        load_bundle_files(bundle_files(config={"delegates": [entry]}))
    assert [
        p
        for p in e.value.problems
        if p.startswith(f"x-agen/config.json: delegates[0].{field}: a delegate with a url")
    ]


def test_an_a2a_delegate_with_a_url_is_accepted_with_or_without_via() -> None:
    for entry in (
        {"url": "http://127.0.0.1:9/a2a"},
        {"url": "https://agents.example/x", "via": "a2a"},
    ):
        bundle = load_bundle_files(bundle_files(config={"delegates": [{"name": "r", **entry}]}))
        assert bundle.config.delegates[0].url == entry["url"]


def test_delegates_and_delegation_limits_are_accepted() -> None:
    bundle = load_bundle_files(
        bundle_files(
            config={
                "delegates": [{"name": "r", "overrides": True, "description": "reads"}],
                "limits": {
                    "inlineWait": "5s",
                    "maxDelegationDepth": 2,
                    "maxFanOut": 3,
                    "maxTotalDelegations": 4,
                },
            }
        )
    )
    assert bundle.config.delegates[0].overrides is True
    assert bundle.config.limits.inline_wait_ms == 5000


@pytest.mark.parametrize("mode", ["followup", "collect", "steer", "interrupt"])
def test_every_queue_mode_and_empty_sections_are_accepted(mode: str) -> None:
    bundle = load_bundle_files(
        bundle_files(config={"conversations": {"queueMode": mode}, "delegates": []})
    )
    assert bundle.config.conversations.queue_mode == mode


def test_agen_up_checks_its_gateway_listen_address_before_starting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tests.cli_helpers import run_agen

    # The Gateway is real now (agen.gateway): a public or malformed address is refused up front.
    code, _, err = run_agen(capsys, "up", "--gateway-listen", "0.0.0.0:7071")
    assert code == 2 and "--gateway-listen 0.0.0.0:7071: plain HTTP listens on loopback only" in err
    code, _, err = run_agen(capsys, "up", "--gateway-listen", "7071")
    assert code == 2 and "--gateway-listen '7071': use host:port" in err


@pytest.mark.parametrize(
    ("auth", "problem"),
    [
        (
            {"tolerance": "1m"},
            'triggers[0].auth.tolerance: only scheme "timestamped" has a timestamp to check; set scheme',
        ),
        (
            {"scheme": "timestamped", "prefix": "sha256="},
            "triggers[0].auth.prefix: not used by scheme timestamped",
        ),
        (
            {"scheme": "timestamped", "encoding": "base64"},
            "triggers[0].auth.encoding: scheme timestamped signs in hex only",
        ),
    ],
)
def test_hmac_options_that_the_chosen_scheme_would_ignore_are_refused(
    auth: dict[str, Any], problem: str
) -> None:
    trigger = {
        "name": "hook",
        "type": "webhook",
        "auth": {"type": "hmac", "secret": "HOOK", **auth},
    }
    with pytest.raises(BundleError) as e:
        load_bundle_files(
            bundle_files(
                config={"triggers": [trigger]},
                secrets={"secrets": {"HOOK": {"source": "platform"}}},
            )
        )
    assert [p for p in e.value.problems if p.startswith(f"x-agen/config.json: {problem}")], (
        e.value.problems
    )
