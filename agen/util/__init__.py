"""Small helpers every layer of agen shares, each one concept and stdlib (or uvicorn) only.

``duration`` (Go-style durations), ``home`` (AGEN_HOME and its private files), ``listen`` (the TCP
sockets agen binds for its servers), ``logrepeat`` (a repeated log line said once). Nothing here
imports another part of agen but ``agen.errors``: this is the bottom layer.
"""
