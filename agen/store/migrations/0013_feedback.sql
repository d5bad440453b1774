-- h14: feedback, a person's (or a tool's) judgement on how a task's run went (seed 000 §7, seed 002
-- `agen feedback`). Kept with the run it rates: the run's ids, deployment and definition digest are
-- copied in so `agen feedback ls --json` exports them with no join, and a rating outlives retention.
CREATE TABLE feedback (
    id          TEXT PRIMARY KEY,
    namespace   TEXT NOT NULL,
    deployment  TEXT NOT NULL,
    run_id      TEXT NOT NULL,
    task_id     TEXT,
    digest      TEXT,                      -- the bundle definition the run ran on
    score       REAL NOT NULL CHECK (score >= -1.0 AND score <= 1.0),
    note        TEXT,
    labels      TEXT NOT NULL DEFAULT '{}',
    by          TEXT,                      -- who recorded it (token name or id)
    created_ms  INTEGER NOT NULL
);
CREATE INDEX feedback_namespace_created ON feedback(namespace, created_ms);
CREATE INDEX feedback_run ON feedback(run_id, created_ms);
