"""The Textual TUI (`agen tui`, and `agen up` in a terminal): a client of the Hub API only."""
