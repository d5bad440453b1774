"""Test helpers that ship with agen: a scripted local OpenAI-compatible server, and the scaffolding
it shares with the other model-API stubs (the Anthropic and Gemini ones in tests/)."""
