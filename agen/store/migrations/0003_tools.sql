-- Tools: durable counters for permission rate conditions, and memory blocks.

-- One row per tool call a rate-limited permission rule counts (pruned past the longest window).
CREATE TABLE tool_rate_calls (
    namespace   TEXT NOT NULL,
    deployment  TEXT NOT NULL,
    tool        TEXT NOT NULL,
    run_id      TEXT,
    created_ms  INTEGER NOT NULL
);
CREATE INDEX tool_rate_calls_window ON tool_rate_calls(namespace, deployment, tool, created_ms);

-- Durable, namespace-scoped named text an agent reads (and, when attached so, updates).
CREATE TABLE memory_blocks (
    namespace    TEXT NOT NULL,
    id           TEXT NOT NULL,
    label        TEXT NOT NULL,
    description  TEXT,
    value        TEXT NOT NULL DEFAULT '',
    limit_chars  INTEGER NOT NULL DEFAULT 5000,
    version      INTEGER NOT NULL DEFAULT 0,
    updated_ms   INTEGER NOT NULL,
    PRIMARY KEY (namespace, id)
);
CREATE UNIQUE INDEX memory_blocks_label ON memory_blocks(namespace, label);
