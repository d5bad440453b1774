"""The OS sandbox for what an agent starts: its workspace ``run`` commands and stdio MCP servers.

On Linux each is started under bubblewrap (bwrap.py): the workspace is the only writable path,
system folders are read-only, ``$HOME`` and ``/tmp`` are empty, every namespace is private (no
network, own PID namespace) and nothing outlives the command. Network, when a bundle allows hosts,
goes only through an egress proxy (proxy.py) that agen runs and that checks every host against the
allowlist (policy.host_allowed); bridge.py carries it into the sandbox. This package imports only
the standard library: bridge.py runs inside the sandbox, started for every such command.
"""
