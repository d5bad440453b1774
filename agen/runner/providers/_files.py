"""The files of a request's user messages (base.ATTACHMENTS_KEY), as each provider module reads
them: one typed view, the text form every provider can take, and the refusal when a provider or
model cannot take a file (the error names the file, its type and size, and what to do)."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from agen.domain.attachments import IMAGE_TYPES, PDF, TEXT_TYPES
from agen.runner.providers.base import ATTACHMENTS_KEY, ProviderError

__all__ = ["IMAGE_TYPES", "PDF", "TEXT_TYPES", "File", "files_of", "refuse", "without_files"]


@dataclass(frozen=True)
class File:
    name: str
    media_type: str
    size: int
    data: str  # base64

    @property
    def is_text(self) -> bool:
        return self.media_type in TEXT_TYPES

    @property
    def text(self) -> str:
        return base64.b64decode(self.data).decode("utf-8", errors="replace")

    @property
    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{self.data}"

    def framed(self) -> str:
        """A text file as text any model reads: its name, type and content."""
        return f'<file name="{self.name}" type="{self.media_type}">\n{self.text}\n</file>'

    def describe(self) -> str:
        return f"{self.name} ({self.media_type}, {self.size} bytes)"


def files_of(m: dict[str, Any]) -> list[File]:
    return [
        File(str(f["name"]), str(f["media_type"]), int(f.get("size") or 0), str(f["data"]))
        for f in m.get(ATTACHMENTS_KEY) or []
    ]


def without_files(m: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in m.items() if k != ATTACHMENTS_KEY}


def refuse(provider: str, model: str, f: File, why: str) -> ProviderError:
    """A file this provider or model cannot take: not retried (the same file fails again); the
    next fallback model or provider is tried, then the run ends saying which file and why."""
    return ProviderError(
        "other", f"{provider} cannot take the attached file {f.describe()} for {model}: {why}"
    )
