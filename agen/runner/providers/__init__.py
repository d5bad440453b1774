"""Model providers behind one port, and ``build_accounts`` which makes them from a harness.

An *account* is one provider (API key at a base URL) with its model list (the model then
its fallbackModels). The primary account comes first; harness.fallbackProviders follow and
are tried only on account errors.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from agen.bundle import Bundle
from agen.bundle.checks import bundle_path
from agen.bundle.harness import DEFAULT_KEY_SECRET, Harness, Turn
from agen.crypto.keyprint import key_fingerprint
from agen.errors import BundleError, InvalidError
from agen.runner.providers.base import ModelProvider, ModelRequest, ModelResponse, ProviderError
from agen.runner.redact import Redactor
from agen.runner.secrets import env_secret

HTTP_PROVIDERS = (
    "anthropic",
    "openai",
    "gemini",
    "openrouter",
)  # the ones with an API key and a provider hold

__all__ = [
    "Account",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "ProviderError",
    "build_accounts",
]


@dataclass
class Account:
    provider: ModelProvider
    models: list[str]
    label: str  # provider name, for spans (gen_ai.provider.name)
    key_secret: str | None = None  # with base_url: names the account a provider hold is recorded on
    base_url: str | None = None
    key_fingerprint: str | None = (
        None  # of the key value sent: a hold belongs to this key, not a changed one
    )

    def account_id(self, namespace: str) -> str | None:
        """``<namespace>/<provider>:<key secret name>[@<baseUrl>]`` (seed 000 §8); None without a key."""
        if not self.key_secret:
            return None
        base = f"{namespace}/{self.label}:{self.key_secret}"
        return f"{base}@{self.base_url.rstrip('/')}" if self.base_url else base


def _secret(bundle: Bundle, name: str | None, redactor: Redactor | None) -> str | None:
    return env_secret(bundle.secrets, name, redactor) if name else None


def _direct_key(
    bundle: Bundle,
    harness: Harness,
    key_name: str | None,
    base_url: str | None,
    redactor: Redactor | None,
) -> str | None:
    """The API key of a provider that may run keyless behind a baseUrl (a local server): read when
    the provider's own URL is used or the harness names a key secret."""
    return (
        _secret(bundle, key_name, redactor) if base_url is None or harness.api_key_secret else None
    )


def _bundle_json(bundle: Bundle, path: str, field: str) -> object:
    norm = bundle_path(path)
    if norm is None or norm not in bundle.files:
        raise BundleError(
            f"harness {field} names a missing file",
            [f"x-agen/harness.json: {field}: {path!r} is not in the bundle"],
        )
    try:
        return json.loads(bundle.files[norm])
    except ValueError as e:
        raise BundleError(f"harness {field} is not valid JSON", [f"{norm}: {e}"]) from e


