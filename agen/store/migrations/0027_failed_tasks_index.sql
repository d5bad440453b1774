-- A deployment's failed tasks by when they ended (issue #36): `agen ps` and the Fleet show the last
-- hour's count and the last error (agen.hub.observe.activity.recent_failures), on every Fleet load.
-- Partial: only failed tasks are in it, so it stays small and the other states never touch it.
CREATE INDEX tasks_failed_finished ON tasks(deployment_id, finished_ms) WHERE state = 'failed';
