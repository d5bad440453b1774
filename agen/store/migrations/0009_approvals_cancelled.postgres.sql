-- Postgres form of 0009_approvals_cancelled.sql: Postgres changes a CHECK constraint in place, so the
-- approvals table is altered, not rebuilt (no copy of every approval).
ALTER TABLE approvals DROP CONSTRAINT approvals_state_check;
ALTER TABLE approvals ADD CONSTRAINT approvals_state_check CHECK (state IN
    ('pending', 'approved', 'denied', 'expired', 'cancelled'));
CREATE INDEX approvals_task ON approvals(task_id, state);
-- Approvals left pending by tasks that already ended (before this release cancelling did not close them).
UPDATE approvals SET state = 'cancelled', decided_ms = (SELECT t.finished_ms FROM tasks t WHERE t.id = approvals.task_id),
       note = 'its task ' || task_id || ' had already ended'
    WHERE state = 'pending'
      AND task_id IN (SELECT id FROM tasks WHERE state IN ('succeeded', 'failed', 'cancelled', 'expired'));
