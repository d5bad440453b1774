"""provider "auto": whatever works here, so a newcomer's first run works anywhere.

Order (docs/providers.md): the API keys, Anthropic, OpenAI, Gemini, OpenRouter; then an Ollama
answering on localhost; then the offline fake echo model. A key is taken when the harness model is
that vendor's (``claude-...`` for Anthropic, ``gemini-...``/``gemma-...`` for Gemini, any other
plain name for OpenAI, anything for OpenRouter) or unset (then the vendor's current model, MODELS);
when no set key fits the model, the first set key runs its own current model. Ollama runs the
harness model if it has it, else its first model. The choice is said on stderr once per process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

import httpx

OLLAMA_URL = "http://127.0.0.1:11434"
_said: set[str] = set()


@dataclass(frozen=True)
class AutoChoice:
    provider: str  # anthropic | openai | gemini | openrouter | fake
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


MODELS = {
    "anthropic": "claude-sonnet-5-5",
    "openai": "gpt-5.4-mini",
    "gemini": "gemini-3.5-flash",
    "openrouter": "openrouter/auto",
}
"""What auto runs on each key when the harness names no model of that vendor: current models."""
ANTHROPIC_MODEL = MODELS["anthropic"]
VENDOR = {"anthropic": "Claude", "openai": "OpenAI", "gemini": "Gemini", "openrouter": "OpenRouter"}


def _claude(model: str) -> bool:
    return model.startswith("claude")


def _gemini(model: str) -> bool:
    return model.startswith(("gemini", "gemma", "models/gemini"))


def _openai(model: str) -> bool:
    return "/" not in model and not _claude(model) and not _gemini(model)


KEYS: list[tuple[str, tuple[str, ...], Callable[[str], bool]]] = [
    ("anthropic", ("ANTHROPIC_API_KEY",), _claude),
    ("openai", ("OPENAI_API_KEY",), _openai),
    ("gemini", ("GEMINI_API_KEY", "GOOGLE_API_KEY"), _gemini),
    ("openrouter", ("OPENROUTER_API_KEY",), lambda _model: True),
]
"""Each keyed provider, the variables its key is read from, and which models are its own."""


async def choose(model: str | None) -> AutoChoice:
    keyed = [
        (provider, var, fits)
        for provider, names, fits in KEYS
        for var in [next((n for n in names if os.environ.get(n)), None)]
        if var is not None
    ]
    for provider, var, fits in keyed:
        if model is None or fits(model):
            return AutoChoice(provider, model or MODELS[provider], None, f"{var} is set")
    if keyed:  # a model of another vendor (a gemini-... name) and only other keys
        provider, var, _ = keyed[0]
        return AutoChoice(
            provider,
            MODELS[provider],
            None,
            f"{var} is set and {model} is no {VENDOR[provider]} model",
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
