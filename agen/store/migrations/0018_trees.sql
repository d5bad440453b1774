-- trees (#16 items 8-10): numbered 0018 in the plan; 0015 on this branch because migrations must not
-- have gaps (renumber at merge; the text does not depend on its number).

-- A task's direct children, for on_parent_end's cascade when it ends and for `agen tree`.
CREATE INDEX tasks_parent ON tasks(parent_task_id) WHERE parent_task_id IS NOT NULL;

-- A graceful cancel (CancelTask mode graceful, or an interrupt submission) gives a running task a
-- wrap-up turn until this time; past it the leader stops the task for good. Durable, so a cancel
-- asked for just before a crash still ends the task after a restart.
ALTER TABLE tasks ADD COLUMN cancel_at_ms INTEGER;
CREATE INDEX tasks_cancel_at ON tasks(cancel_at_ms) WHERE cancel_at_ms IS NOT NULL;

-- The "collect" queue mode merges a submission into the conversation's queued task; the merged
-- submission's idempotency key is kept here, so resubmitting it returns that task again instead of
-- merging its input a second time.
CREATE TABLE task_merge_keys (
    namespace        TEXT NOT NULL,
    deployment_id    TEXT NOT NULL,
    idempotency_key  TEXT NOT NULL,
    task_id          TEXT NOT NULL,
    created_ms       INTEGER NOT NULL,
    PRIMARY KEY (namespace, deployment_id, idempotency_key)
);
