"""OpenTelemetry for agen: recorded spans out over OTLP/HTTP, W3C traceparent in, Prometheus text.

The Store's ``spans`` table stays the one source of truth: the exporter (``exporter.py``) follows
finished runs and sends their recorded spans with their recorded ids and times. The OpenTelemetry
SDK is imported only when export is configured (``AGEN_OTLP_ENDPOINT``) or OTLP JSON is asked for,
so an ``agen`` without the ``otel`` extra starts exactly as before.
"""
