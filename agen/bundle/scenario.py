"""The eval scenario file (``x-agen/evals/*.json``): an input or a conversation, mocked tool
results, a model, and what must hold afterwards (``expect`` lines and scored ``checks``, see
agen/bundle/scenario_checks.py). Run by agen/evals; the models live here, beside the other bundle
files, so its JSON Schema is generated with theirs (spec/bundle/scenario.schema.json).

    {"name": "refund", "input": "refund order 7",
     "tools": [{"name": "shop.refund", "args": {"order": 7}, "result": {"ok": true}}],
     "model": {"provider": "fake", "script": [...]},          # or "scripts" (one per run index),
                                                              # or {"provider": "replay", "interactions": [...]}
     "expect": {"status": "done", "summary": {"contains": "refunded"},
                "data": [{"path": "$.order", "equals": 7}],
                "called": [{"name": "shop.refund", "args": {"order": 7}}], "notCalled": ["shop.delete"]},
     "checks": [{"type": "rubric", "rubric": "says what was refunded", "threshold": 0.7}]}

A conversation: ``"turns": [{"input": "…", "signals": [...], "expect": {...}, "checks": [...]}, …]``
instead of ``input``; each turn's checks run once it is answered, the top-level ones at the end.

Unknown fields are refused (a typo in an expectation must not pass as "no expectation").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from agen.bundle.harness import Turn
from agen.bundle.scenario_checks import Check, EvalModel
from agen.errors import InvalidError

BUILTIN = frozenset({"finish", "report_progress", "save_artifact", "read_artifact", "load_skill"})
"""Tools every run has: they run as they are (in the scratch store) and are never mocked."""


def wire(name: str) -> str:
    """The model-facing name of a tool (``shop.refund`` and ``shop_refund`` are the same tool)."""
    return name.replace(".", "_")


class MockedTool(EvalModel):
    """One canned answer for a tool, optionally only for calls whose arguments include ``args``."""

    name: str = Field(
        min_length=1,
        description="the tool (server.tool, as the bundle names it); built-ins cannot be mocked",
    )
    args: dict[str, Any] | None = Field(
        None, description="answer only calls whose arguments include these; unset: every call"
    )
    result: Any = Field("", description="what the tool returns (text, or JSON sent as its text)")
    is_error: bool = Field(False, description="the result is a tool error")
    description: str = Field(
        "",
        description="the tool description the model sees (default: from the bundle or a cassette)",
    )
    parameters: dict[str, Any] | None = Field(
        None, description="the tool's JSON Schema the model sees"
    )

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


class ScenarioModel(EvalModel):
    """Which model answers: the fake provider scripted (per run index with ``scripts``) or a cassette."""

    provider: Literal["fake", "replay"] = Field(
        description='"fake" (scripted) or "replay" (a recorded cassette)'
    )
    script: list[Turn] | None = Field(
        None, description="fake: the answers in order (a conversation uses them across its turns)"
    )
    scripts: list[list[Turn]] | None = Field(
        None, description="fake: one script per run index (run i uses scripts[i % n])"
    )
    interactions: list[dict[str, Any]] | None = Field(
        None, description="replay: the recorded cassette (`agen replay --export` writes one)"
    )

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


class TextCheck(EvalModel):
    equals: str | None = Field(None, description="the summary is exactly this")
    contains: list[str] = Field([], description="texts the summary must contain")
    not_contains: list[str] = Field([], description="texts the summary must not contain")

    @model_validator(mode="before")
    @classmethod
    def _listify(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            for key in ("contains", "notContains"):
                if isinstance(data.get(key), str):
                    data[key] = [data[key]]
        return data


class DataCheck(EvalModel):
    """A value in the outcome's data by JSON path (``$.a.b[0]``), equal to or containing a value."""

    path: str = Field(pattern=r"^\$", description="a JSON path into the outcome's data ($.a.b[0])")
    equals: Any = Field(None, description="the value there equals this")
    contains: str | None = Field(None, description="the value there (as text) contains this")
    exists: bool | None = Field(None, description="the path is there (true) or not (false)")


class CallCheck(EvalModel):
    name: str = Field(min_length=1, description="the tool (server.tool)")
    args: dict[str, Any] | None = Field(None, description="arguments the call must include")


class Expect(EvalModel):
    status: str | None = Field(
        None, description="the outcome status: done, partial, failed, needs_input"
    )
    summary: TextCheck | None = Field(None, description="checks on the outcome's summary")
    data: list[DataCheck] = Field([], description="checks on values in the outcome's data")
    called: list[CallCheck] = Field([], description="tools that must have been called")
    not_called: list[str] = Field([], description="tools that must not have been called")


class Signal(EvalModel):
    """A message that reaches the run while it works: another task's signal, or a steer (new input)."""

    kind: Literal["signal", "steer"] = Field(
        "signal",
        description='"signal" (another task\'s signal_agent) or "steer" (new input for the conversation)',
    )
    message: str = Field(
        min_length=1, description="what the run reads before its first model call of the turn"
    )
    from_task: str | None = Field(None, description="signal: the sending task's id, as shown")


class UserTurn(EvalModel):
    """One user message of a multi-turn scenario, with what must hold once it is answered."""

    input: str = Field(description="the user message")
    signals: list[Signal] = Field([], description="messages that arrive while this turn runs")
    expect: Expect = Field(Expect(), description="must hold once this turn is answered")
    checks: list[Check] = Field([], description="scored checks run once this turn is answered")


class Scenario(EvalModel):
    """``input`` (one message) or ``turns`` (a conversation); ``expect``/``checks`` hold at the end."""

    name: str = Field("", description="shown in reports (default: the file name)")
    description: str | None = Field(None, description="where it came from, what it guards")
    input: str | None = Field(None, description="the one user message (or use turns)")
    turns: list[UserTurn] | None = Field(
        None,
        min_length=1,
        description="a conversation: user messages in order, each with its own checks",
    )
    signals: list[Signal] = Field([], description="with input: messages that arrive while it runs")
    tools: list[MockedTool] = Field(
        [],
        description="canned tool results; a call nothing here answers is an error the model reads",
    )
    model: ScenarioModel | None = Field(
        None, description="who answers; unset: the bundle's own provider"
    )
    expect: Expect = Field(
        Expect(), description="must hold at the end (one check: every line holds)"
    )
    checks: list[Check] = Field(
        [], description="scored checks run at the end; the scenario score is their weighted mean"
    )

    @model_validator(mode="after")
    def _input_or_turns(self) -> Scenario:
        if (self.input is None) == (self.turns is None):
            raise ValueError('a scenario takes exactly one of "input" or "turns"')
        if self.turns is not None and self.signals:
            raise ValueError('with "turns", put "signals" on the turn they arrive in')
        if self.turns is not None and self.model is not None and self.model.provider == "replay":
            raise ValueError(
                'not supported yet: a multi-turn scenario answered by a "replay" cassette '
                '(use "fake" scripts or the bundle\'s own model)'
            )
        return self

    @property
    def conversation(self) -> list[UserTurn]:
        """The user turns in order; a single-input scenario is one turn (its checks run at the end)."""
        if self.turns is not None:
            return self.turns
        return [UserTurn(input=self.input or "", signals=self.signals)]


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
