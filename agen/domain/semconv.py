"""Names from the OpenTelemetry GenAI semantic conventions that agen records in its spans, where the
Store's rows, the exporter and the metrics read them alike.

agen follows the GenAI conventions as published with semantic conventions 1.44 (the
``opentelemetry-semantic-conventions`` package's gen_ai attributes; docs/observability.md). Spans
recorded by an older agen kept a name the conventions have since changed; RECORDED_BEFORE_SEMCONV
maps each current name to that old one, so what was recorded then reads as what is recorded now.
"""

from __future__ import annotations

SEMCONV_VERSION = "1.44.0"
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"

CACHE_READ = "gen_ai.usage.cache_read.input_tokens"

RECORDED_BEFORE_SEMCONV = {CACHE_READ: "gen_ai.usage.cached_input_tokens"}
"""Current attribute name -> the name agen recorded before it followed the conventions' own."""
