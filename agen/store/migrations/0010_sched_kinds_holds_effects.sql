-- h6b: deployment kinds, provider holds keyed by key value, effect_unknown that operators see.

-- An instance of a task-kind deployment leases exactly one task, ever (seed 000 §4): the Hub
-- remembers which task each such instance took, so a second lease from it gets nothing.
CREATE TABLE task_instances (
    instance_id   TEXT PRIMARY KEY,
    deployment_id TEXT NOT NULL,
    task_id       TEXT NOT NULL,
    created_ms    INTEGER NOT NULL
);
CREATE INDEX task_instances_created ON task_instances(created_ms);

-- A hold belongs to the key value it failed with: a short sha256 fingerprint of the value (never
-- the value). provider_accounts remembers the environment variable the key is read from, so the
-- Hub can tell a changed key (a new account) from the one that was refused.
ALTER TABLE provider_holds ADD COLUMN key_fingerprint TEXT;
ALTER TABLE provider_accounts ADD COLUMN key_env TEXT;

-- A resumed run that met a started-but-unconfirmed side effect (effect_unknown): someone has to
-- check what really happened. The task's flag is read through its run (runs.task_id is unique).
ALTER TABLE runs ADD COLUMN effect_unknown INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runs_effect_unknown ON runs(effect_unknown) WHERE effect_unknown = 1;
