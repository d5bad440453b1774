"""Secret redaction: every registered value is scrubbed before anything is stored or shown.

The Hub (a task's input, before it is stored) and the engine (transcripts, events, tool results)
scrub with the same rules, so they live here, below both.

Also catches the common encodings of a value (base64, URL-encoded) and values split
across stream chunks (``StreamRedactor`` holds back a tail as long as the longest secret).
"""

from __future__ import annotations

import base64
import re
import threading
from typing import Any
from urllib.parse import quote, quote_plus

MASK = "[REDACTED]"
MIN_SECRET_LEN = 4


class Redactor:
    def __init__(self) -> None:
        self._values: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._lock = threading.Lock()

    def add(self, value: str | None) -> None:
        if not value or len(value) < MIN_SECRET_LEN:
            return
        forms = {value, quote(value, safe=""), quote_plus(value)}
        raw = value.encode()
        for enc in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
            text = enc.decode()
            forms.add(text)
            forms.add(text.rstrip("="))
        with self._lock:
            self._values |= {f for f in forms if len(f) >= MIN_SECRET_LEN}
            alternatives = sorted(self._values, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(v) for v in alternatives))

    @property
    def longest(self) -> int:
        return max((len(v) for v in self._values), default=0)

    def redact(self, text: str) -> str:
        pattern = self._pattern
        if pattern is None or not text:
            return text
        return pattern.sub(MASK, text)

    def redact_obj(self, obj: Any) -> Any:
        """Redact every string inside a JSON-like value."""
        if self._pattern is None:
            return obj
        if isinstance(obj, str):
            return self.redact(obj)
        if isinstance(obj, dict):
            return {self.redact(str(k)): self.redact_obj(v) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return [self.redact_obj(v) for v in obj]
        return obj


class StreamRedactor:
    """Redacts a text stream chunk by chunk, never emitting a prefix of a secret early."""

    def __init__(self, redactor: Redactor) -> None:
        self._r = redactor
        self._buf = ""

    def feed(self, chunk: str) -> str:
        self._buf += chunk
        keep = max(self._r.longest - 1, 0)
        cleaned = self._r.redact(self._buf)
        if keep == 0 or len(cleaned) <= keep:
            if keep == 0:
                self._buf = ""
                return cleaned
            self._buf = cleaned
            return ""
        out, self._buf = cleaned[:-keep], cleaned[-keep:]
        return out

    def flush(self) -> str:
        out, self._buf = self._r.redact(self._buf), ""
        return out
