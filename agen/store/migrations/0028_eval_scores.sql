-- issue #37: an eval run's score (0.0-1.0, the weighted mean of its checks), what it used (tokens,
-- USD) and each check's verdict, so `agen eval compare` and `agen eval history` work from stored
-- evals as well as live ones. Rows written before this have no score: read as 1.0 passed, 0.0 not.
ALTER TABLE eval_runs ADD COLUMN score REAL;
ALTER TABLE eval_runs ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE eval_runs ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE eval_runs ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0;
ALTER TABLE eval_runs ADD COLUMN checks TEXT NOT NULL DEFAULT '[]';
CREATE INDEX eval_runs_digest ON eval_runs(namespace, digest, created_ms);
CREATE INDEX eval_runs_batch ON eval_runs(batch);
