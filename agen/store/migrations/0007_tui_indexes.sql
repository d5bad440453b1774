-- Tasks of one deployment, newest first (the TUI's Tasks screen opened from a Fleet row, `agen tasks
-- --deployment`): without it the newest-first walk over every task of the namespace reads all of them
-- for a deployment with few (100k tasks: ~50 ms per load). The deployment never changes, so leasing
-- and finishing do not touch it; only an insert adds an entry.
CREATE INDEX tasks_namespace_deployment_created ON tasks(namespace, deployment, created_ms);
