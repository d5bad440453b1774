-- agen core schema (seed 000 §12). Append-only: never edit this file once shipped; add 0002_*.sql.
-- Times are integer milliseconds UTC (*_ms); ids are ULIDs; JSON columns hold pydantic dumps.

-- Content-addressed bundle versions: id = name@sha256:<hex>.
CREATE TABLE definitions (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    digest        TEXT NOT NULL,
    files         BLOB NOT NULL,          -- the bundle's files (agen.bundle archive format)
    size          INTEGER NOT NULL,
    created_ms    INTEGER NOT NULL
);
CREATE INDEX definitions_name ON definitions(name, created_ms);

-- Desired state of one agent in one namespace.
CREATE TABLE deployments (
    id                TEXT PRIMARY KEY,
    namespace         TEXT NOT NULL,
    name              TEXT NOT NULL,
    kind              TEXT NOT NULL CHECK (kind IN ('singleton', 'pool', 'task')),
    definition_id     TEXT NOT NULL REFERENCES definitions(id),
    digest            TEXT NOT NULL,
    scale             TEXT NOT NULL,      -- {min,max,target_queue_per_instance,idle_timeout_ms,max_concurrency,reserve}
    placement         TEXT NOT NULL DEFAULT '{}',
    budget            TEXT NOT NULL DEFAULT '{}',
    limits            TEXT NOT NULL DEFAULT '{}',
    policy            TEXT NOT NULL DEFAULT '{}', -- admission, conversations, triggers summary...
    desired           INTEGER NOT NULL DEFAULT 0,
    paused            INTEGER NOT NULL DEFAULT 0,
    pause_reason      TEXT,
    last_activity_ms  INTEGER NOT NULL,
    manual_scale_ms   INTEGER,
    created_ms        INTEGER NOT NULL,
    updated_ms        INTEGER NOT NULL,
    UNIQUE (namespace, name)
);

-- Enrolled execution environments.
CREATE TABLE nests (
    id                 TEXT PRIMARY KEY,
    name               TEXT NOT NULL UNIQUE,
    labels             TEXT NOT NULL DEFAULT '{}',
    capacity           INTEGER NOT NULL DEFAULT 0,   -- 0 = unlimited
    state              TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'lost', 'revoked')),
    gateway_url        TEXT,
    last_heartbeat_ms  INTEGER NOT NULL,
    created_ms         INTEGER NOT NULL
);

-- Scheduler output: how many instances of a deployment a Nest should run.
CREATE TABLE assignments (
    deployment_id   TEXT NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
    nest_id         TEXT NOT NULL REFERENCES nests(id) ON DELETE CASCADE,
    count           INTEGER NOT NULL,
    digest          TEXT NOT NULL,
    leader_epoch    INTEGER NOT NULL,
    updated_ms      INTEGER NOT NULL,
    PRIMARY KEY (deployment_id, nest_id)
);

-- Live instances as reported by their Manager.
CREATE TABLE instances (
    id              TEXT PRIMARY KEY,
    nest_id         TEXT NOT NULL REFERENCES nests(id) ON DELETE CASCADE,
    deployment_id   TEXT NOT NULL,
    digest          TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('starting', 'ready', 'busy', 'draining', 'stopped', 'failed')),
    in_flight       INTEGER NOT NULL DEFAULT 0,
    health          TEXT NOT NULL DEFAULT '{}',
    exit_reason     TEXT,
    started_ms      INTEGER NOT NULL,
    updated_ms      INTEGER NOT NULL
);
CREATE INDEX instances_deployment ON instances(deployment_id, state);

