-- (numbered 0011 in the plan; 0008 on this branch because migrations must not have gaps: renumber at merge)
-- Rejected webhook calls are aggregated: one trigger_events row per trigger per minute whose count
-- grows with each further rejection, so a flood of junk requests adds a row a minute, not a row each.
ALTER TABLE trigger_events ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
