"""One screen per file; each is reachable by one key and from the command palette."""
