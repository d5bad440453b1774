-- Saturation (seed 000 §5): a Nest whose Gateway has callers waiting while every ready instance of a
-- deployment there is full says so in its heartbeat; the Hub keeps when (saturated_ms) and what it
-- asks for (saturated_want: one more than the live instances then), and the autoscaler raises the
-- deployment to that, up to max, while the report is fresh.
ALTER TABLE deployments ADD COLUMN saturated_ms INTEGER;
ALTER TABLE deployments ADD COLUMN saturated_want INTEGER;
