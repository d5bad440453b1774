-- Triggers, notifications, admission control and provider accounts (seed 000 §5, §8, §11; seed 004).

-- Event triggers with on.count hold matching seqs here until the count is reached within on.within.
ALTER TABLE trigger_cursors ADD COLUMN pending TEXT NOT NULL DEFAULT '[]';   -- [[seq, created_ms], ...]

-- Where the Hub POSTs a namespace's events; delivered in seq order from cursor_seq.
CREATE TABLE notify_targets (
    id                 TEXT PRIMARY KEY,
    namespace          TEXT NOT NULL,
    name               TEXT NOT NULL,
    url                TEXT NOT NULL,
    events             TEXT NOT NULL DEFAULT '[]',   -- type filters ("task." = every task event); [] = all
    deployment         TEXT,
    labels             TEXT NOT NULL DEFAULT '{}',
    severity           TEXT,                         -- at least this severe
    secret             TEXT,                         -- platform secret name used to sign (HMAC-SHA256)
    cursor_seq         INTEGER NOT NULL,
    paused_until_ms    INTEGER,
    backoff_ms         INTEGER NOT NULL DEFAULT 0,
    failing_since_ms   INTEGER,                      -- first failure of the event at the cursor
    last_error         TEXT,
    delivered          INTEGER NOT NULL DEFAULT 0,
    dropped            INTEGER NOT NULL DEFAULT 0,
    created_ms         INTEGER NOT NULL,
    updated_ms         INTEGER NOT NULL,
    UNIQUE (namespace, name)
);

-- Admission control: one token bucket per deployment (ratePerMinute refill, burst capacity).
CREATE TABLE admission_buckets (
    deployment_id   TEXT PRIMARY KEY,
    tokens          REAL NOT NULL,
    updated_ms      INTEGER NOT NULL
);

-- Which provider accounts a deployment's harness uses (<ns>/<provider>:<key secret>[@<baseUrl>]).
CREATE TABLE provider_accounts (
    deployment_id   TEXT NOT NULL,
    account         TEXT NOT NULL,
    PRIMARY KEY (deployment_id, account)
);
CREATE INDEX provider_accounts_account ON provider_accounts(account);

CREATE INDEX trigger_events_trigger ON trigger_events(deployment_id, trigger_name, created_ms);
CREATE INDEX tasks_source ON tasks(deployment_id, source, state);
