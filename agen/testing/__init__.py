"""Test helpers that ship with agen: a scripted local OpenAI-compatible server."""
