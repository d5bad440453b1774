"""Which of a bundle's env secrets are unset where its instances will read them.

An instance reads an env secret from the environment of the process that runs it (``agen up``'s,
for its local Nest). A bundle deployed without it deploys fine and then fails on every task
(fleet-steward without AGEN_HUB_TOKEN), so deploy says so at once, naming the variable, what the
bundle says the secret is for, and how to set it.
"""

from __future__ import annotations

from collections.abc import Mapping

from agen.bundle.agent import Secrets


def unset_secrets(secrets: Secrets, environ: Mapping[str, str], *, where: str) -> list[str]:
    """One warning per env-sourced secret whose variable is unset or empty in ``environ``.

    ``where`` names that environment in the message (``the Hub's environment``).
    """
    out = []
    for name, spec in secrets.secrets.items():
        if spec.source != "env":
            continue
        var = secrets.env_var(name)
        if environ.get(var):
            continue
        what = f" ({spec.description.rstrip('.')})" if spec.description else ""
        out.append(
            f"secret {name}{what} is not set: {var} is {'empty' if var in environ else 'unset'} in "
            f"{where}, so every task that needs it will fail; set it (export {var}=...) in the "
            "environment `agen up` starts from, then restart `agen up`"
        )
    return out
