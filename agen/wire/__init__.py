"""The API's request and response models: the wire format every door shares.

One pydantic request and response per RPC, snake_case JSON, the same over HTTP, in-process, from
the CLI, the TUI and the Nest.

A leaf package: hub, nest, client, cli and tui import it; it imports nothing from hub, nest, cli,
tui or api, so the API registry and the Hub handlers it names no longer import each other.
"""
