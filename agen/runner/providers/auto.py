"""provider "auto": whatever works here, so a newcomer's first run works anywhere.

Order: ANTHROPIC_API_KEY → anthropic (when the harness model is a Claude model or unset; another
vendor's model goes to the next key, or to anthropic's default model when no other key is set);
OPENAI_API_KEY → openai; OPENROUTER_API_KEY → openrouter; an Ollama answering on
localhost → openai at its /v1 with the harness model if Ollama has it, else its first
model; otherwise the offline fake echo model. The choice is said on stderr once per process.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import httpx

OLLAMA_URL = "http://127.0.0.1:11434"
_said: set[str] = set()


@dataclass(frozen=True)
class AutoChoice:
    provider: str  # anthropic | openai | openrouter | fake
    model: str
    base_url: str | None
    why: str


async def ollama_models(url: str, timeout_s: float = 0.3) -> list[str] | None:
    """Model names an Ollama server at ``url`` offers (None when nothing answers)."""
    try:
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            resp = await client.get(url.rstrip("/") + "/api/tags")
        if resp.status_code != 200:
            return None
        return [str(m.get("name") or m.get("model")) for m in resp.json().get("models") or []]
    except (httpx.HTTPError, ValueError, AttributeError):
        return None


ANTHROPIC_MODEL = "claude-sonnet-5-5"  # what auto runs on ANTHROPIC_API_KEY without a harness model


def _claude(model: str | None) -> bool:
    return model is None or model.startswith("claude")


async def choose(model: str | None) -> AutoChoice:
    anthropic_key = bool(os.environ.get("ANTHROPIC_API_KEY"))
    if anthropic_key and _claude(model):
        return AutoChoice("anthropic", model or ANTHROPIC_MODEL, None, "ANTHROPIC_API_KEY is set")
    if os.environ.get("OPENAI_API_KEY"):
        return AutoChoice("openai", model or "gpt-4o-mini", None, "OPENAI_API_KEY is set")
    if os.environ.get("OPENROUTER_API_KEY"):
        return AutoChoice(
            "openrouter", model or "openrouter/auto", None, "OPENROUTER_API_KEY is set"
        )
    if anthropic_key:  # a model of another vendor (a template's gpt-4o-mini) and only this key
        return AutoChoice(
            "anthropic",
            ANTHROPIC_MODEL,
            None,
            f"ANTHROPIC_API_KEY is set and {model} is no Claude model",
        )
    url = os.environ.get("AGEN_OLLAMA_URL", OLLAMA_URL)
    names = await ollama_models(url)
    if names:
        pick = model if model in names else names[0]
        return AutoChoice("openai", pick, url.rstrip("/") + "/v1", f"Ollama answers at {url}")
    return AutoChoice(
        "fake", "fake-echo", None, "no API key in the environment and no Ollama on localhost"
    )


def say_once(choice: AutoChoice) -> None:
    line = f"agen: provider auto chose {choice.provider} ({choice.model}): {choice.why}"
    if line not in _said:
        _said.add(line)
        print(line, file=sys.stderr, flush=True)
