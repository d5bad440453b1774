-- The Hub's own keys (its TLS CA), shared by every Hub on the store; sealed under AGEN_HUB_KEK when set.
CREATE TABLE hub_keys (
    name        TEXT PRIMARY KEY,
    value       TEXT NOT NULL,
    created_ms  INTEGER NOT NULL
);
