-- Postgres: writers commit side by side (no fleet-wide lock), so two orders the single writer gave for free
-- come from elsewhere (DESIGN.md §4).
-- The event log: each event records its transaction id; followers read settled transactions in (xid, seq)
-- order (agen.store.event_log). Rows from before have xid 0, so they come first, in seq order. The column is
-- added with a constant default (no table rewrite), then takes each inserting transaction's id.
ALTER TABLE events ADD COLUMN xid xid8 NOT NULL DEFAULT '0';
ALTER TABLE events ALTER COLUMN xid SET DEFAULT pg_current_xact_id();
CREATE INDEX events_xid_seq ON events(xid, seq);
-- Submission order: tasks.seq from a sequence, not MAX(seq) + 1 (gaps are fine, it only orders).
CREATE SEQUENCE tasks_seq_seq OWNED BY tasks.seq;
SELECT setval('tasks_seq_seq', COALESCE((SELECT MAX(seq) FROM tasks), 0) + 1, false);
ALTER TABLE tasks ALTER COLUMN seq SET DEFAULT nextval('tasks_seq_seq');
