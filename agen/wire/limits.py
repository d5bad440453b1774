"""Size limits on what callers send: API request bodies and deployed bundles.

Defaults keep one request or one bundle from filling the Hub's memory or Store; each can be
raised with an environment variable read where the limit applies (docs/security.md,
"Request and bundle size limits").
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from agen.errors import InvalidError, TooLargeError

MiB = 1 << 20
MAX_BODY_ENV = "AGEN_API_MAX_BODY_BYTES"
DEFAULT_MAX_BODY_BYTES = 1 * MiB
BUNDLE_MAX_ENV = "AGEN_BUNDLE_MAX_BYTES"
DEFAULT_BUNDLE_MAX_BYTES = 10 * MiB
BUNDLE_MAX_FILE_ENV = "AGEN_BUNDLE_MAX_FILE_BYTES"
DEFAULT_BUNDLE_MAX_FILE_BYTES = 5 * MiB
TASK_FILES_BODY_BYTES = 28 * MiB
"""The body cap of SubmitTask: 20 MiB of files (agen.domain.attachments) as base64, and the rest."""


def env_bytes(name: str, default: int) -> int:
    """A positive byte count from the environment, or ``default`` when unset."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise InvalidError(f"{name} must be a positive number of bytes (got {raw!r})", env=name)
    return value


def human(n: int) -> str:
    return f"{n / MiB:.1f} MiB" if n >= MiB else f"{n} bytes"


@dataclass(frozen=True)
class BundleLimits:
    """Most bytes one bundle may hold, in total and per file."""

    total: int = DEFAULT_BUNDLE_MAX_BYTES
    per_file: int = DEFAULT_BUNDLE_MAX_FILE_BYTES

    @classmethod
    def from_env(cls) -> BundleLimits:
        return cls(
            env_bytes(BUNDLE_MAX_ENV, DEFAULT_BUNDLE_MAX_BYTES),
            env_bytes(BUNDLE_MAX_FILE_ENV, DEFAULT_BUNDLE_MAX_FILE_BYTES),
        )

    @property
    def request_bytes(self) -> int:
        """The HTTP body a bundle this size needs: base64 grows it by a third, plus JSON framing."""
        return -(-self.total * 4 // 3) + MiB

    def check(self, files: Mapping[str, bytes]) -> None:
        """Refuse an oversize bundle, naming the file (largest first) that breaks the limit."""
        by_size = sorted(files.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        for path, data in by_size:
            if len(data) > self.per_file:
                raise TooLargeError(
                    f"bundle file {path} is {human(len(data))}; a bundle file may be at most "
                    f"{human(self.per_file)}. Keep large data out of the bundle, or raise {BUNDLE_MAX_FILE_ENV} "
                    "on the Hub",
                    field=f"files.{path}",
                    limit=self.per_file,
                    size=len(data),
                )
        total = sum(len(data) for data in files.values())
        if total > self.total:
            largest = ", ".join(f"{p} ({human(len(d))})" for p, d in by_size[:3])
            raise TooLargeError(
                f"the bundle is {human(total)} in total; a bundle may be at most {human(self.total)} "
                f"(largest files: {largest}). Keep large data out of the bundle, or raise {BUNDLE_MAX_ENV} on the Hub",
                field="files",
                limit=self.total,
                size=total,
            )
