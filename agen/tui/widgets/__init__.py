"""One widget or modal dialog per file."""