-- The durable task queue (seed 000 §5 "Tasks").
CREATE TABLE tasks (
    id                      TEXT PRIMARY KEY,
    namespace               TEXT NOT NULL,
    deployment_id           TEXT NOT NULL,
    deployment              TEXT NOT NULL,
    state                   TEXT NOT NULL CHECK (state IN
                              ('queued', 'leased', 'running', 'waiting', 'succeeded', 'failed', 'cancelled', 'expired')),
    input                   TEXT NOT NULL,
    source                  TEXT NOT NULL DEFAULT 'api',
    conversation_key        TEXT,
    labels                  TEXT NOT NULL DEFAULT '{}',
    priority                INTEGER NOT NULL DEFAULT 2,   -- 0 urgent, 1 high, 2 normal, 3 background
    idempotency_key         TEXT,
    schedule_key            TEXT,
    not_before_ms           INTEGER,
    not_after_ms            INTEGER,
    attempts                INTEGER NOT NULL DEFAULT 0,
    lease_id                TEXT,
    lease_nest_id           TEXT,
    lease_instance_id       TEXT,
    lease_expires_ms        INTEGER,
    wait_reason             TEXT,
    wait_for                TEXT,
    held                    INTEGER NOT NULL DEFAULT 0,
    held_until_ms           INTEGER,
    hold_reason             TEXT,
    progress                TEXT,
    outcome                 TEXT,
    error                   TEXT,
    trust                   TEXT NOT NULL DEFAULT 'trusted' CHECK (trust IN ('operator', 'trusted', 'untrusted')),
    model_tier              TEXT,
    overrides               TEXT,
    parent_task_id          TEXT,
    root_task_id            TEXT NOT NULL,
    depth                   INTEGER NOT NULL DEFAULT 0,
    root_run_id             TEXT,
    reply_deployment        TEXT,
    reply_conversation_key  TEXT,
    on_parent_end           TEXT NOT NULL DEFAULT 'cancel',
    event_chain             INTEGER NOT NULL DEFAULT 0,
    submitted_by            TEXT,
    seq                     INTEGER NOT NULL,             -- submission order
    created_ms              INTEGER NOT NULL,
    started_ms              INTEGER,
    finished_ms             INTEGER,
    updated_ms              INTEGER NOT NULL
);
CREATE UNIQUE INDEX tasks_idempotency ON tasks(namespace, deployment_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE UNIQUE INDEX tasks_one_queued_per_schedule_key ON tasks(deployment_id, schedule_key)
    WHERE schedule_key IS NOT NULL AND state = 'queued';
CREATE INDEX tasks_queue ON tasks(deployment_id, priority, seq) WHERE state = 'queued';
CREATE INDEX tasks_conversation ON tasks(deployment_id, conversation_key, seq)
    WHERE conversation_key IS NOT NULL;
CREATE INDEX tasks_lease_expiry ON tasks(lease_expires_ms) WHERE state IN ('leased', 'running');
CREATE INDEX tasks_namespace_created ON tasks(namespace, created_ms);
CREATE INDEX tasks_root ON tasks(root_task_id);

-- Locks a task declared (granted all at once), what is granted now, and the durable fence counter.
CREATE TABLE task_locks (
    task_id   TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    name      TEXT NOT NULL,
    PRIMARY KEY (task_id, name)
);
CREATE TABLE locks (
    namespace    TEXT NOT NULL,
    name         TEXT NOT NULL,
    task_id      TEXT NOT NULL,
    fence        INTEGER NOT NULL,
    expires_ms   INTEGER NOT NULL,
    PRIMARY KEY (namespace, name)
);
CREATE TABLE lock_fences (
    namespace      TEXT NOT NULL,
    name           TEXT NOT NULL,
    fence          INTEGER NOT NULL,
    last_task_id   TEXT NOT NULL,
    PRIMARY KEY (namespace, name)
);

-- What happened for a waiting task while it waited (child results, signals, cancel, steer).
CREATE TABLE run_inbox (
    id            TEXT PRIMARY KEY,
    task_id       TEXT NOT NULL,
    kind          TEXT NOT NULL,
    ref           TEXT,
    payload       TEXT,
    created_ms    INTEGER NOT NULL,
    consumed_ms   INTEGER
);
CREATE INDEX run_inbox_task ON run_inbox(task_id, consumed_ms);

-- Triggers declared by a deployment's current definition, and what they did.
CREATE TABLE triggers (
    id                TEXT PRIMARY KEY,
    deployment_id     TEXT NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
    name              TEXT NOT NULL,
    type              TEXT NOT NULL CHECK (type IN ('cron', 'random', 'webhook', 'event')),
    spec              TEXT NOT NULL,
    secret_hash       TEXT,
    active_since_ms   INTEGER NOT NULL,
    next_due_ms       INTEGER,
    last_due_ms       INTEGER,
    UNIQUE (deployment_id, name)
);
CREATE TABLE trigger_events (
    id              TEXT PRIMARY KEY,
    namespace       TEXT NOT NULL,
    deployment_id   TEXT NOT NULL,
    trigger_name    TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('fired', 'missed', 'skipped', 'rejected')),
    due_ms          INTEGER,
    task_id         TEXT,
    reason          TEXT,
    created_ms      INTEGER NOT NULL
);
CREATE UNIQUE INDEX trigger_events_once ON trigger_events(deployment_id, trigger_name, due_ms)
    WHERE due_ms IS NOT NULL;
