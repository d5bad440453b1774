"""agen: run LLM agents locally, durably."""

__version__ = "0.1.0"
