"""The engine: a durable agent loop (Agent -> Session -> Conversation -> Run -> Span)."""
