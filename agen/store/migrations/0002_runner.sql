-- Runner tables (seed 000 §7): artifacts saved by agents and recorded model interactions.

-- Named, content-addressed text an agent saves (save_artifact) or a capped tool result.
CREATE TABLE artifacts (
    namespace     TEXT NOT NULL,
    id            TEXT NOT NULL,                 -- sha256:<hex> of the content
    name          TEXT NOT NULL,
    media_type    TEXT NOT NULL DEFAULT 'text/plain',
    size          INTEGER NOT NULL,
    content       TEXT NOT NULL,
    task_id       TEXT,
    run_id        TEXT,
    created_ms    INTEGER NOT NULL,
    PRIMARY KEY (namespace, id)
);
CREATE INDEX artifacts_run ON artifacts(run_id);

-- A run's recorded model interactions (config.recordInteractions), replayable as a cassette.
CREATE TABLE cassettes (
    run_id         TEXT PRIMARY KEY,
    namespace      TEXT NOT NULL,
    deployment     TEXT NOT NULL,
    digest         TEXT,
    interactions   TEXT NOT NULL,                -- [{turn, request, response}]
    created_ms     INTEGER NOT NULL,
    updated_ms     INTEGER NOT NULL
);
