-- Leases lost with their host before the task's run started (issue #31): not an attempt of the task
-- (its run never ran), counted apart so a task whose lease kills its host every time still ends, at a
-- higher limit than attempts (agen/hub/queue/lease.py MAX_LOST_BEFORE_START).
ALTER TABLE tasks ADD COLUMN lost_before_start INTEGER NOT NULL DEFAULT 0;
