-- Queue helper (seed 000 §5 "Tasks", "Hold"): lease bookkeeping and the indexes the
-- leasing query, the scheduler tick and the sweeps rely on.

-- When the current lease was taken: an inbox row newer than this arrived while the run
-- was live, so a suspend that races it wakes at once instead of waiting forever.
ALTER TABLE tasks ADD COLUMN leased_ms INTEGER;
-- Who put a hold in place ('task' = PauseTask, 'deployment' = HoldDeployment), so
-- resuming a deployment clears only the holds it set.
ALTER TABLE tasks ADD COLUMN held_by TEXT;

-- Submission order is global and unique; MAX(seq) is one index probe.
CREATE UNIQUE INDEX tasks_seq ON tasks(seq);
-- Unfinished tasks only: the scheduler's per-deployment counts and conversation checks.
CREATE INDEX tasks_unfinished ON tasks(deployment_id, state, priority, not_before_ms, held, held_until_ms, created_ms)
    WHERE state IN ('queued', 'leased', 'running', 'waiting');
CREATE INDEX tasks_conversation_unfinished ON tasks(deployment_id, conversation_key, seq)
    WHERE conversation_key IS NOT NULL AND state IN ('queued', 'leased', 'running', 'waiting');
CREATE INDEX tasks_not_after ON tasks(not_after_ms) WHERE state = 'queued' AND not_after_ms IS NOT NULL;
CREATE INDEX tasks_held_until ON tasks(held_until_ms) WHERE held = 1;
CREATE INDEX tasks_lease_nest ON tasks(lease_nest_id) WHERE state IN ('leased', 'running');
CREATE INDEX locks_task ON locks(task_id);