CREATE INDEX trigger_events_deployment ON trigger_events(deployment_id, created_ms);
CREATE TABLE trigger_cursors (
    trigger_id   TEXT PRIMARY KEY REFERENCES triggers(id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL
);

-- Durable approvals: at most one pending per run, tool and arguments.
CREATE TABLE approvals (
    id              TEXT PRIMARY KEY,
    namespace       TEXT NOT NULL,
    deployment      TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    task_id         TEXT,
    call_id         TEXT,
    tool            TEXT NOT NULL,
    arguments       TEXT NOT NULL,        -- redacted before it is written
    args_hash       TEXT NOT NULL,
    requested_by    TEXT,
    state           TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'approved', 'denied', 'expired')),
    decided_by      TEXT,
    decided_ms      INTEGER,
    note            TEXT,
    created_ms      INTEGER NOT NULL
);
CREATE UNIQUE INDEX approvals_one_pending ON approvals(run_id, tool, args_hash) WHERE state = 'pending';
CREATE INDEX approvals_namespace_state ON approvals(namespace, state, created_ms);

-- API, Nest and webhook tokens. Only a hash of the secret is stored.
CREATE TABLE tokens (
    id              TEXT PRIMARY KEY,
    name            TEXT,
    kind            TEXT NOT NULL DEFAULT 'api' CHECK (kind IN ('api', 'nest', 'webhook', 'join')),
    hash            TEXT NOT NULL UNIQUE,
    scopes          TEXT NOT NULL DEFAULT '[]',
    namespaces      TEXT NOT NULL DEFAULT '[]',   -- empty = every namespace
    trust           TEXT NOT NULL DEFAULT 'trusted',
    subject         TEXT,                         -- nest id / deployment id + trigger for webhook secrets
    created_ms      INTEGER NOT NULL,
    expires_ms      INTEGER,
    revoked_ms      INTEGER,
    last_used_ms    INTEGER
);

-- Agent -> Session -> Conversation -> Run -> Span.
CREATE TABLE sessions (
    id            TEXT PRIMARY KEY,
    namespace     TEXT NOT NULL,
    deployment    TEXT NOT NULL,
    key           TEXT,
    created_ms    INTEGER NOT NULL,
    updated_ms    INTEGER NOT NULL
);
CREATE UNIQUE INDEX sessions_key ON sessions(namespace, deployment, key) WHERE key IS NOT NULL;

