-- Platform secrets (seed 000 §10): bundle secrets with source "platform", per namespace, set by an admin
-- (`agen secret set`). value is sealed under AGEN_HUB_KEK (sealed:v1:..., agen.hub.sealing) when a KEK is
-- set, and the API never returns it; grants lists the deployment names (a JSON array) that may read it.
CREATE TABLE platform_secrets (
    namespace   TEXT NOT NULL,
    name        TEXT NOT NULL,
    value       TEXT NOT NULL,
    grants      TEXT NOT NULL DEFAULT '[]',
    created_ms  INTEGER NOT NULL,
    updated_ms  INTEGER NOT NULL,
    updated_by  TEXT,
    PRIMARY KEY (namespace, name)
);
