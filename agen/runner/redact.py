"""Secret redaction for the engine: the rules are agen.domain.redact's, shared with the Hub."""

from __future__ import annotations

from agen.domain.redact import MASK, MIN_SECRET_LEN, Redactor, StreamRedactor

__all__ = ["MASK", "MIN_SECRET_LEN", "Redactor", "StreamRedactor"]
