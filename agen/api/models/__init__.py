"""Wire models of the API: one pydantic request and response per RPC, snake_case JSON."""
