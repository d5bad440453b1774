-- #16 delegation: the caller's run on a child task, and the per-tree delegation counter.

-- The run that submitted a child task (call_agent / start_agent); root_run_id already exists.
ALTER TABLE tasks ADD COLUMN parent_run_id TEXT;
-- (a task's children are found through tasks_parent, made by 0018_trees)

-- limits.maxTotalDelegations: one row per delegation call of a tree (root run), keyed by the call
-- (<run>.<step>.<call>), so a retried, resumed or re-submitted call is counted once.
CREATE TABLE delegation_calls (
    root_run_id   TEXT NOT NULL,
    call_key      TEXT NOT NULL,
    task_id       TEXT,
    created_ms    INTEGER NOT NULL,
    PRIMARY KEY (root_run_id, call_key)
);

-- A delegating run reads its task's wait history on resume (time spent waiting on children).
CREATE INDEX events_task ON events(task_id, seq) WHERE task_id IS NOT NULL;
