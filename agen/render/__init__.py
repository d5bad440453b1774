"""Rendering shared by the CLI and the TUI: rich renderings of runs, transcripts, traces and activity.

Its own package so that neither door imports the other: ``agen.cli`` and ``agen.tui`` both import
``agen.render``, which imports only ``agen.wire`` (for types) and rich.
"""