async def _one(
    bundle: Bundle,
    harness: Harness,
    redactor: Redactor | None,
    *,
    fake_delay_s: float = 0.0,
) -> Account:
    # each provider module loads only when a harness picks it: the HTTP ones pull in httpx (and, through
    # it, rich and pygments), which the offline fake and replay models never need
    kind: str = harness.provider
    model = harness.model
    base_url = harness.base_url
    key_name = harness.key_secret
    timeout_s = harness.request_timeout_ms / 1000
    if kind == "auto":
        from agen.runner.providers.auto import choose, say_once

        choice = await choose(model)
        say_once(choice)
        kind, model = choice.provider, choice.model
        base_url = base_url or choice.base_url
        key_name = harness.api_key_secret or DEFAULT_KEY_SECRET.get(kind)
    provider: ModelProvider
    key_value: str | None = None
    if kind == "fake":
        from agen.runner.providers.fake import FakeProvider

        script: list[Turn] | None = None
        spec = harness.fake
        if spec is not None and spec.script is not None and not spec.echo:
            if isinstance(spec.script, str):
                data = _bundle_json(bundle, spec.script, "fake.script")
                script = [Turn.model_validate(t) for t in data] if isinstance(data, list) else []
            else:
                script = list(spec.script)
        provider = FakeProvider(script, delay_s=fake_delay_s)
        model = model or "fake"
    elif kind == "replay":
        from agen.runner.providers.replay import ReplayProvider, cassette_interactions

        assert harness.cassette is not None
        provider = ReplayProvider(
            cassette_interactions(_bundle_json(bundle, harness.cassette, "cassette"))
        )
        model = model or "replay"
    elif kind == "openrouter":
        from agen.runner.providers.openrouter import OpenRouterProvider

        key_value = _secret(bundle, key_name, redactor)
        provider = OpenRouterProvider(
            api_key=key_value,
            model=model or "",
            base_url=base_url,
            timeout_s=timeout_s,
            extras=harness.openrouter,
            router=harness.router,
            max_in_flight=harness.max_in_flight,
        )
    elif kind == "gemini":
        from agen.runner.providers.gemini import GeminiProvider

        key_value = _direct_key(bundle, harness, key_name, base_url, redactor)
        if key_value is None and key_name == DEFAULT_KEY_SECRET["gemini"] and base_url is None:
            key_value = _secret(bundle, "GOOGLE_API_KEY", redactor)  # as Google's SDK reads it
        provider = GeminiProvider(
            api_key=key_value,
            model=model or "",
            base_url=base_url,
            timeout_s=timeout_s,
            max_in_flight=harness.max_in_flight,
        )
    elif kind == "anthropic":
        from agen.runner.providers.anthropic import AnthropicProvider

        key_value = _direct_key(bundle, harness, key_name, base_url, redactor)
        provider = AnthropicProvider(
            api_key=key_value,
            model=model or "",
            base_url=base_url,
            timeout_s=timeout_s,
            spec=harness.anthropic,
            max_in_flight=harness.max_in_flight,
        )
    else:
        from agen.runner.providers.openai import OpenAIProvider

        key_value = _direct_key(bundle, harness, key_name, base_url, redactor)
        provider = OpenAIProvider(
            api_key=key_value,
            model=model or "",
            base_url=base_url,
            timeout_s=timeout_s,
            max_in_flight=harness.max_in_flight,
        )
    provider.default_model = model or provider.default_model
    key = key_name if kind in HTTP_PROVIDERS else None
    return Account(
        provider,
        [model or provider.default_model, *harness.fallback_models],
        kind,
        key,
        base_url,
        key_fingerprint(key_value),
    )


def _require_key(bundle: Bundle, account: Account) -> None:
    """A cloud provider without its key fails here, saying which variable to set (not later as 'unreachable')."""
    if (
        account.label not in HTTP_PROVIDERS
        or account.base_url is not None
        or not account.key_secret
    ):
        return
    if getattr(account.provider, "api_key", None):
        return
    var = bundle.secrets.env_var(account.key_secret)
    also = " (nor GOOGLE_API_KEY)" if var == DEFAULT_KEY_SECRET["gemini"] else ""
    raise InvalidError(
        f"bundle {bundle.name}: provider {account.label} needs an API key, and {var}{also} is not set in the "
        f'environment of agen; export {var}=..., or set "provider": "auto" in x-agen/harness.json '
        '(uses a key, a local Ollama, or the offline fake model) or "fake"',
        field="x-agen/harness.json provider",
        secret=var,
    )


async def build_accounts(
    bundle: Bundle, redactor: Redactor | None = None, *, fake_delay_s: float = 0.0
) -> list[Account]:
    """The primary account, then each harness.fallbackProviders entry built the same way."""
    harness = bundle.harness
    accounts = [await _one(bundle, harness, redactor, fake_delay_s=fake_delay_s)]
    _require_key(bundle, accounts[0])
    for fb in harness.fallback_providers:
        swapped = harness.model_copy(
            update={
                "provider": fb.provider,
                "model": fb.model,
                "fallback_models": list(fb.fallback_models),
                "base_url": fb.base_url,
                "api_key_secret": fb.api_key_secret,
                "fallback_providers": [],
            }
        )
        accounts.append(await _one(bundle, swapped, redactor, fake_delay_s=fake_delay_s))
    if bundle.config.record_interactions:
        from agen.runner.providers.replay import RecordingProvider

        for account in accounts:
            account.provider = RecordingProvider(account.provider)
    return accounts
