"""The A2A Gateway (seed 000 §6): ``/a2a/<ns>/<deployment>`` speaks A2A JSON-RPC for a deployment.

Each A2A message becomes an agen task (its contextId the conversation, its message id the
idempotency key), so a call is durable, queued, woken, leased and recorded like any other task.
The Gateway reaches the Hub only through the API client, in the caller's own name (its bearer
token), so the Hub's scopes and namespaces apply to A2A calls as to every other door. The protocol
itself (JSON-RPC framing, SSE, the v0.3 method names, the types) is a2a-sdk's.
"""

from agen.gateway.app import GatewayConfig, create_gateway_app

__all__ = ["GatewayConfig", "create_gateway_app"]