CREATE TABLE conversations (
    id                   TEXT PRIMARY KEY,
    session_id           TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    namespace            TEXT NOT NULL,
    deployment           TEXT NOT NULL,
    key                  TEXT,
    summary              TEXT,
    summarized_through   INTEGER NOT NULL DEFAULT 0,
    next_seq             INTEGER NOT NULL DEFAULT 1,
    created_ms           INTEGER NOT NULL,
    updated_ms           INTEGER NOT NULL
);
CREATE UNIQUE INDEX conversations_key ON conversations(namespace, deployment, key) WHERE key IS NOT NULL;

CREATE TABLE runs (
    id                TEXT PRIMARY KEY,
    namespace         TEXT NOT NULL,
    deployment        TEXT NOT NULL,
    task_id           TEXT UNIQUE,               -- a task maps to at most one run
    session_id        TEXT NOT NULL,
    conversation_id   TEXT NOT NULL REFERENCES conversations(id),
    parent_run_id     TEXT,
    root_run_id       TEXT NOT NULL,
    trace_id          TEXT NOT NULL,
    span_id           TEXT,                      -- the run's top-level span
    status            TEXT NOT NULL CHECK (status IN
                        ('running', 'waiting_approval', 'succeeded', 'failed', 'cancelled')),
    outcome           TEXT,                      -- {status, reason, summary, data, artifacts}
    input             TEXT,
    owner             TEXT,
    epoch             INTEGER NOT NULL DEFAULT 1,
    turns             INTEGER NOT NULL DEFAULT 0,
    labels            TEXT NOT NULL DEFAULT '{}',
    trust             TEXT NOT NULL DEFAULT 'trusted',
    source            TEXT NOT NULL DEFAULT 'api',
    requested_by      TEXT,
    model             TEXT,
    input_tokens      INTEGER NOT NULL DEFAULT 0,
    output_tokens     INTEGER NOT NULL DEFAULT 0,
    cached_tokens     INTEGER NOT NULL DEFAULT 0,
    cost_usd          REAL NOT NULL DEFAULT 0,
    started_ms        INTEGER NOT NULL,
    updated_ms        INTEGER NOT NULL,
    finished_ms       INTEGER
);
-- A conversation has at most one unfinished run.
CREATE UNIQUE INDEX runs_one_open_per_conversation ON runs(conversation_id) WHERE finished_ms IS NULL;
CREATE INDEX runs_namespace_started ON runs(namespace, started_ms);
CREATE INDEX runs_deployment_started ON runs(namespace, deployment, started_ms);
CREATE INDEX runs_root ON runs(root_run_id);

CREATE TABLE messages (
    id                TEXT PRIMARY KEY,
    conversation_id   TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    run_id            TEXT NOT NULL,
    seq               INTEGER NOT NULL,
    turn              INTEGER NOT NULL DEFAULT 0,
    role              TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content           TEXT,
    tool_calls        TEXT,                      -- [{id, name, arguments}]
    tool_call_id      TEXT,
    name              TEXT,                      -- tool name for role=tool
    is_error          INTEGER NOT NULL DEFAULT 0,
    model             TEXT,                      -- the model that served an assistant message
    usage             TEXT,
    raw               TEXT,                      -- provider response JSON (redacted)
    created_ms        INTEGER NOT NULL,
    UNIQUE (conversation_id, seq)
);
CREATE INDEX messages_run ON messages(run_id, seq);

CREATE TABLE spans (
    id            TEXT PRIMARY KEY,
    trace_id      TEXT NOT NULL,
    parent_id     TEXT,
    run_id        TEXT,
    task_id       TEXT,
    namespace     TEXT NOT NULL,
    deployment    TEXT,
    name          TEXT NOT NULL,                 -- agen.run, gen_ai.chat, agen.tool, ...
    status        TEXT NOT NULL CHECK (status IN ('unfinished', 'ok', 'error', 'interrupted', 'cancelled')),
    attrs         TEXT NOT NULL DEFAULT '{}',
    error         TEXT,                          -- redacted, at most 1000 characters
    started_ms    INTEGER NOT NULL,
    ended_ms      INTEGER
);
CREATE INDEX spans_trace ON spans(trace_id, started_ms);
CREATE INDEX spans_run ON spans(run_id, started_ms);

