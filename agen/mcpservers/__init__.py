"""MCP servers that ship with agen (``agen mcp workspace``, ``agen mcp sql``)."""
