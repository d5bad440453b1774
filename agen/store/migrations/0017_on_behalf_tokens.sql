-- On-behalf tokens (seed 000 §10): an agent that works for people acts, per call, for the submitter of
-- the running task it names, with the intersection of both principals' scopes and namespaces.
ALTER TABLE tokens ADD COLUMN on_behalf INTEGER NOT NULL DEFAULT 0;
