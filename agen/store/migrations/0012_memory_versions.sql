-- h15: memory you can see. Every write to a memory block keeps the value it wrote, who wrote it (a run
-- or a person) and when, so people can read a block's history and roll it back to an earlier version.
ALTER TABLE memory_blocks ADD COLUMN title TEXT;

CREATE TABLE memory_versions (
    namespace    TEXT NOT NULL,
    block_id     TEXT NOT NULL,                 -- memory_blocks.id
    version      INTEGER NOT NULL,
    value        TEXT NOT NULL,
    title        TEXT,
    description  TEXT,
    limit_chars  INTEGER NOT NULL,
    author_kind  TEXT NOT NULL CHECK (author_kind IN ('run', 'person', 'unknown')),
    author       TEXT NOT NULL,                 -- a run id, or a person's subject (token name, local-admin)
    note         TEXT,                          -- e.g. "rollback to version 3"
    created_ms   INTEGER NOT NULL,
    PRIMARY KEY (namespace, block_id, version)
);

-- Blocks written before versions were kept: their current value is the only version known.
INSERT INTO memory_versions (namespace, block_id, version, value, title, description, limit_chars, author_kind,
                             author, note, created_ms)
    SELECT namespace, id, version, value, NULL, description, limit_chars, 'unknown', 'unknown',
           'written before memory history was kept', updated_ms
    FROM memory_blocks WHERE version > 0;
