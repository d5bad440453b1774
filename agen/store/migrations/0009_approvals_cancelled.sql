-- Approvals of a task that ended (cancelled, failed, expired) are closed as 'cancelled', so they can
-- no longer be approved. SQLite cannot change a CHECK constraint in place: the table is rebuilt.
CREATE TABLE approvals_new (
    id              TEXT PRIMARY KEY,
    namespace       TEXT NOT NULL,
    deployment      TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    task_id         TEXT,
    call_id         TEXT,
    tool            TEXT NOT NULL,
    arguments       TEXT NOT NULL,        -- redacted before it is written
    args_hash       TEXT NOT NULL,
    requested_by    TEXT,
    state           TEXT NOT NULL DEFAULT 'pending' CHECK (state IN
                      ('pending', 'approved', 'denied', 'expired', 'cancelled')),
    decided_by      TEXT,
    decided_ms      INTEGER,
    note            TEXT,
    created_ms      INTEGER NOT NULL
);
INSERT INTO approvals_new (id, namespace, deployment, run_id, task_id, call_id, tool, arguments, args_hash,
                           requested_by, state, decided_by, decided_ms, note, created_ms)
    SELECT id, namespace, deployment, run_id, task_id, call_id, tool, arguments, args_hash,
           requested_by, state, decided_by, decided_ms, note, created_ms FROM approvals;
DROP TABLE approvals;
ALTER TABLE approvals_new RENAME TO approvals;
CREATE UNIQUE INDEX approvals_one_pending ON approvals(run_id, tool, args_hash) WHERE state = 'pending';
CREATE INDEX approvals_namespace_state ON approvals(namespace, state, created_ms);
CREATE INDEX approvals_task ON approvals(task_id, state);
-- Approvals left pending by tasks that already ended (before this release cancelling did not close them).
UPDATE approvals SET state = 'cancelled', decided_ms = (SELECT t.finished_ms FROM tasks t WHERE t.id = approvals.task_id),
       note = 'its task ' || task_id || ' had already ended'
    WHERE state = 'pending'
      AND task_id IN (SELECT id FROM tasks WHERE state IN ('succeeded', 'failed', 'cancelled', 'expired'));