-- Effect ledger: side-effecting tool calls, recorded started before and completed after they run.
CREATE TABLE effects (
    run_id          TEXT NOT NULL,
    key             TEXT NOT NULL,               -- <run>.<turn>.<call> or the tool's idempotency key
    tool            TEXT NOT NULL,
    call_id         TEXT,
    state           TEXT NOT NULL CHECK (state IN ('started', 'completed', 'failed')),
    result          TEXT,
    epoch           INTEGER NOT NULL,
    started_ms      INTEGER NOT NULL,
    completed_ms    INTEGER,
    PRIMARY KEY (run_id, key)
);

-- One row per model call's usage, for budgets (per run, per deployment per UTC day, per label).
CREATE TABLE usage (
    id                    TEXT PRIMARY KEY,
    run_id                TEXT NOT NULL,
    task_id               TEXT,
    namespace             TEXT NOT NULL,
    deployment            TEXT NOT NULL,
    provider              TEXT,
    model                 TEXT,
    input_tokens          INTEGER NOT NULL DEFAULT 0,
    output_tokens         INTEGER NOT NULL DEFAULT 0,
    cached_input_tokens   INTEGER NOT NULL DEFAULT 0,
    cost_usd              REAL,
    day                   TEXT NOT NULL,         -- UTC day the run started, YYYY-MM-DD
    created_ms            INTEGER NOT NULL
);
CREATE INDEX usage_deployment_day ON usage(namespace, deployment, day);
CREATE INDEX usage_run ON usage(run_id);

-- A provider account held after an account error (seed 000 §8).
CREATE TABLE provider_holds (
    account          TEXT PRIMARY KEY,           -- <namespace>/<provider>:<key secret>[@<baseUrl>]
    namespace        TEXT NOT NULL,
    provider         TEXT NOT NULL,
    reason           TEXT NOT NULL,
    held_since_ms    INTEGER NOT NULL,
    retry_at_ms      INTEGER NOT NULL,
    backoff_ms       INTEGER NOT NULL,
    probe_task_id    TEXT,
    resumed_ms       INTEGER
);

-- The event log. seq is assigned by the single writer, so seq order is commit order.
CREATE TABLE events (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    id            TEXT NOT NULL,             -- a ULID (unique by construction; seq is the identity)
    namespace     TEXT NOT NULL,
    type          TEXT NOT NULL,
    severity      TEXT NOT NULL DEFAULT 'info' CHECK (severity IN ('info', 'warning', 'critical')),
    deployment    TEXT,
    task_id       TEXT,
    run_id        TEXT,
    labels        TEXT NOT NULL DEFAULT '{}',
    data          TEXT NOT NULL DEFAULT '{}',
    dedupe_key    TEXT,
    created_ms    INTEGER NOT NULL
);
CREATE INDEX events_namespace_seq ON events(namespace, seq);
-- Only the few events that carry a dedupe key pay for this index (every state change writes an event).
CREATE UNIQUE INDEX events_dedupe ON events(dedupe_key) WHERE dedupe_key IS NOT NULL;

-- The deployment log: instance starts, failures, exits, task releases, lease expiries.
CREATE TABLE deployment_logs (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace       TEXT NOT NULL,
    deployment      TEXT NOT NULL,
    instance_id     TEXT,
    level           TEXT NOT NULL DEFAULT 'info',
    message         TEXT NOT NULL,
    created_ms      INTEGER NOT NULL
);
CREATE INDEX deployment_logs_deployment ON deployment_logs(namespace, deployment, seq);

-- Leader leases (name='hub-leader'): taking over an expired lease increments epoch.
CREATE TABLE leases (
    name          TEXT PRIMARY KEY,
    holder        TEXT NOT NULL,
    epoch         INTEGER NOT NULL,
    expires_ms    INTEGER NOT NULL
);
