"""The scenario file: an input, mocked tool results, a model, and what must hold afterwards.

    {"name": "refund", "input": "refund order 7",
     "tools": [{"name": "shop.refund", "args": {"order": 7}, "result": {"ok": true}}],
     "model": {"provider": "fake", "script": [...]},          # or "scripts" (one per run index),
                                                              # or {"provider": "replay", "interactions": [...]}
     "expect": {"status": "done", "summary": {"contains": "refunded"},
                "data": [{"path": "$.order", "equals": 7}],
                "called": [{"name": "shop.refund", "args": {"order": 7}}], "notCalled": ["shop.delete"]}}

Unknown fields are refused (a typo in an expectation must not pass as "no expectation").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from agen.bundle.harness import Turn
from agen.errors import InvalidError


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )


BUILTIN = frozenset({"finish", "report_progress", "save_artifact", "read_artifact", "load_skill"})
"""Tools every run has: they run as they are (in the scratch store) and are never mocked."""


def wire(name: str) -> str:
    """The model-facing name of a tool (``shop.refund`` and ``shop_refund`` are the same tool)."""
    return name.replace(".", "_")


class MockedTool(_Model):
    """One canned answer for a tool, optionally only for calls whose arguments include ``args``."""

    name: str = Field(min_length=1)
    args: dict[str, Any] | None = None
    result: Any = ""
    is_error: bool = False
    description: str = ""
    parameters: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _not_builtin(self) -> MockedTool:
        if wire(self.name) in BUILTIN:
            raise ValueError(
                f"{self.name} is a built-in tool: it runs as it is and cannot be mocked"
            )
        return self

    def matches(self, name: str, args: dict[str, Any]) -> bool:
        return wire(self.name) == wire(name) and (self.args is None or subset(self.args, args))

    def content(self) -> str:
        return (
            self.result
            if isinstance(self.result, str)
            else json.dumps(self.result, ensure_ascii=False)
        )


class ScenarioModel(_Model):
    """Which model answers: the fake provider scripted (per run index with ``scripts``) or a cassette."""

    provider: Literal["fake", "replay"]
    script: list[Turn] | None = None
    scripts: list[list[Turn]] | None = None
    interactions: list[dict[str, Any]] | None = None

    @model_validator(mode="after")
    def _one_source(self) -> ScenarioModel:
        if self.provider == "fake" and (self.script is None) == (self.scripts is None):
            raise ValueError(
                'provider "fake" takes exactly one of "script" or "scripts" (one script per run)'
            )
        if self.provider == "replay" and self.interactions is None:
            raise ValueError('provider "replay" needs "interactions" (a recorded cassette)')
        return self

    def script_for(self, run_index: int) -> list[Turn]:
        if self.scripts:
            return self.scripts[run_index % len(self.scripts)]
        return list(self.script or [])


class TextCheck(_Model):
    equals: str | None = None
    contains: list[str] = []
    not_contains: list[str] = []

    @model_validator(mode="before")
    @classmethod
    def _listify(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            for key in ("contains", "notContains"):
                if isinstance(data.get(key), str):
                    data[key] = [data[key]]
        return data


class DataCheck(_Model):
    """A value in the outcome's data by JSON path (``$.a.b[0]``), equal to or containing a value."""

    path: str = Field(pattern=r"^\$")
    equals: Any = None
    contains: str | None = None
    exists: bool | None = None


class CallCheck(_Model):
    name: str = Field(min_length=1)
    args: dict[str, Any] | None = None


class Expect(_Model):
    status: str | None = None
    summary: TextCheck | None = None
    data: list[DataCheck] = []
    called: list[CallCheck] = []
    not_called: list[str] = []


class Scenario(_Model):
    name: str = ""
    input: str
    tools: list[MockedTool] = []
    model: ScenarioModel | None = None
    expect: Expect = Expect()


def subset(want: Any, have: Any) -> bool:
    """``want`` is contained in ``have``: dict keys recursively, other values equal."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(
            k in have and subset(v, have[k]) for k, v in want.items()
        )
    return bool(want == have)


def load_scenario(path: Path) -> Scenario:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InvalidError(f"scenario {path}: not readable JSON ({e})", field=str(path)) from None
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise InvalidError(f"scenario {path}: {where}: {first['msg']}", field=str(path)) from None
    return scenario if scenario.name else scenario.model_copy(update={"name": path.stem})


def load_scenarios(where: Path) -> list[Scenario]:
    """One file, or every ``*.json`` in a folder (sorted by name)."""
    if where.is_file():
        return [load_scenario(where)]
    if not where.is_dir():
        raise InvalidError(
            f"scenarios: {where} is neither a scenario file nor a folder of them",
            field="--scenarios",
        )
    files = sorted(where.glob("*.json"))
    if not files:
        raise InvalidError(f"scenarios: {where} has no *.json scenario files", field="--scenarios")
    scenarios = [load_scenario(f) for f in files]
    names = [s.name for s in scenarios]
    dup = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if dup is not None:
        raise InvalidError(
            f"scenarios: two scenarios in {where} are named {dup!r}", field="--scenarios"
        )
    return scenarios
