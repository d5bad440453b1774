-- h13: every eval run kept, so `agen eval --history <bundle>` shows the trend per bundle digest.
CREATE TABLE eval_runs (
    id            TEXT PRIMARY KEY,
    namespace     TEXT NOT NULL,
    bundle        TEXT NOT NULL,                 -- the bundle's name
    digest        TEXT NOT NULL,                 -- sha256 of the bundle evaluated
    batch         TEXT NOT NULL,                 -- one `agen eval` invocation
    scenario      TEXT NOT NULL,
    run_index     INTEGER NOT NULL,
    passed        INTEGER NOT NULL,
    failures      TEXT NOT NULL DEFAULT '[]',    -- JSON list of readable lines
    duration_ms   INTEGER NOT NULL DEFAULT 0,
    created_ms    INTEGER NOT NULL
);
CREATE INDEX eval_runs_bundle ON eval_runs(namespace, bundle, created_ms);
